"""Every output tells the same verdict: each verdict, under each gate option, through every front end.

A run's sessions are judged by `runner.job.run.judge` (the one path to a verdict), then rendered by
every output a user reads: the exit code, results.json, the console's verdict line, the markdown
headline, the JUnit counts, the GitHub outputs and the GitLab dotenv. A result that fails the gate
must fail in all of them, and one that does not must fail in none. And a failure is new, known or
"cannot be told" alike in each of them, counted the same (the digest's one decision).
"""

from __future__ import annotations

import io
import itertools
import json
import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from typing import Any

import pytest
from outcome_factory import STARTED, error_group, outcome, result, session

from runner.ci import github, gitlab
from runner.ci.comment_body import render_body
from runner.ci.console import Console
from runner.job.digest import digest
from runner.job.outcome import Outcome
from runner.job.policy import Gate, forgiven, junit_kind, result_fails
from runner.job.run import judge
from runner.reports import render_json, render_junit, render_markdown

VERDICTS = ("passed", "failed", "degraded", "flaky", "error", "cancelled", "running")
# A failure's error group first seen before the session started (known), in it (new), or unread.
HISTORIES = ("known", "new", "unread")


def draft(verdict: str, history: str) -> Outcome:
    group = error_group("grp-1")
    if history == "known":
        group = group.model_copy(update={"firstSeen": STARTED - timedelta(days=3)})
    elif history == "new":
        group = group.model_copy(update={"firstSeen": STARTED + timedelta(seconds=5)})
    groups = [group] if history != "unread" else []
    one = result(verdict, group_ids=["grp-1"] if verdict != "passed" else [])
    return outcome([session([one], groups)])


CASES = [
    pytest.param(verdict, degraded, fail_on, history, id=f"{verdict}-{degraded=}-{fail_on}-{history}")
    for verdict, degraded, fail_on, history in itertools.product(
        VERDICTS, (False, True), ("any", "new"), HISTORIES
    )
]


def outputs(judged: Outcome) -> dict[str, Any]:
    d = digest(judged)
    stream = io.StringIO()
    Console(stream=stream, environ={"NO_COLOR": "1"}).finish(d, {})
    junit = ET.fromstring(render_junit(judged).split("\n", 1)[1])
    return {
        "console": stream.getvalue().splitlines()[-1],
        "markdown": render_markdown(judged).splitlines()[0],
        "junit": (int(junit.get("failures") or 0), int(junit.get("errors") or 0)),
        "junit_skipped": sum(int(s.get("skipped") or 0) for s in junit.iter("testsuite")),
        "json": json.loads(render_json(judged)),
        "github": github.outputs(d, {}),
        "gitlab": gitlab.dotenv_values(d),
    }


@pytest.mark.parametrize(("verdict", "fail_on_degraded", "fail_on", "history"), CASES)
def test_every_output_agrees(verdict: str, fail_on_degraded: bool, fail_on: str, history: str) -> None:
    gate = Gate(fail_on_degraded=fail_on_degraded, fail_on=fail_on)  # type: ignore[arg-type]
    judged = judge(draft(verdict, history), gate)
    (judged_result,) = judged.all_results()
    fails = result_fails(judged_result, gate)
    out = outputs(judged)

    # The policy's own rules, spelled out once more as a user reads them.
    if verdict in ("error", "cancelled", "running"):
        assert fails, "errors, cancelled and unfinished checks always fail the gate"
    if verdict in ("passed", "flaky"):
        assert not fails
    if verdict == "degraded":
        assert fails == fail_on_degraded
    if verdict == "failed":
        assert fails == (fail_on == "any" or history != "known")

    code = 1 if fails else 0
    word = "failed" if fails else "passed"
    assert judged.exitCode == code and judged.verdict == word
    assert out["json"]["exitCode"] == code and out["json"]["verdict"] == word
    assert out["console"].startswith(f"verdict: {word.upper()} — ")
    assert out["markdown"].startswith("## ❌ Failed" if fails else "## ✅ Passed")
    assert ("failed the gate" in out["markdown"]) == fails
    failures, errors = out["junit"]
    assert failures + errors == (1 if fails else 0)
    assert junit_kind(judged_result, gate) in (("failure", "error") if fails else ("passed", "skipped"))
    assert out["junit_skipped"] == (1 if forgiven(judged_result, gate) else 0)
    assert out["github"]["status"] == word and out["github"]["exit-code"] == str(code)
    assert len(json.loads(out["github"]["failed-checks"])) == (1 if fails else 0)
    assert out["gitlab"]["TESTSESSION_STATUS"] == word
    assert out["gitlab"]["TESTSESSION_EXIT_CODE"] == str(code)
    if forgiven(judged_result, gate):
        assert "gate passed: 1 known failure, no new ones" in out["console"]
        assert "gate passed: 1 known failure, no new ones" in out["markdown"]


def test_a_session_cancelled_from_outside_is_red_everywhere() -> None:
    """The case of issue 12: someone pressed Cancel in the service's UI while the pipeline waited."""
    judged = judge(draft("cancelled", "unread"), Gate())
    out = outputs(judged)
    assert judged.exitCode == 1
    assert out["markdown"] == "## ❌ Failed — the 1 check failed the gate (1 cancelled)"
    assert out["junit"] == (0, 1) and out["junit_skipped"] == 0
    assert "all 1 checks passed" not in out["markdown"] + out["console"]


# -- new, known and cannot be told: the same counts and labels in every output ------------------------

NOVELTY_LABELS = {"New": "new", "Known": "known", "New or known": "untold"}  # as each failure is labelled
# "failures: 1 new, 1 known, 1 cannot be told" (console); "**1 new failure** (…) · **1 known** …" (markdown)
CONSOLE_SPLIT = re.compile(r"failures: (\d+) new, (\d+) known(?:, (\d+) cannot be told)?")
SPLIT = re.compile(
    r"(\d+) new failures?\*\* \(in this build\) · \*\*(\d+) known\*\*(?: .*?\*\*(\d+) cannot be told\*\*)?"
)


def three_failures() -> Outcome:
    """Three failed checks: one whose error was first seen before the run (known), one whose error
    was first seen in it (new), one whose error group was never read (cannot be told)."""
    known = error_group("eg-known").model_copy(update={"firstSeen": STARTED - timedelta(days=3)})
    new = error_group("eg-new").model_copy(update={"firstSeen": STARTED + timedelta(seconds=5)})
    results = [
        result("failed", "Known check", group_ids=["eg-known"]),
        result("failed", "New check", group_ids=["eg-new"]),
        result("failed", "Untold check", group_ids=["eg-unread"]),
        result("passed", "Home page"),
    ]
    return outcome([session(results, [known, new])])


def split_of(text: str, pattern: re.Pattern[str]) -> dict[str, int]:
    match = pattern.search(text)
    assert match, text
    new, known, untold = match.groups()
    return {"new": int(new), "known": int(known), "untold": int(untold or 0)}


@pytest.mark.parametrize("fail_on", ["any", "new"])
def test_new_known_and_untold_failures_are_counted_alike_everywhere(fail_on: str) -> None:
    judged = judge(three_failures(), Gate(fail_on=fail_on))  # type: ignore[arg-type]
    d = digest(judged)
    stream = io.StringIO()
    Console(stream=stream, environ={"NO_COLOR": "1"}).finish(d, {})
    console = stream.getvalue()
    markdown = render_markdown(judged)
    body, cut = render_body(judged, "spec@main", platform="GitHub", max_chars=65536, run_url=None)
    junit = ET.fromstring(render_junit(judged).split("\n", 1)[1])
    results = json.loads(render_json(judged))["sessions"][0]["results"]
    expected = {"new": 1, "known": 1, "untold": 1}
    by_name = {"New check": "new", "Known check": "known", "Untold check": "untold"}

    # The counts: the console's line, the markdown's and the comment's (the markdown, posted).
    assert split_of(console, CONSOLE_SPLIT) == expected
    assert split_of(markdown, SPLIT) == expected
    assert not cut and split_of(body, SPLIT) == expected

    # Each failure's label: the markdown's, the comment's and the JUnit's, per check.
    for text in (markdown, body):
        labels = re.findall(r"\*\*(New|Known|New or known):\*\* ", text)
        assert sorted(NOVELTY_LABELS[label] for label in labels) == sorted(by_name.values())
    junit_labels = {}
    for case in junit.iter("testcase"):
        text = case.findtext("failure") or case.findtext("skipped") or ""
        label = re.search(r"^(New failure|Known failure|New or known): ", text, re.MULTILINE)
        if label:
            junit_labels[case.get("name", "").split(" [")[0]] = label.group(1)
    assert junit_labels == {
        "New check": "New failure",
        "Known check": "Known failure",
        "Untold check": "New or known",
    }
    # results.json: known true, false, or null where it cannot be told (no baseline here).
    known = {r["name"]: r["known"] for r in results if r["verdict"] == "failed"}
    assert known == {"New check": False, "Known check": True, "Untold check": None}

    # The console's details of each failure that fails the gate (failOn: new forgives the known one).
    assert "  new: its error was first seen in this run" in console
    assert "  new or known: cannot be told" in console
    assert ("  known: its error was first seen 3 days before this run" in console) == (fail_on == "any")
    # The CI outputs count what is not known as new, as documented (action.yml: new-failures).
    values = github.outputs(d, {})
    assert (values["new-failures"], values["known-failures"]) == ("2", "1")
    failed = {c["name"]: c["known"] for c in json.loads(values["failed-checks"])}
    forgiven_known = {} if fail_on == "new" else {"Known check": True}
    assert failed == {"New check": False, "Untold check": None} | forgiven_known


@pytest.mark.parametrize("verdict", VERDICTS)
@pytest.mark.parametrize("fail_on_degraded", [False, True])
def test_a_quarantined_check_fails_no_output_whatever_its_verdict(
    verdict: str, fail_on_degraded: bool
) -> None:
    """Issue 43: a check quarantined (an entry that holds today) runs as always; no output fails on
    it, and a reader of the JUnit counts its failure as skipped, never as passed."""
    from datetime import date

    from runner.job.outcome import QuarantineOutcome
    from runner.job.quarantine import Quarantine

    held = QuarantineOutcome(owner="@team", reason="flaps", until=date(2026, 12, 15))
    gate = Gate(fail_on_degraded=fail_on_degraded)
    judged = judge(draft(verdict, "new"), gate, quarantine=Quarantine({"Checkout API": held}))
    (judged_result,) = judged.all_results()
    out = outputs(judged)
    failing = verdict in ("failed", "error", "cancelled", "running") or (
        verdict == "degraded" and fail_on_degraded
    )
    assert not result_fails(judged_result, gate)
    assert judged.exitCode == 0 and out["json"]["verdict"] == "passed"
    assert out["json"]["sessions"][0]["results"][0]["quarantined"]["owner"] == "@team"
    assert out["junit"] == (0, 0) and out["junit_skipped"] == (1 if failing else 0)
    assert junit_kind(judged_result, gate) == ("skipped" if failing else "passed")
    assert json.loads(out["github"]["failed-checks"]) == []
    assert out["gitlab"]["TESTSESSION_EXIT_CODE"] == "0"
    said = "gate passed: 1 quarantined check failed"
    assert (said in out["console"]) == failing and (said in out["markdown"]) == failing
