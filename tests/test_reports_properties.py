"""Property tests: whatever text the service or the checks send, every report stays readable."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from helpers import examples, junit_xsd_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outcome_factory import error_group, outcome, result, session, unavailable_analysis

from runner.job.outcome import Outcome
from runner.reports import load_outcome, render_json, render_junit, render_markdown

VERDICTS = ("passed", "failed", "degraded", "flaky", "error", "cancelled", "running")
SPECIAL = [
    "\x00", "\x01", "\x08", "\x0b", "\x1b", "\x1b[31m", "\x1b[0m", "\x9b", "\x7f", "\ud800", "\udfff",
    "\ud83d", "\ufffe", "\uffff", "\r", "\r\n", "\t", "|", "`", "```", "<", "</details>", "]]>", "&", '"',
    "😀", "\u202e", "\u0301",
]  # fmt: skip

characters = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),  # lone surrogates
    st.characters(max_codepoint=0x1F),  # control characters
    st.sampled_from(SPECIAL),
)
text = st.one_of(
    st.just(""),
    st.lists(characters, max_size=60).map("".join),
    st.lists(characters, max_size=8).map("".join),
    st.lists(st.sampled_from(SPECIAL), max_size=20).map("".join),
    # a huge string: one run of a character, cheap to generate
    st.tuples(st.sampled_from(["x", "é", "`", "|", "\x00", "😀"]), st.integers(66_000, 150_000)).map(
        lambda pair: pair[0] * pair[1]
    ),
)
durations = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def outcomes(draw: st.DrawFn) -> Outcome:
    sessions = []
    for index in range(draw(st.integers(1, 3))):
        groups = [
            error_group("eg-a", draw(text)),
            error_group("eg-b", draw(text), unavailable_analysis("timeout", draw(text))),
        ]
        analysis = groups[0].analysis
        assert analysis is not None and analysis.analysis is not None
        analysis.analysis.classification = draw(text)
        analysis.analysis.rootCause = draw(text)
        analysis.analysis.codeFix = draw(text)
        analysis.analysis.evidence[0].description = draw(text)  # type: ignore[index]
        results = [
            result(
                draw(st.sampled_from(VERDICTS)),
                draw(text),
                draw(text),
                result_id=draw(text) or f"r{n}",
                error=draw(text),
                group_ids=draw(st.sampled_from([[], ["eg-a"], ["eg-b"], ["eg-a", "eg-b", "eg-missing"]])),
                duration=draw(durations),
                link=draw(st.sampled_from([None, "https://x.test/r", draw(text)])),
            )
            for n in range(draw(st.integers(0, 6)))
        ]
        sessions.append(
            session(
                results,
                groups,
                name=draw(text),
                location=draw(text),
                session_id=f"ts-{index}",
                problem=draw(st.one_of(st.none(), text)),
                exitCode=draw(st.sampled_from([0, 1, 3, 4])),
            )
        )
    built = outcome(sessions, fail_on_degraded=draw(st.booleans()), message=draw(text))
    built.commit.branchName = draw(text)
    return built


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=outcomes())
def test_any_text_gives_valid_junit(data: Outcome) -> None:
    xml = render_junit(data)
    encoded = xml.encode("utf-8")  # no lone surrogate survives
    root = ET.fromstring(encoded)
    assert junit_xsd_errors(xml) == []
    cases = list(root.iter("testcase"))
    assert len(cases) >= sum(len(s.results) for s in data.sessions)
    keys = [(c.get("classname"), c.get("name")) for c in cases]
    assert len(keys) == len(set(keys))


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=outcomes(), max_bytes=st.sampled_from([1_000_000, 50_000, 3_000, 100]))
def test_any_text_gives_markdown_under_the_limit(data: Outcome, max_bytes: int) -> None:
    md = render_markdown(data, max_bytes=max_bytes)
    assert len(md.encode("utf-8")) <= max_bytes
    if max_bytes == 1_000_000:
        assert md.startswith("## ")
        for line in md.splitlines():
            if line.startswith("| ") and "|---" not in line:
                # 7 cells: 8 pipes that are not escaped
                pipes = sum(1 for i, ch in enumerate(line) if ch == "|" and (i == 0 or line[i - 1] != "\\"))
                assert pipes == 8, line


@settings(
    max_examples=examples(10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=outcomes())
def test_any_text_gives_json_that_loads(data: Outcome) -> None:
    text = render_json(data)
    text.encode("utf-8")
    loaded = load_outcome(text, "results.json")
    assert render_json(loaded) == text
