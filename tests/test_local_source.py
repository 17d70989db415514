"""A checks file's run through the job's port (job/local.py LocalSource): the engine's attempts become
the job's events and outcome directly, with no emulator between: retries fold into one result, a
failure gets its group, history and analysis from its evidence, and the run's deadline (an injected
clock) ends a check that is still running."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from checks_servers import HttpServer

from runner.checks.checksfile import parse_checks
from runner.core.exitcodes import ExitCode
from runner.job.analyses import AnalysisPlan
from runner.job.events import AnalysisReady, DeadlinePassed, Event, ResultFinished, Triggered
from runner.job.local import LocalSource
from runner.job.outcome import Outcome
from runner.job.plan import SessionPlan
from runner.job.run import Runner
from runner.models import RetryStrategy, TriggerRequest

STATUS_200 = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def notify(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def _check(name: str, url: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "checkType": "API",
        "request": {"method": "GET", "url": url, "assertions": STATUS_200},
        **more,
    }


def _run(
    checks: list[dict[str, Any]],
    plan: SessionPlan,
    request: TriggerRequest | None = None,
    clock: Callable[[], float] | None = None,
) -> tuple[Outcome, Recorder]:
    source = LocalSource(parse_checks(checks, "checks.yml", {}))
    recorder = Recorder()
    kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
    try:
        runner = Runner(source, plan, recorder, **kwargs)
        outcome = runner.run([request or TriggerRequest(name="local", runLocation="local")])
    finally:
        source.close()
    return outcome, recorder


def test_a_retried_check_is_one_flaky_result_with_its_failed_attempt(web: HttpServer) -> None:
    flaky = _check("Flaky", web.url("/flaky?key=local-source&fail=1"))
    retry = RetryStrategy(type="FIXED", maxRetries=1, baseBackoffSeconds=0)
    request = TriggerRequest(name="local", runLocation="local", retryStrategy=retry)
    outcome, events = _run([flaky], SessionPlan(timeout_seconds=60), request)
    (result,) = outcome.sessions[0].results
    assert (result.verdict, result.status, result.attempts) == ("flaky", "PASSED", 2)
    assert len(result.failedAttempts) == 1 and "503" in (result.failedAttempts[0].error or "")
    assert [e.result.verdict for e in events.of(ResultFinished)] == ["flaky"]  # reported once, when final
    assert events.of(Triggered)[0].link is None and outcome.exitCode == ExitCode.OK


def test_a_failure_is_new_and_analysed_from_its_evidence(web: HttpServer) -> None:
    checks = [_check("Down", web.url("/status/503")), _check("Up", web.url("/json"))]
    outcome, events = _run(checks, SessionPlan(timeout_seconds=60, analyses=AnalysisPlan(timeout_seconds=5)))
    session = outcome.sessions[0]
    down = next(r for r in session.results if r.name == "Down")
    assert (down.verdict, down.known) == ("failed", False) and "503" in (down.error or "")
    (group,) = session.errorGroups
    assert group.id in down.errorGroupIds and group.count == 1 and group.occurrences == 1
    assert group.analysis is not None and group.analysis.state == "completed"
    assert group.analysis.analysis is not None and "503" in group.analysis.analysis.model_dump_json()
    assert [e.checks for e in events.of(AnalysisReady)] == [("Down",)]
    assert outcome.exitCode == ExitCode.CHECKS_FAILED and outcome.counts.passed == 1


@pytest.fixture
def ticking() -> Iterator[Callable[[], float]]:
    """A clock that moves half a second each time it is read: the run's deadline comes after a few
    reads, whatever the machine's load."""
    counter = itertools.count()
    yield lambda: next(counter) * 0.5


def test_the_deadline_ends_a_running_check_and_reports_it_unfinished(
    web: HttpServer, ticking: Callable[[], float]
) -> None:
    slow = _check("Slow", web.url("/slow?ms=3000"))
    outcome, events = _run([slow], SessionPlan(timeout_seconds=2), clock=ticking)
    session = outcome.sessions[0]
    assert session.exitCode == ExitCode.TIMEOUT and outcome.partial
    assert "did not finish within the 2 s deadline" in (session.problem or "")
    assert [r.verdict for r in session.results] == ["running"]
    (passed,) = events.of(DeadlinePassed)
    assert [r.name for r in passed.unfinished] == ["Slow"] and not passed.finished


def test_a_pass_reported_before_the_deadline_is_the_same_result_in_the_outcome(web: HttpServer) -> None:
    # A pass without retries keeps only its result once reported (local.py `_settle`): the outcome
    # of a session its deadline ended shows that result, not one made again from what was kept.
    recorder = Recorder()

    def clock() -> float:  # the deadline (2 s) passes once the pass was seen on the main thread
        return 3.0 if recorder.of(ResultFinished) else 0.0

    checks = [_check("Fast", web.url("/json")), _check("Slow", web.url("/slow?ms=3000"))]
    source = LocalSource(parse_checks(checks, "checks.yml", {}))
    try:
        runner = Runner(source, SessionPlan(timeout_seconds=2), recorder, clock=clock)
        outcome = runner.run([TriggerRequest(name="local", runLocation="local")])
    finally:
        source.close()
    (reported,) = [e.result for e in recorder.of(ResultFinished)]
    fast, slow = outcome.sessions[0].results
    assert outcome.sessions[0].exitCode == ExitCode.TIMEOUT
    assert reported.name == "Fast" and reported.durationSeconds is not None
    assert fast == reported and (slow.name, slow.verdict) == ("Slow", "running")
    assert len({fast.id, slow.id}) == 2 and all(uuid.UUID(r.id).version == 4 for r in (fast, slow))


def test_a_session_larger_than_the_pools_window_runs_every_check(
    web: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session hands its checks to the pools a window at a time (HANDED): every check still runs
    # once, and one that cannot run here fails closed without taking a place in the window.
    from runner.job import local

    monkeypatch.setattr(local, "HANDED", 2)
    checks = [_check(f"Up {n}", web.url(f"/json?n={n}")) for n in range(5)]
    checks.insert(2, {"name": "Browser", "checkType": "BROWSER"})
    outcome, events = _run(checks, SessionPlan(timeout_seconds=60))
    results = {r.name: r for r in outcome.sessions[0].results}
    assert [results[f"Up {n}"].status for n in range(5)] == ["PASSED"] * 5
    assert results["Browser"].status == "FAILED" and "cannot run" in (results["Browser"].error or "")
    assert len(events.of(ResultFinished)) == 6


def test_a_progress_event_names_a_few_running_checks_and_counts_the_rest(
    web: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Progress carries counts and at most RUNNING_SHOWN running checks, whatever the session's size:
    # it once carried every result (10,000 at every event of a large run, walked again by each reader).
    from runner.job import local
    from runner.job.events import Progress

    monkeypatch.setattr(local, "RUNNING_SHOWN", 2)
    checks = [_check("Fast", web.url("/json"))]
    checks += [_check(f"Slow {n}", web.url(f"/slow?ms=600&n={n}")) for n in range(7)]
    outcome, events = _run(checks, SessionPlan(timeout_seconds=60))
    assert outcome.exitCode == ExitCode.OK
    progress = events.of(Progress)
    assert progress and all(p.total == 8 for p in progress)
    for p in progress:  # every unfinished check is on a worker here: the first two of them are named
        assert len(p.running) == min(2, p.total - p.done)
        assert all(r.verdict == "running" and r.name.startswith("Slow") for r in p.running)
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert (progress[-1].done, progress[-1].running) == (8, ())


def test_a_check_the_run_stopped_before_it_started_did_not_finish_and_is_no_error(web: HttpServer) -> None:
    """The stop (a deadline, a signal) reaches a queued check before it starts: the run cancelled
    it, so it did not finish (verdict running, as a check the stop ended mid-request), never an
    error of the check with an error group of its own."""
    import queue
    import threading

    from runner.checks.variables import VariableSources
    from runner.job.local import _verdict

    source = LocalSource(parse_checks([_check("Queued", web.url("/ok"))], "checks.yml", {}))
    stop = threading.Event()
    stop.set()
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    try:
        source.execute(0, source.checks.checks[0], VariableSources(), None, None, stop, inbox)
    finally:
        source.close()
    index, attempt, final = inbox.get_nowait()
    assert (index, final, attempt.cancelled) == (0, True, True)
    assert _verdict(attempt, False) == "running"
