"""How one check behaves in a session: its attempts (with retries) and how they look at a moment.

Every attempt is the engine's `Attempt` (runner/checks/outcome.py), the one value of an attempt from
the engine to the reports. A check that runs for real (`realruns.py`) keeps the Attempts the engine
hands back as they finish; a scripted check's attempts are made as Attempts too (`scripted_attempt`),
planned up front (`plan_run`) and revealed by the clock. A session's rows are rendered from them.

What the session adds to an attempt is its place there, a `Slot`: the result's id, its start and end
in simulated time (the SimClock's, which may run faster than real time: not the Attempt's own wall
times), and the error group its failure went to. A slot's attempt is None until it ends (a real check
still running or waiting for a worker, a hang that never ends).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import Attempt
from runner.checks.retry import next_retry_delay
from runner.emulator.core.world import WorldCheck
from runner.models import RetryStrategy, SessionResult

DEFAULT_MESSAGES = {
    "fail": "expected status 200 but received 500",
    "error": "ReferenceError: page is not defined",
    "flaky": "connect ECONNRESET 10.0.0.12:443",
}
# Why a scripted `degrade` is degraded, unless its errorMessage says.
SCRIPTED_DEGRADED = "degraded as the world scripts it (behaviour: degrade)"
# The kind of each scripted behaviour's failure, as the engine would say it (its class: the result's).
BEHAVIOUR_KINDS = {
    "fail": FailureKind.ASSERTION,
    "error": FailureKind.SCRIPT,
    "flaky": FailureKind.NETWORK,
}


def timeout_message(check_type: str, seconds: float) -> str:
    """What a run cut off at its maximum run time says (it is also its error group's message)."""
    return (
        f"Check run timed out: it did not finish within the maximum run time of {seconds:g} seconds "
        f"for {check_type} checks"
    )


@dataclass(slots=True)  # one or more a check of a session: no __dict__ each
class Slot:
    """Where one attempt sits in its session (see the module's docstring)."""

    id: str  # the result's id: an ATTEMPT row's own, the last one the FINAL row's (run.final_id)
    start: float
    end: float | None = None  # None: not ended (yet: a hang in a world that says `never` never ends)
    attempt: Attempt | None = None  # what it did: set with `end`
    group_id: str | None = None  # set once its failure was recorded in an error group


@dataclass(slots=True)
class SessionRun:
    check: WorldCheck
    final_id: str
    slots: list[Slot] = field(default_factory=list)
    # Its attempts are the world's script, not a real run: their failures are analysed from their
    # message, not as evidence of what happened (groups.py).
    scripted: bool = False

    @property
    def end(self) -> float | None:
        return self.slots[-1].end


@lru_cache(maxsize=1024)
def scripted_attempt(
    number: int, duration_ms: float, kind: FailureKind | None, message: str | None, degraded: bool = False
) -> Attempt:
    """A scripted attempt as the engine's value: passed when `kind` is None (degraded when the world
    says so, `message` saying why), else failed as `kind` with `message`. It has no wall-clock start
    (0, as an attempt that sent nothing): its times are its slot's. A value, so one is shared by
    every check scripted the same way (making a frozen Attempt costs ~20 cache hits; a world may
    script 10,000 checks a session)."""
    if kind is None:
        return Attempt(
            number, 0.0, duration_ms, True, degraded=degraded, message=message if degraded else None
        )
    return Attempt(
        number, 0.0, duration_ms, False, error_class=kind.error_class, error_kind=kind, message=message,
        network_failure=kind.error_class is ErrorClass.NETWORK_ERROR,
    )  # fmt: skip


def resolve_behaviour(check: WorldCheck, env: dict[str, str | None]) -> tuple[str, str | None]:
    """The first `when` rule whose variables all arrived with those values wins over the check's own."""
    for rule in check.when:
        if all(env.get(key) == value for key, value in rule.env.items()):
            return rule.behaviour or check.behaviour, rule.errorMessage or check.errorMessage
    return check.behaviour, check.errorMessage


def _outcome(behaviour: str, number: int, message: str | None, duration_ms: float) -> Attempt:
    if behaviour == "pass" or (behaviour == "flaky" and number > 1):
        return scripted_attempt(number, duration_ms, None, None)
    if behaviour == "degrade":
        return scripted_attempt(number, duration_ms, None, message, degraded=True)
    return scripted_attempt(
        number, duration_ms, BEHAVIOUR_KINDS[behaviour], message or DEFAULT_MESSAGES[behaviour]
    )


def _scripted_degraded(check: WorldCheck) -> str:
    """Why a scripted `degrade` is degraded: its time against its degradedResponseTime when the world
    gives one below it, as a real run says it (checks/judge.py)."""
    took, limit = check.durationSeconds * 1000, check.degradedResponseTime
    if limit is not None and took > limit:
        return f"response time {took:,.0f} ms exceeded the degradedResponseTime of {limit:,g} ms"
    return SCRIPTED_DEGRADED


def plan_run(
    check: WorldCheck,
    start: float,
    env: dict[str, str | None],
    retry: RetryStrategy | None,
    max_run: float | None,
) -> SessionRun:
    """Every attempt of the check, decided up front; the clock later reveals them.

    An attempt that would run longer than `max_run` (a hanging check, or one slower than its
    maximum) ends at `max_run` as a failed, timed-out run. `max_run` None: a hang never ends.
    """
    behaviour, message = resolve_behaviour(check, env)
    if behaviour == "degrade" and not message:
        message = _scripted_degraded(check)
    run = SessionRun(check=check, final_id=str(uuid.uuid4()), scripted=True)
    if behaviour == "hang" and max_run is None:
        run.slots.append(Slot(run.final_id, start))
        return run
    timed_out = max_run is not None and (behaviour == "hang" or check.durationSeconds > max_run)
    duration = max_run if timed_out and max_run is not None else check.durationSeconds
    at = start
    retries = 0
    while True:
        number = len(run.slots) + 1
        if timed_out:
            assert max_run is not None
            text = timeout_message(check.checkType, max_run)
            attempt = scripted_attempt(number, duration * 1000, FailureKind.TIMEOUT, text)
        else:
            attempt = _outcome(behaviour, number, message, duration * 1000)
        run.slots.append(Slot(str(uuid.uuid4()), at, at + duration, attempt))
        if attempt.passed:
            break
        # The same retry rule as real checks (runner/checks/retry.py).
        delay = next_retry_delay(
            retry,
            retries_done=retries,
            network_failure=attempt.network_failure,
            elapsed=at + duration - start,
            expected_duration=duration,
        )
        if delay is None:
            break
        retries += 1
        at = at + duration + delay
    run.slots[-1].id = run.final_id
    return run


def not_run(check: WorldCheck, start: float, message: str, kind: FailureKind) -> SessionRun:
    """A check that is not run at all (it cannot run here, or the caller may not run it): one failed
    FINAL result at once, an error (hasErrors), so the gate fails closed on it. `kind` says why
    (NOT_RUNNABLE_LOCALLY, REFUSED) to the analyser."""
    final_id = str(uuid.uuid4())
    return SessionRun(check, final_id, [Slot(final_id, start, start, Attempt.not_run(kind, message))])


def _result(
    run: SessionRun,
    slot: Slot,
    result_type: str,
    status: str,
    location: str,
    link: str,
    moment: Callable[[float], datetime],
    stopped: float | None,
    result_id: str | None = None,
) -> SessionResult:
    attempt = slot.attempt if status in ("PASSED", "FAILED") else None  # what an ended row shows
    result_id = result_id or slot.id
    # Extra fields, each left out when there is nothing to say (no dict of extras per row).
    extra: dict[str, Any] = {}
    error_class = None
    if attempt is not None:
        error_class = attempt.failure_class
        if attempt.truncation:  # a real run's body cut at the read cap, passed or failed
            extra["bodyTruncated"] = attempt.truncation
        if not attempt.passed:
            extra["errorMessage"] = attempt.failure_message
            if attempt.error_kind is FailureKind.INTERNAL_ERROR:
                # A bug of the executor, not a verdict on the check: the run exits 4 and prints it.
                extra["internalError"] = attempt.traceback or attempt.failure_message
        elif attempt.degraded and attempt.message:  # why: the threshold and the measure
            extra["degradedReason"] = attempt.message
        if attempt.files:  # a browser check's screenshot and trace
            extra["attachments"] = [f.as_dict() for f in attempt.files]
        if attempt.tests:  # a Playwright check suite's tests, each with its outcome and runs
            extra["tests"] = [t.as_dict() for t in attempt.tests]
    # Built, not validated: every value is ours and of its field's type (a session of 10,000
    # results is rendered at its trigger and again as its runs end: 0.4 s of validation each time).
    return SessionResult.model_construct(
        set(_DECLARED),  # the fields validating them would count as set: the declared ones, not extras
        testSessionResultId=result_id,
        testSessionResultLink=f"{link}/results/{result_id}",
        checkType=run.check.checkType,
        errorGroupIds=[slot.group_id] if error_class is not None and slot.group_id else [],
        status=status,
        hasErrors=error_class is not None and error_class.is_error,
        hasFailures=error_class is ErrorClass.ASSERTION_FAILURE,
        isDegraded=attempt is not None and attempt.passed and attempt.degraded,
        aborted=status == "CANCELLED",
        checkId=run.check.id,
        name=run.check.name,
        runLocation=location,
        resultType=result_type,
        responseTime=round(attempt.reported_ms) if attempt is not None else None,
        startedAt=moment(slot.start),
        stoppedAt=moment(stopped) if stopped is not None else None,
        **extra,
    )


_DECLARED = frozenset(SessionResult.model_fields)


def render_run(
    run: SessionRun, at: float, cancelled: bool, location: str, link: str, moment: Callable[[float], datetime]
) -> list[SessionResult]:
    """The results of one check as seen at simulated time `at`: ATTEMPT rows, then the FINAL row."""
    rows = []
    for slot in run.slots[:-1]:
        if slot.end is not None and slot.end <= at:
            rows.append(_result(run, slot, "ATTEMPT", "FAILED", location, link, moment, slot.end))
    last = run.slots[-1]
    current = last if last.start <= at else next(s for s in reversed(run.slots) if s.start <= at)
    if last.start <= at and last.end is not None and last.end <= at and last.attempt is not None:
        status = "PASSED" if last.attempt.passed else "FAILED"
        rows.append(_result(run, last, "FINAL", status, location, link, moment, last.end))
    else:
        status = "CANCELLED" if cancelled else "RUNNING"
        stopped = at if cancelled else None
        rows.append(_result(run, current, "FINAL", status, location, link, moment, stopped, run.final_id))
    return rows
