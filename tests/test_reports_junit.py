"""JUnit report: valid against junit-10.xsd and read right by the consumers of consumers.md."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from helpers import valid_junit
from outcome_factory import (
    big_outcome,
    error_group,
    outcome,
    result,
    sample_outcome,
    session,
    unavailable_analysis,
)

from runner.job.outcome import AnalysisOutcome, Outcome
from runner.reports import render_junit, render_markdown
from runner.reports.junit import MIN_TEXT

VERDICTS = ("passed", "failed", "degraded", "flaky", "error", "cancelled", "running")
TIME = re.compile(r"^\d+\.\d{3}$")


def one_case(verdict: str, **kwargs: Any) -> ET.Element:
    out = outcome([session([result(verdict, group_ids=["eg-1"])], [error_group("eg-1")])], **kwargs)
    root = valid_junit(render_junit(out))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1
    return cases[0]


def test_sample_validates_with_totals() -> None:
    root = valid_junit(render_junit(sample_outcome()))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("time")) == (
        "14",
        "2",
        "4",  # 2 errors and 2 cancelled: both fail the gate, so both are errors
        "61.250",
    )
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["Deploy checks [us-east-1]", "Deploy checks [eu-west-1]"]
    assert [s.get("skipped") for s in suites] == ["0", "0"]
    assert suites[0].get("timestamp") == "2024-05-17T12:00:00+00:00"


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("fail_on_degraded", [False, True])
def test_every_verdict_validates(verdict: str, fail_on_degraded: bool) -> None:
    case = one_case(verdict, fail_on_degraded=fail_on_degraded)
    children = [child.tag for child in case]
    expected = {
        "passed": [],
        "failed": ["failure"],
        "error": ["error"],
        "running": ["error"],
        "cancelled": ["error"],
        "flaky": ["flakyFailure", "flakyFailure", "system-out"],
        "degraded": ["failure"] if fail_on_degraded else ["system-out"],
    }[verdict]
    assert children == expected


def test_failure_carries_error_analysis_and_link() -> None:
    failure = one_case("failed").find("failure")
    assert failure is not None
    # The analysis' classification, an upper-case word GitLab's reader leaves alone.
    assert failure.get("type") == "BACKEND_ERROR"
    assert failure.get("message") == "Error: expect(received).toBe(expected)"
    text = failure.text or ""
    assert text.startswith("Error: expect(received)")  # dorny shows the start of the first text
    for part in (
        "Classification: BACKEND_ERROR",
        "Root cause: The payment service returns 503",
        "User impact: Customers cannot finish checkout",
        "Code fix:\nRaise `maxPoolSize`",
        "- The HAR shows POST /api/pay",
        "network.har (HAR)",
        "- Connection pools: https://app.example.test/docs/pools",
        "Result: https://app.example.test/results/",
    ):
        assert part in text


def test_failure_without_analysis_or_classification_is_typed_failed() -> None:
    out = outcome([session([result("failed", error="boom")])])
    failure = valid_junit(render_junit(out)).find("./testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("type") == "FAILED"
    assert failure.get("message") == "boom"


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("unavailable", "Root cause analysis unavailable: 402 Payment Required"),
        ("pending", "Root cause analysis pending: the analysis had not finished"),
        ("timeout", "Root cause analysis timed out: no result within 120 s"),
        ("error", "Root cause analysis failed: 500 Internal Server Error"),
        ("skipped", "Root cause analysis skipped: --no-analysis"),
        ("disabled", "Root cause analysis disabled: analyses are turned off"),
    ],
)
def test_analysis_states_are_named(state: str, words: str) -> None:
    group = error_group("eg-9", analysis=unavailable_analysis(state))
    out = outcome([session([result("failed", group_ids=["eg-9"])], [group])])
    failure = valid_junit(render_junit(out)).find("./testsuite/testcase/failure")
    assert failure is not None
    assert words in (failure.text or "")


@pytest.mark.parametrize(
    ("analysis", "state", "words"),
    [
        (
            AnalysisOutcome(state="completed", id="rca-empty"),  # the service answered without content
            "unavailable",
            "Root cause analysis unavailable: the analysis came back empty",
        ),
        (None, "none", "Root cause analysis unavailable: no analysis for this error group"),
        (unavailable_analysis("timeout"), "timeout", "Root cause analysis timed out: no result within 120 s"),
    ],
)
def test_junit_and_markdown_say_the_same_of_a_missing_analysis(
    analysis: AnalysisOutcome | None, state: str, words: str
) -> None:
    group = error_group("eg-9").model_copy(update={"analysis": analysis})
    failed = [result("failed", f"Check {n}", group_ids=["eg-9"]) for n in range(2)]
    out = outcome([session(failed, [group])])
    texts = [f.text or "" for f in valid_junit(render_junit(out)).iter("failure")]
    assert len(texts) == 2 and all(words in text for text in texts)
    md = render_markdown(out)
    assert md.count(words) == 1  # said once, where the group is first shown
    assert f"see error group eg-9 above (no analysis: {state})" in md


def test_error_and_running_are_errors() -> None:
    error = one_case("error").find("error")
    assert error is not None and error.get("type") == "ERROR"
    assert "browser process exited" in (error.text or "")
    out = outcome(
        [session([result("running")])], partial=True, message="deadline of 600 s passed; session cancelled"
    )
    running = valid_junit(render_junit(out)).find("./testsuite/testcase/error")
    assert running is not None
    assert running.get("type") == "DID_NOT_FINISH"
    why = "deadline of 600 s passed; session cancelled"
    assert running.get("message") == f"did not finish (status RUNNING): {why}"


def test_cancelled_fails_the_gate_so_it_is_an_error_never_a_skip() -> None:
    case = one_case("cancelled")
    error = case.find("error")
    assert case.find("skipped") is None
    assert error is not None and error.get("type") == "CANCELLED"
    assert error.get("message") == "cancelled (status CANCELLED)"
    assert "cancelled before this check finished" in (error.text or "")


def test_flaky_passes_with_one_flaky_failure_per_attempt() -> None:
    case = one_case("flaky")
    flaky = case.findall("flakyFailure")
    assert len(flaky) == 2
    for index, element in enumerate(flaky, start=1):
        assert element.get("type") == "FAILED"
        assert element.get("message", "").startswith(f"attempt {index}: TimeoutError")
        assert "Timeout 30000ms exceeded" in (element.findtext("stackTrace") or "")
    assert case.find("failure") is None and case.find("error") is None
    assert "flaky: passed on attempt 3 after 2 failed attempts" in (case.findtext("system-out") or "")


def test_flaky_without_attempt_details_still_counts_as_flaky() -> None:
    out = outcome([session([result("flaky", failedAttempts=[], attempts=2)])])
    flaky = valid_junit(render_junit(out)).findall("./testsuite/testcase/flakyFailure")
    assert [(f.get("type"), f.get("message")) for f in flaky] == [("FAILED", "1 earlier attempt failed")]


def test_degraded_passes_with_note_unless_fail_on_degraded() -> None:
    case = one_case("degraded")
    assert (case.findtext("system-out") or "").startswith("degraded: Response time 4200 ms")
    failing = one_case("degraded", fail_on_degraded=True)
    failure = failing.find("failure")
    assert failure is not None and failure.get("type") == "DEGRADED"
    root = valid_junit(render_junit(sample_outcome(fail_on_degraded=True)))
    assert root.get("failures") == "4"


def test_properties_only_non_empty() -> None:
    root = valid_junit(render_junit(sample_outcome()))
    props = {p.get("name"): p.get("value") for p in root.findall("./testsuite[1]/properties/property")}
    assert props == {
        "testSessionId": "ts-us-east-1",
        "link": "https://app.example.test/test-sessions/ts-us-east-1",
        "runLocation": "us-east-1",
        "environment": "staging",
        "commitId": "3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
        "branchName": "feature/checkout",
    }
    bare = outcome([session([result("passed")], testSessionId=None, link=None, environment=None)])
    bare.commit.commitId = bare.commit.branchName = bare.commit.environment = None
    names = [p.get("name") for p in valid_junit(render_junit(bare)).iter("property")]
    assert names == ["runLocation"]


def test_names_distinct_per_location_and_deduplicated() -> None:
    root = valid_junit(render_junit(sample_outcome()))
    keys = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert len(keys) == len(set(keys)) == 14
    assert ("Deploy checks", "Checkout API [us-east-1]") in keys
    assert ("Deploy checks", "Checkout API [eu-west-1]") in keys
    twins = [result("passed", "Same", result_id=f"abcdef12-{n}") for n in range(3)]
    names = [c.get("name") for c in valid_junit(render_junit(outcome([session(twins)]))).iter("testcase")]
    assert names == ["Same [us-east-1]", "Same [us-east-1] #abcdef12", "Same [us-east-1] #abcdef12-2"]


def test_classname_falls_back_to_location() -> None:
    out = outcome([session([result("passed")], name="")])
    case = valid_junit(render_junit(out)).find("./testsuite/testcase")
    assert case is not None and case.get("classname") == "testsession.us-east-1"


def test_time_on_every_suite_and_case() -> None:
    results = [
        result("passed", "a", duration=None),
        result("passed", "b", duration=1.23456),
        result("passed", "c", duration=float("nan")),
        result("passed", "d", duration=-3),
        result("passed", "e", duration=float("inf")),
    ]
    out = outcome([session(results, durationSeconds=None)], startedAt=None)
    root = valid_junit(render_junit(out))
    times = [e.get("time") for e in root.iter() if e.tag in ("testsuites", "testsuite", "testcase")]
    assert all(t is not None and TIME.match(t) for t in times), times
    assert [c.get("time") for c in root.iter("testcase")] == ["0.000", "1.235", "0.000", "0.000", "0.000"]


def test_bad_characters_and_ansi_removed() -> None:
    nasty = "red \x1b[31mERROR\x1b[0m nul\x00 bell\x07 \ud800lone \ufffe\uffff end \x1b]8;;http://x\x07link"
    out = outcome(
        [session([result("failed", "check\x01 \ud83d name", error=nasty)], name="s\x0bess")],
    )
    xml = render_junit(out)
    xml.encode("utf-8")  # would raise on a lone surrogate
    case = valid_junit(xml).find("./testsuite/testcase")
    assert case is not None
    assert case.get("name") == "check  name [us-east-1]"
    assert case.get("classname") == "s ess"  # VT is a line break (str.splitlines): a space on one line
    text = case.findtext("failure") or ""
    assert text.startswith("red ERROR nul bell lone  end link")


def test_huge_texts_are_capped_with_notice() -> None:
    out = outcome([session([result("failed", error="x" * 1_000_000)])])
    xml = render_junit(out)
    assert len(xml) < 100_000
    text = valid_junit(xml).findtext("./testsuite/testcase/failure") or ""
    assert re.search(r"\[\.\.\. truncated \d+ characters\]", text)


def test_many_failures_share_a_size_budget() -> None:
    big = big_outcome(2_000)
    for s in big.sessions:
        for r in s.results:
            if r.verdict == "failed":
                r.error = "y" * 200_000
    xml = render_junit(big)
    root = ET.fromstring(xml.encode("utf-8"))
    failures = root.findall(".//failure")
    assert failures
    assert all(len(f.text or "") < 70 * 1024 for f in failures)
    assert len(xml) < 30 * 1024 * 1024  # GitLab's limit per report
    assert MIN_TEXT <= 64 * 1024


def test_session_problem_becomes_an_error_case() -> None:
    broken = session(
        [], name="Deploy checks", location="eu-west-1", status=None, exitCode=4, problem="503 from trigger"
    )
    out = outcome([session([result("passed")]), broken], verdict="service-error", exitCode=4)
    root = valid_junit(render_junit(out))
    suite = root.findall("testsuite")[1]
    assert suite.get("errors") == "1" and suite.get("tests") == "1"
    error = suite.find("./testcase/error")
    assert error is not None and error.get("type") == "SESSION"
    assert error.get("message") == "503 from trigger"
    assert suite.findtext("system-err") == "503 from trigger"


def test_empty_outcome_validates() -> None:
    root = valid_junit(render_junit(Outcome()))
    assert (root.get("tests"), root.get("time")) == ("0", "0.000")


# --- issue 16 item 11: JUnit as GitLab (ActiveSupport's Hash.from_xml) and other readers take it ---

# ActiveSupport::XmlMini::PARSING keys plus the ones XMLConverter handles itself ("array", "hash"):
# a `type` attribute equal to one of these converts the element's text, and "yaml"/"symbol" make
# GitLab reject the whole report ("Disallowed type attribute").
ACTIVESUPPORT_TYPES = (
    "symbol", "date", "datetime", "dateTime", "integer", "float", "double", "decimal", "boolean",
    "string", "yaml", "base64Binary", "binary", "file", "array", "hash",
)  # fmt: skip


@pytest.mark.parametrize("value", ACTIVESUPPORT_TYPES)
def test_type_attributes_are_never_an_activesupport_conversion(value: str) -> None:
    group = error_group("eg-1")
    assert group.analysis is not None and group.analysis.analysis is not None
    group.analysis.analysis.classification = value
    flaky = result("flaky", name="Flaky one")
    for attempt in flaky.failedAttempts:
        attempt.status = value
    out = outcome([session([result("failed", group_ids=["eg-1"]), flaky], [group])])
    root = valid_junit(render_junit(out))
    types = [e.get("type") for e in root.iter() if e.get("type") is not None]
    assert len(types) == 3
    assert not set(types) & set(ACTIVESUPPORT_TYPES), types
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == f"testsession.{value}"


def test_degraded_reason_is_in_the_failure_text_with_fail_on_degraded() -> None:
    """GitLab drops the message attribute: the reader must find "degraded" in the text."""
    failure = one_case("degraded", fail_on_degraded=True).find("failure")
    assert failure is not None and failure.get("type") == "DEGRADED"
    text = failure.text or ""
    assert text.startswith("degraded: Response time 4200 ms is above the degraded threshold")


def test_message_is_not_cut_at_unicode_line_separators() -> None:
    error = "TimeoutError\u2028waiting for #pay\u0085after 30 s\u2029on /checkout\nat page.goto (x.js:1)"
    failure = valid_junit(render_junit(outcome([session([result("failed", error=error)])]))).find(
        "./testsuite/testcase/failure"
    )
    assert failure is not None
    assert failure.get("message") == "TimeoutError waiting for #pay after 30 s on /checkout"
    assert (failure.text or "").startswith("TimeoutError\nwaiting for #pay\nafter 30 s\non /checkout\nat")


def test_invisible_controls_and_bidi_overrides_are_removed() -> None:
    name = "Login\u202e nimda\u202c \u2066iso\u2069 del\x7f c1\x80\x9f csi\x9bHello"
    error = "boom\u202e txet\x7f \x9b31mred \x9bHello"
    root = valid_junit(render_junit(outcome([session([result("failed", name, error=error)])])))
    case = root.find("./testsuite/testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None
    texts = [case.get("name") or "", failure.get("message") or "", failure.text or ""]
    bad = set("\x7f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069") | {
        chr(c) for c in range(0x80, 0xA0)
    }
    for text in texts:
        assert not set(text) & bad, repr(text)
    assert case.get("name") == "Login nimda iso del c1 csiHello [us-east-1]"
    assert failure.get("message") == "boom txet red Hello"  # a stray U+009B eats nothing


def test_long_check_name_keeps_its_location() -> None:
    out = outcome(
        [session([result("failed", "x" * 5000, location="eu-west-1"), result("failed", "x" * 5000)])]
    )
    cases = valid_junit(render_junit(out)).findall("./testsuite/testcase")
    names = [c.get("name") or "" for c in cases]
    assert names[0].endswith("… [eu-west-1]") and names[1].endswith("… [us-east-1]")
    assert all(len(n) <= 1000 for n in names)


def test_session_testcase_does_not_count_the_session_time_twice() -> None:
    broken = session([result("passed")], exitCode=4, problem="lost the connection", durationSeconds=42.5)
    root = valid_junit(render_junit(outcome([broken], verdict="service-error", exitCode=4)))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("time") == "42.500"
    times = [float(c.get("time") or "nan") for c in suite.findall("testcase")]
    assert times == [1.5, 0.0]  # the check's own time, and none for the "(session)" case
