"""How one check behaves in a session: its attempts (with retries) and how they look at a moment.

A scripted check's attempts are planned up front (`plan_run`) and revealed by the clock. A check that
runs for real (`realruns.py`) has the same shape: its attempts are filled in as they finish, and its
last one stays open (`end` None) until the engine hands back the final one.

`SessionRun` and `SessionAttempt` are the session's bookkeeping (ids, simulated start and end, the
error group a failure went to); what a real attempt did is the engine's `Attempt`
(runner/checks/outcome.py), kept as a session attempt's `evidence`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
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
# The error class of each scripted behaviour that fails.
BEHAVIOUR_CLASSES = {
    "fail": ErrorClass.ASSERTION_FAILURE,
    "error": ErrorClass.SCRIPT_ERROR,
    "flaky": ErrorClass.NETWORK_ERROR,
}


def timeout_message(check_type: str, seconds: float) -> str:
    """What a run cut off at its maximum run time says (it is also its error group's message)."""
    return (
        f"Check run timed out: it did not finish within the maximum run time of {seconds:g} seconds "
        f"for {check_type} checks"
    )


@dataclass(slots=True)  # one or more a check of a session: no __dict__ each
class SessionAttempt:
    id: str
    start: float
    end: float | None  # None: never ends on its own (a hanging check in a world that says `never`)
    passed: bool
    degraded: bool = False
    error_class: ErrorClass | None = None
    message: str | None = None
    group_id: str | None = None  # set once the failure was recorded in an error group
    # A real attempt: its own response time in real milliseconds (its start and end are the clock's,
    # which may run faster than real time), and what really happened (secrets already masked).
    response_ms: float | None = None
    evidence: Attempt | None = None


@dataclass(slots=True)
class SessionRun:
    check: WorldCheck
    final_id: str
    attempts: list[SessionAttempt] = field(default_factory=list)

    @property
    def end(self) -> float | None:
        return self.attempts[-1].end


def resolve_behaviour(check: WorldCheck, env: dict[str, str | None]) -> tuple[str, str | None]:
    """The first `when` rule whose variables all arrived with those values wins over the check's own."""
    for rule in check.when:
        if all(env.get(key) == value for key, value in rule.env.items()):
            return rule.behaviour or check.behaviour, rule.errorMessage or check.errorMessage
    return check.behaviour, check.errorMessage


def _outcome(
    behaviour: str, number: int, message: str | None
) -> tuple[bool, bool, ErrorClass | None, str | None]:
    if behaviour == "pass" or (behaviour == "flaky" and number > 1):
        return True, False, None, None
    if behaviour == "degrade":
        return True, True, None, message
    return False, False, BEHAVIOUR_CLASSES[behaviour], message or DEFAULT_MESSAGES[behaviour]


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
    run = SessionRun(check=check, final_id=str(uuid.uuid4()))
    if behaviour == "hang" and max_run is None:
        run.attempts.append(SessionAttempt(id=run.final_id, start=start, end=None, passed=False))
        return run
    timed_out = max_run is not None and (behaviour == "hang" or check.durationSeconds > max_run)
    duration = max_run if timed_out and max_run is not None else check.durationSeconds
    at = start
    retries = 0
    while True:
        error_class: ErrorClass | None
        text: str | None
        if timed_out:
            assert max_run is not None
            passed, degraded = False, False
            error_class, text = ErrorClass.TIMEOUT, timeout_message(check.checkType, max_run)
        else:
            passed, degraded, error_class, text = _outcome(behaviour, len(run.attempts) + 1, message)
        attempt = SessionAttempt(str(uuid.uuid4()), at, at + duration, passed, degraded, error_class, text)
        run.attempts.append(attempt)
        if passed:
            break
        # The same retry rule as real checks (runner/checks/retry.py).
        delay = next_retry_delay(
            retry,
            retries_done=retries,
            network_failure=error_class is ErrorClass.NETWORK_ERROR,
            elapsed=at + duration - start,
            expected_duration=duration,
        )
        if delay is None:
            break
        retries += 1
        at = at + duration + delay
    run.attempts[-1].id = run.final_id
    return run


def not_run(check: WorldCheck, start: float, message: str, kind: FailureKind) -> SessionRun:
    """A check that is not run at all (it cannot run here, or the caller may not run it): one failed
    FINAL result at once, an error (hasErrors), so the gate fails closed on it. `kind` says why
    (NOT_RUNNABLE_LOCALLY, REFUSED) to the analyser."""
    final_id = str(uuid.uuid4())
    evidence = Attempt.not_run(kind, message)
    attempt = SessionAttempt(final_id, start, start, False, error_class=evidence.error_class, message=message,
                             evidence=evidence)  # fmt: skip
    return SessionRun(check=check, final_id=final_id, attempts=[attempt])


def _response_time(attempt: SessionAttempt) -> float | None:
    if attempt.end is None:
        return None
    if attempt.response_ms is not None:
        return round(attempt.response_ms)
    return round((attempt.end - attempt.start) * 1000)


def _result(
    run: SessionRun,
    attempt: SessionAttempt,
    result_type: str,
    status: str,
    location: str,
    link: str,
    moment: Callable[[float], datetime],
    stopped: float | None,
    result_id: str | None = None,
) -> SessionResult:
    failed = status == "FAILED"
    finished = status in ("PASSED", "FAILED")
    result_id = result_id or attempt.id
    # A real run's body cut at the read cap, passed or failed (an extra field, as errorMessage).
    cut = attempt.evidence.truncation if finished and attempt.evidence is not None else None
    extra: dict[str, Any] = {"bodyTruncated": cut} if cut else {}
    if failed:  # an extra field, left out when there is nothing to say (no dict of extras per row)
        extra["errorMessage"] = attempt.message
        if attempt.evidence is not None and attempt.evidence.error_kind is FailureKind.INTERNAL_ERROR:
            # A bug of the executor, not a verdict on the check: the run exits 4 and prints it.
            extra["internalError"] = attempt.evidence.traceback or attempt.message
    elif finished and attempt.degraded and attempt.message:  # why: the threshold and the measure
        extra["degradedReason"] = attempt.message
    files = attempt.evidence.files if finished and attempt.evidence is not None else ()
    if files:  # a browser check's screenshot and trace (an extra field)
        extra["attachments"] = [{"name": f.name, "path": f.path} for f in files]
    tests = attempt.evidence.tests if finished and attempt.evidence is not None else ()
    if tests:  # a Playwright check suite's tests, each with its outcome and runs (an extra field)
        extra["tests"] = [{"name": t.name, "status": t.status, "runs": t.runs} for t in tests]
    # Built, not validated: every value is ours and of its field's type (a session of 10,000
    # results is rendered at its trigger and again as its runs end: 0.4 s of validation each time).
    return SessionResult.model_construct(
        set(_DECLARED),  # the fields validating them would count as set: the declared ones, not extras
        testSessionResultId=result_id,
        testSessionResultLink=f"{link}/results/{result_id}",
        checkType=run.check.checkType,
        errorGroupIds=[attempt.group_id] if failed and attempt.group_id else [],
        status=status,
        hasErrors=failed and attempt.error_class is not None and attempt.error_class.is_error,
        hasFailures=failed and attempt.error_class is ErrorClass.ASSERTION_FAILURE,
        isDegraded=finished and attempt.degraded,
        aborted=status == "CANCELLED",
        checkId=run.check.id,
        name=run.check.name,
        runLocation=location,
        resultType=result_type,
        responseTime=_response_time(attempt) if finished else None,
        startedAt=moment(attempt.start),
        stoppedAt=moment(stopped) if stopped is not None else None,
        **extra,
    )


_DECLARED = frozenset(SessionResult.model_fields)


def render_run(
    run: SessionRun, at: float, cancelled: bool, location: str, link: str, moment: Callable[[float], datetime]
) -> list[SessionResult]:
    """The results of one check as seen at simulated time `at`: ATTEMPT rows, then the FINAL row."""
    rows = []
    for attempt in run.attempts[:-1]:
        if attempt.end is not None and attempt.end <= at:
            rows.append(_result(run, attempt, "ATTEMPT", "FAILED", location, link, moment, attempt.end))
    last = run.attempts[-1]
    current = last if last.start <= at else next(a for a in reversed(run.attempts) if a.start <= at)
    if last.start <= at and last.end is not None and last.end <= at:
        status = "PASSED" if last.passed else "FAILED"
        rows.append(_result(run, last, "FINAL", status, location, link, moment, last.end))
    else:
        status = "CANCELLED" if cancelled else "RUNNING"
        stopped = at if cancelled else None
        rows.append(_result(run, current, "FINAL", status, location, link, moment, stopped, run.final_id))
    return rows
