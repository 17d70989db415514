"""One known/new decision: the gate, the JUnit, the markdown and the console say the same of a failure.

The case found in review: a failed check whose error group was first seen in this run (`known:
false`) on a check that was failing in the baseline too (`still-failing`), under `failOn: new`. The
gate forgave it, the JUnit called it "already failing in the baseline", the console printed `[new]`.
Decided once (runner/job/policy.py `novelty`, carried by the digest): an error first seen in this run
is new, whatever the baseline says; the gate fails it and every output says "new".
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest
from outcome_factory import STARTED, error_group, outcome, result, session

from runner.ci import github
from runner.ci.console import Console
from runner.job.baseline import Baseline
from runner.job.digest import digest
from runner.job.events import ResultFinished, Where
from runner.job.outcome import Outcome, ResultOutcome
from runner.job.policy import Gate, novelty, result_fails
from runner.job.run import judge
from runner.reports import render_junit, render_markdown

WHERE = Where("Deploy checks", "us-east-1")
NEW_REASON = "its error was first seen in this run, though the check failed in the baseline too"


def failed_checkout(first_seen_offset: timedelta) -> tuple[Outcome, ResultOutcome]:
    """A draft run whose Checkout API failed with an error group first seen at STARTED + offset; and
    the result as the console saw it when it became final (before the run was judged)."""
    group = error_group("eg-checkout")
    group.firstSeen = group.lastSeen = STARTED + first_seen_offset
    failed = result("failed", "Checkout API", group_ids=["eg-checkout"])
    failed.known = first_seen_offset < timedelta(0)  # what the session worker's classify says
    failed.firstSeen = group.firstSeen
    draft = outcome([session([failed, result("passed", "Home page")], [group])])
    return draft, failed.model_copy()


def baseline_where_checkout(verdict: str) -> Baseline:
    return Baseline("main/results.json", [result(verdict, "Checkout API"), result("passed", "Home page")])


def render_everything(judged: Outcome, live: ResultOutcome) -> dict[str, str]:
    stream = io.StringIO()
    console = Console(stream=stream, environ={"NO_COLOR": "1"}, gate=Gate.of(judged))
    console.notify(ResultFinished(WHERE, live, STARTED))
    console.finish(digest(judged), {})
    return {"console": stream.getvalue(), "markdown": render_markdown(judged), "junit": render_junit(judged)}


def live_line(console: str) -> str:
    """The check's line printed when its result became final."""
    return next(line for line in console.splitlines() if line.startswith("  FAILED         Checkout API"))


def junit_case(xml: str) -> ET.Element:
    root = ET.fromstring(xml)
    (case,) = [c for c in root.iter("testcase") if (c.get("name") or "").startswith("Checkout API")]
    return case


def test_an_error_first_seen_in_this_run_is_new_even_when_the_baseline_failed_too() -> None:
    draft, live = failed_checkout(timedelta(seconds=5))
    gate = Gate(fail_on="new")
    judged = judge(draft, gate, baseline_where_checkout("failed"))
    (checkout,) = [r for r in judged.all_results() if r.name == "Checkout API"]
    assert (checkout.known, checkout.baseline) == (False, "still-failing")  # the case of the review

    # The gate: new, so failOn: new does not forgive it.
    assert novelty(checkout) == "new" and result_fails(checkout, gate)
    assert (judged.exitCode, judged.verdict) == (1, "failed")
    out = render_everything(judged, live)

    # JUnit: a failure, not a skip; the error first, then the same decision in words.
    case = junit_case(out["junit"])
    assert case.find("skipped") is None
    text = (case.findtext("failure") or "").split("\n\n")
    assert text[0] == "Error: expect(received).toBe(expected)"
    assert f"New failure: {NEW_REASON}." in text
    assert "already failing in the baseline" not in out["junit"]
    assert ET.fromstring(out["junit"]).get("failures") == "1"

    # Markdown: the headline fails, the check is under "New in this build", nothing under "Already".
    md = out["markdown"]
    assert md.startswith("## ❌ Failed — 1 of 2 checks failed the gate (1 failed)\n")
    assert "**1 new failure** (in this build) · **0 known**" in md
    assert "### New in this build (1)" in md and "Already failing before this build" not in md
    assert f"**New:** {NEW_REASON}" in md

    # Console: [new] on the live line, "new" in the details, the same split and verdict.
    console = out["console"]
    assert live_line(console).endswith("(node:internal/process/task_queues:95:5) [new]")
    assert f"  new: {NEW_REASON}" in console
    assert "failures: 1 new, 0 known" in console
    assert console.splitlines()[-1].startswith("verdict: FAILED — 1 of 2 checks failed the gate (1 failed)")

    values = github.outputs(digest(judged), {})
    assert (values["status"], values["new-failures"], values["known-failures"]) == ("failed", "1", "0")


def test_a_known_error_on_a_check_that_passed_in_the_baseline_is_new_too() -> None:
    draft, live = failed_checkout(-timedelta(days=3))
    gate = Gate(fail_on="new")
    judged = judge(draft, gate, baseline_where_checkout("passed"))
    (checkout,) = [r for r in judged.all_results() if r.name == "Checkout API"]
    assert (checkout.known, checkout.baseline) == (True, "newly-failing")
    assert novelty(checkout) == "new" and judged.exitCode == 1
    out = render_everything(judged, live)
    reason = "the check passed in the baseline (its error was first seen 3 days before this run)"
    assert f"New failure: {reason}." in (junit_case(out["junit"]).findtext("failure") or "")
    assert f"**New:** {reason}" in out["markdown"] and "### New in this build (1)" in out["markdown"]
    assert f"  new: {reason}" in out["console"]
    # The live line knew only the error group's half: seen 3 days before the session started.
    assert live_line(out["console"]).endswith(" [known since 3 days]")
    values = github.outputs(digest(judged), {})
    (failed,) = json.loads(values["failed-checks"])
    assert (values["new-failures"], values["known-failures"], failed["known"]) == ("1", "0", False)


@pytest.mark.parametrize(
    ("offset", "baseline", "forgiven"),
    [
        (-timedelta(days=3), "failed", True),  # both say known
        (-timedelta(days=3), None, True),  # the error group alone
        (-timedelta(seconds=1), None, True),  # ages count from the run's start: "1 second"
        (None, "failed", True),  # the baseline alone (no error group read)
        (None, None, False),  # nothing tells: never forgiven
    ],
)
def test_known_failures_are_forgiven_and_called_known_everywhere(
    offset: timedelta | None, baseline: str | None, forgiven: bool
) -> None:
    if offset is None:
        failed = result("failed", "Checkout API", group_ids=["eg-unread"])
        draft, live = outcome([session([failed, result("passed", "Home page")])]), failed.model_copy()
    else:
        draft, live = failed_checkout(offset)
    gate = Gate(fail_on="new")
    judged = judge(draft, gate, baseline_where_checkout(baseline) if baseline else None)
    out = render_everything(judged, live)
    case = junit_case(out["junit"])
    assert judged.exitCode == (0 if forgiven else 1)
    if forgiven:
        assert out["markdown"].startswith("## ✅ Passed — gate passed: 1 known failure, no new ones\n")
        assert "### Already failing before this build (1)" in out["markdown"]
        assert "Known failure: " in (case.findtext("skipped") or "")
        assert "failures: 0 new, 1 known" in out["console"]
    else:
        assert "### Failures (1)" in out["markdown"] and "**New or known:** cannot be told" in out["markdown"]
        assert "New or known: cannot be told" in (case.findtext("failure") or "")
        assert "  new or known: cannot be told" in out["console"]
    if offset == -timedelta(seconds=1):
        assert "its error was first seen 1 second before this run" in out["markdown"]
        assert live_line(out["console"]).endswith(" [known since 1 second]")
