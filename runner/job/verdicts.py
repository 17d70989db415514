"""From the service's results to verdicts and exit codes. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Mapping

from runner.core.exitcodes import ExitCode
from runner.job.outcome import AttemptOutcome, ResultOutcome, ResultVerdict
from runner.models import SessionResult, TestSession

FAILING_VERDICTS = frozenset({"failed", "error", "running", "cancelled"})


def _duration(result: SessionResult) -> float | None:
    if result.responseTime is not None:
        return round(result.responseTime / 1000.0, 3)
    if result.startedAt and result.stoppedAt:
        return round(max(0.0, (result.stoppedAt - result.startedAt).total_seconds()), 3)
    return None


def result_verdict(result: SessionResult, retried: bool) -> ResultVerdict:
    status = result.status
    if status == "CANCELLED":
        return "cancelled"
    if status == "RUNNING" or result.resultType == "PENDING":
        return "running"
    if status == "PASSED":
        if result.isDegraded:
            return "degraded"
        return "flaky" if retried else "passed"
    if status == "FAILED":
        if result.aborted or (result.hasErrors and not result.hasFailures):
            return "error"
        return "failed"
    # A status this version does not know: never report it as a pass.
    return "error"


def _first_message(group_ids: list[str], messages: Mapping[str, str | None]) -> str | None:
    for group_id in group_ids:
        message = messages.get(group_id)
        if message:
            return message
    return None


def build_results(session: TestSession, messages: Mapping[str, str | None]) -> list[ResultOutcome]:
    """One outcome per check and location; ATTEMPT results fold into their FINAL result."""
    attempts: dict[tuple[str | None, str | None, str], list[SessionResult]] = {}
    finals: list[SessionResult] = []
    for result in session.results:
        key = (result.checkId, result.runLocation, result.name)
        if result.resultType == "ATTEMPT":
            attempts.setdefault(key, []).append(result)
        else:
            finals.append(result)
    seen = set()
    outcomes = []
    for result in finals:
        key = (result.checkId, result.runLocation, result.name)
        seen.add(key)
        outcomes.append(_outcome(result, attempts.get(key, []), messages))
    for key, tries in attempts.items():
        if key not in seen:  # still retrying: no FINAL result yet
            last = tries[-1]
            pending = last.model_copy(update={"status": "RUNNING", "resultType": "PENDING"})
            outcomes.append(_outcome(pending, tries, messages))
    return outcomes


def _outcome(
    result: SessionResult, tries: list[SessionResult], messages: Mapping[str, str | None]
) -> ResultOutcome:
    failed_tries = [t for t in tries if t.status != "PASSED"]
    return ResultOutcome(
        id=result.testSessionResultId,
        link=result.testSessionResultLink,
        checkId=result.checkId,
        name=result.name or result.checkId or result.testSessionResultId,
        checkType=result.checkType,
        runLocation=result.runLocation,
        status=result.status,
        verdict=result_verdict(result, retried=bool(failed_tries)),
        durationSeconds=_duration(result),
        attempts=1 + len(tries),
        failedAttempts=[
            AttemptOutcome(
                id=t.testSessionResultId,
                link=t.testSessionResultLink,
                status=t.status,
                durationSeconds=_duration(t),
                error=_first_message(t.errorGroupIds, messages),
            )
            for t in failed_tries
        ],
        errorGroupIds=list(result.errorGroupIds),
        error=_first_message(result.errorGroupIds, messages),
    )


def checks_exit_code(results: list[ResultOutcome], fail_on_degraded: bool) -> ExitCode:
    for result in results:
        if result.verdict in FAILING_VERDICTS or (fail_on_degraded and result.verdict == "degraded"):
            return ExitCode.CHECKS_FAILED
    return ExitCode.OK
