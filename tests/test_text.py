"""The one sanitiser (runner/core/text.py) behind every output, and counted words (runner/core/words.py).

Every preset an output uses (the console's log line, the JUnit body, message and attribute, the
markdown cell, the GitHub output value, the emulator's quotes) drops the same characters; what differs
is only what line breaks become and how long the text may be.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from outcome_factory import STARTED, error_group, outcome, result, session

from runner.checks.analysis.by_message import analyse
from runner.ci.common import flat
from runner.ci.console import Console
from runner.core.text import for_line, sanitize
from runner.core.words import counted, plural, span
from runner.job.digest import digest
from runner.job.events import ResultFinished, Where
from runner.job.outcome import Outcome, ResultOutcome
from runner.job.policy import Gate
from runner.job.rerun import cannot_rerun
from runner.job.run import judge
from runner.reports import render_markdown
from runner.reports.junit import _attr
from runner.reports.markdown import escape_cell
from runner.reports.text import clean, one_line

# What no output may show: C0 controls but tab/LF/CR, DEL, C1, bidi controls and marks, lone
# surrogates, the non-characters U+FFFE/U+FFFF.
DROPPED = (
    {chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"}
    | {chr(c) for c in range(0x7F, 0xA0)}
    | set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufffe\uffff")
    | {chr(c) for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF)}  # lone surrogates
)
BREAKS = set("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
ONE_LINE: dict[str, Callable[[str], str]] = {
    "console for_line": for_line,
    "JUnit message one_line": one_line,
    "JUnit attribute": _attr,
    "GitHub output flat": flat,
    "markdown cell": escape_cell,
    "emulator analysis": lambda text: " ".join(
        getattr(analyse(text, text, text)[0], field) for field in ("userImpact", "rootCause")
    ),
}
PRESETS: dict[str, Callable[[str], str]] = {**ONE_LINE, "JUnit/markdown body clean": clean}

PIECES = sorted(DROPPED | BREAKS | {"\t", " ", "::", "\x1b[31m", "\x1b]8;;http://x\x07", "\x9b1m"})
hostile = st.lists(st.one_of(st.sampled_from(PIECES), st.characters(codec="utf-8")), max_size=60).map("".join)


@pytest.mark.parametrize("name", PRESETS)
@settings(max_examples=examples(60), deadline=None)
@given(text=hostile)
def test_every_output_drops_the_same_characters(name: str, text: str) -> None:
    shown = PRESETS[name](text)
    assert not set(shown) & DROPPED, name
    shown.encode("utf-8")  # never raises: no surrogate left
    if name in ONE_LINE:
        assert not set(shown) & (BREAKS | {"\t"}), name


def test_line_breaks_per_option() -> None:
    text = "  a\r\nb\u2028c\x0bd\te\x85f  "
    assert sanitize(text, limit=100, lines="keep") == "  a\nb\nc\nd\te\nf  "
    assert sanitize(text, limit=100, lines="join") == "a b c d e f"
    assert sanitize("\n \n  first\u2028same\x0cline\nsecond", limit=100, lines="first") == "first same line"
    assert sanitize("red \x1b[31mERROR\x1b[0m \u202eevil\u202c", limit=100) == "red ERROR evil"


def test_only_a_log_line_shifts_a_ci_command() -> None:
    assert for_line("\n::add-mask::secret") == "\u00b7::add-mask::secret"
    assert for_line("section_start:1:x") == "\u00b7section_start:1:x"
    assert sanitize("::notice::x", limit=100) == "::notice::x"


def test_limits_and_cut_marks() -> None:
    assert for_line("x" * 5000, 100) == "x" * 99 + "…"
    assert one_line("y" * 5000, 50) == "y" * 49 + "…"
    assert clean("z" * 5000, 100) == "z" * 100 + "\n[... truncated 4900 characters]"
    runaway = "w" * 10_000_000
    assert len(for_line(runaway, 100)) == 100
    assert clean(runaway, 10).endswith("[... truncated 9999990 characters]")


def test_a_lone_surrogate_in_a_check_name_does_not_silence_the_console() -> None:
    """A UTF-8 stdout refuses a lone surrogate; the console would go quiet for the rest of the run."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    console = Console(stream=stream, environ={"NO_COLOR": "1"})
    bad = ResultOutcome(id="r1", name="Check\ud800out", status="PASSED", verdict="passed", runLocation="eu")
    console.notify(ResultFinished(Where("s", "eu"), bad))
    console.always("still talking")
    assert not console.broken
    lines = raw.getvalue().decode("utf-8").splitlines()
    assert lines == ["  PASSED         Checkout (eu)", "still talking"]


def test_counted_words() -> None:
    assert [counted(n, "check") for n in (0, 1, 2)] == ["0 checks", "1 check", "2 checks"]
    assert counted(2, "root cause analysis") == "2 root cause analyses"
    assert counted(1, "known failure") == "1 known failure" and plural(3, "is") == "are"
    assert plural(2, "It", "They") == "They"
    assert [span(s) for s in (0, 0.4, 1, 59, 60, 3599, 3600, 86400 * 3 + 5)] == [
        "0 seconds",
        "0 seconds",
        "1 second",
        "59 seconds",
        "1 minute",
        "59 minutes",
        "1 hour",
        "3 days",
    ]


def test_counted_words_in_the_headline_the_rerun_refusal_and_the_forgiven_note() -> None:
    """The texts built with counted/plural read right for one and for two (no "1 checks")."""

    def run(verdicts: list[str], **fields: object) -> Outcome:
        names = ("Checkout API", "Home page")
        return outcome([session([result(v, names[i]) for i, v in enumerate(verdicts)])], **fields)

    assert digest(run(["passed"])).summary == "the 1 check passed"
    assert digest(run(["passed", "passed"])).summary == "all 2 checks passed"
    assert digest(run(["failed"])).summary == "the 1 check failed the gate (1 failed)"
    assert digest(run(["failed", "passed"])).summary == "1 of 2 checks failed the gate (1 failed)"
    for verdicts, seen in ((["passed"], "the 1 check read"), (["passed"] * 2, "the 2 checks read")):
        unexplained = run(verdicts, exitCode=4, verdict="service-error")
        assert digest(unexplained).summary == f"{seen} passed, but that is no verdict (exit code 4)"
    unmatched = [session([], location=where, noMatch=True) for where in ("us-east-1", "eu-west-1")]
    assert digest(outcome(unmatched[:1], verdict="no-match")).summary == (
        "no check matched the target of the session"
    )
    no_match = outcome([unmatched[0], session([result("passed")], location="eu-west-1")], verdict="no-match")
    assert digest(no_match).summary == "no check matched the target of 1 of 2 sessions"

    for count, words in (
        (1, "1 failing result names no check id, so a rerun cannot target it"),
        (2, "2 failing results name no check id, so a rerun cannot target them"),
    ):
        # Beside one that can be run again: the session itself is rerunnable.
        failed = [result("failed", f"Check {n}", checkId=None) for n in range(count)] + [result("error")]
        assert cannot_rerun(outcome([session(failed)])) == words

    known = error_group("eg-known").model_copy(update={"firstSeen": STARTED - timedelta(days=3)})
    for count, these, they in ((1, "this known failure", "It is"), (2, "these 2 known failures", "They are")):
        failed = [result("failed", f"Check {n}", group_ids=["eg-known"]) for n in range(count)]
        md = render_markdown(judge(outcome([session(failed, [known])]), Gate(fail_on="new")))
        assert (
            f"(failOn: new):** {these} already failed before this build and did not fail it. {they} listed"
            in md
        )
