"""Each check's history across runs (the state file's `check_runs`): what this run adds to it, and what
it says of a check. Pure functions, no I/O: the command's glue (cli/job.py, cli/history_command.py)
reads and writes the file, the reports render the `HistoryOutcome` values made here.

- A run records one row per result that finished (passed, flaky, degraded, failed, error): a check
  cancelled or cut short showed nothing, and is not counted.
- `failed` counts failed and error; `passRate` is the share of runs that did not fail (passed, flaky,
  degraded): 0.75 for 3 of 4.
- A check is unstable when it failed in some runs of the window and not in others, or passed only on
  a retry (flaky): the reports' "Unstable lately" are those unstable that pass now.
- A quarantined check whose last READY_RUNS runs all passed is ready to leave quarantine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from runner.job.outcome import HistoryOutcome, LastFailure, Outcome, ResultOutcome, Streak
from runner.job.policy import novelty

if TYPE_CHECKING:  # the console and the reports format a history without the state file's module
    from runner.state.store import CheckRun

REPORT_RUNS = 20  # the window every report shows ("failed 3 of the last 20 runs")
READY_RUNS = 10  # passes in a row after which a quarantined check is named ready to leave
RECORDED = frozenset({"passed", "flaky", "degraded", "failed", "error"})
FAILED = frozenset({"failed", "error"})
MARKS = {"passed": ".", "flaky": "f", "degraded": "d", "failed": "X", "error": "X"}


def check_key(check_id: str | None, name: str) -> str:
    """What a check's runs are kept under: its id, else its name (a result without an id)."""
    return check_id if check_id else f"name:{name}"


def key_of(result: ResultOutcome) -> str:
    return check_key(result.checkId, result.name)


def run_of(
    result: ResultOutcome,
    location: str | None,
    at: datetime,
    commit_id: str | None,
    mask: Callable[[str], str] = str,
) -> CheckRun:
    """The row one finished result adds to its check's history; `mask` takes the run's secrets out of
    its error message (the file outlives the run, and is shown by `testsession history`)."""
    from runner.state.store import CheckRun

    duration = result.durationSeconds
    return CheckRun(
        check_key=key_of(result),
        check_id=result.checkId,
        name=result.name,
        location=result.runLocation or location,
        at=at.timestamp(),
        verdict=result.verdict,
        duration_ms=round(duration * 1000) if duration is not None else None,
        attempts=result.attempts,
        error_group=result.errorGroupIds[0] if result.errorGroupIds else None,
        error=mask(result.error) if result.error and result.verdict in FAILED | {"degraded"} else None,
        novelty=novelty(result) if result.verdict in FAILED else None,
        commit_id=commit_id,
        quarantined=result.quarantined is not None,
    )


def runs_of(outcome: Outcome, at: datetime, mask: Callable[[str], str] = str) -> list[CheckRun]:
    """The rows this run adds, one per finished result, recorded at `at`."""
    return [
        run_of(result, session.runLocation, at, outcome.commit.commitId, mask)
        for session in outcome.sessions
        for result in session.results
        if result.verdict in RECORDED
    ]


def lately(past: Sequence[CheckRun], result: ResultOutcome, at: datetime) -> HistoryOutcome | None:
    """What a result's check's history says with this result added (the console's line, written as
    the result arrives, before the run records it); None for a result that is not recorded."""
    if result.verdict not in RECORDED:
        return None
    runs = [*past, run_of(result, result.runLocation, at, None)]
    return summarize(runs[-REPORT_RUNS:], quarantined=result.quarantined is not None)


def _percentile(values: Sequence[int], share: float) -> int:
    """The nearest-rank percentile of sorted `values`."""
    rank = max(1, math.ceil(share * len(values)))
    return values[rank - 1]


def summarize(runs: Sequence[CheckRun], quarantined: bool = False) -> HistoryOutcome:
    """What a check's runs (oldest first) say of it."""
    counts = dict.fromkeys(("passed", "flaky", "degraded", "failed"), 0)
    for run in runs:
        counts["failed" if run.verdict in FAILED else run.verdict] += 1
    total = len(runs)
    durations = sorted(r.duration_ms for r in runs if r.duration_ms is not None)
    last = next((r for r in reversed(runs) if r.verdict in FAILED), None)
    streak = None
    if runs:
        failing = runs[-1].verdict in FAILED
        length = 0
        for run in reversed(runs):
            if (run.verdict in FAILED) != failing:
                break
            length += 1
        streak = Streak(state="failing" if failing else "passing", runs=length)
    failed = counts["failed"]
    return HistoryOutcome(
        runs=total,
        passed=counts["passed"],
        failed=failed,
        degraded=counts["degraded"],
        flaky=counts["flaky"],
        passRate=round((total - failed) / total, 4) if total else 1.0,
        medianMs=_percentile(durations, 0.5) if durations else None,
        p95Ms=_percentile(durations, 0.95) if durations else None,
        lastFailure=None
        if last is None
        else LastFailure(
            at=datetime.fromtimestamp(last.at, tz=timezone.utc),
            verdict=last.verdict,
            error=last.error,
            errorGroupId=last.error_group,
            novelty=last.novelty,
            commitId=last.commit_id,
        ),
        streak=streak,
        recent="".join(MARKS.get(r.verdict, "?") for r in runs[-REPORT_RUNS:]),
        unstable=(0 < failed < total) or counts["flaky"] > 0,
        readyToLeaveQuarantine=quarantined
        and streak is not None
        and streak.state == "passing"
        and streak.runs >= READY_RUNS,
    )


def mark_history(outcome: Outcome, runs: dict[str, list[CheckRun]]) -> Outcome:
    """A copy of `outcome` whose results carry their check's history (`runs`: by check key, oldest
    first, this run's included); results without recorded runs keep None."""
    sessions = []
    for session in outcome.sessions:
        results = []
        for result in session.results:
            recorded = runs.get(key_of(result))
            if recorded:
                summary = summarize(recorded[-REPORT_RUNS:], quarantined=result.quarantined is not None)
                result = result.model_copy(update={"history": summary})
            results.append(result)
        sessions.append(session.model_copy(update={"results": results}))
    return outcome.model_copy(update={"sessions": sessions})


def describe(history: HistoryOutcome) -> str:
    """'failed 3 of the last 20 runs; flaky': a failing check's history in one clause."""
    if history.runs <= 1:
        return "its first recorded run"
    if history.failed == 0 and history.degraded:  # a degraded check: "failed 0 of ..." says nothing
        return f"degraded {history.degraded} of the last {history.runs} runs"
    text = f"failed {history.failed} of the last {history.runs} runs"
    if history.unstable:
        return text + "; flaky"
    if history.failed == history.runs:
        return text + "; failing every run"
    return text


def describe_unstable(history: HistoryOutcome) -> str:
    """'passed 17 of the last 20 runs, 2 only on a retry': an unstable check that passes now (its
    caller puts it in parentheses: no second pair inside)."""
    if history.runs == 1:  # unstable on one run: it passed only on a retry
        return "passed its only recorded run" + (" only on a retry" if history.flaky else "")
    text = f"passed {history.runs - history.failed} of the last {history.runs} runs"
    if history.flaky:
        text += f", {history.flaky} only on a retry"
    return text
