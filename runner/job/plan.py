"""What both sources of results share of a session: the run's options it runs under (`SessionPlan`),
how its outcome is made (`session_outcome`), and the rule for a check the local executor could not
run (`with_internal_errors`). The service's worker (session.py) and the engine's session (local.py)
both end their sessions here; neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from runner.core.exitcodes import ExitCode
from runner.core.words import counted, first_of
from runner.job.analyses import AnalysisPlan
from runner.job.events import Event, SessionFailed, Where
from runner.job.outcome import ErrorGroupOutcome, ResultOutcome, SessionOutcome
from runner.job.policy import Gate
from runner.models import TestSession


@dataclass(frozen=True)
class SessionPlan:
    """What a session needs to know of the run's options, whichever source runs it."""

    timeout_seconds: float = 900.0
    analyses: AnalysisPlan = field(default_factory=AnalysisPlan)
    gate: Gate = field(default_factory=Gate)


def _duration(session: TestSession | None) -> float | None:
    if session and session.startedAt and session.stoppedAt:
        return round((session.stoppedAt - session.startedAt).total_seconds(), 3)
    if session and session.timeElapsed is not None:
        return round(session.timeElapsed / 1000.0, 3)
    return None


def session_outcome(
    where: Where,
    environment: str | None,
    session: TestSession | None,
    results: list[ResultOutcome],
    groups: list[ErrorGroupOutcome],
    code: ExitCode,
    problem: str | None = None,
    no_match: bool = False,
) -> SessionOutcome:
    return SessionOutcome(
        name=where.name,
        runLocation=where.location,
        environment=environment,
        testSessionId=session.testSessionId if session else None,
        link=session.testSessionLink if session else None,
        status=session.status if session else None,
        startedAt=session.startedAt if session else None,
        stoppedAt=session.stoppedAt if session else None,
        durationSeconds=_duration(session),
        exitCode=int(code),
        problem=problem,
        noMatch=no_match,
        results=results,
        errorGroups=groups,
    )


def with_internal_errors(
    outcome: SessionOutcome, where: Where, emit: Callable[[Event], None]
) -> SessionOutcome:
    """A check the local executor could not run for a bug of its own has no verdict, and neither
    has the run: exit 4 (as any internal error), its traceback printed, never the check's failure
    nor the user's configuration error. Both sources of results (the service's, job/remote.py; the
    engine's in this process, job/local.py) end their sessions through it."""
    broken = [r for r in outcome.results if r.internalError]
    if not broken or outcome.problem or outcome.exitCode not in (ExitCode.OK, ExitCode.CHECKS_FAILED):
        return outcome
    names = first_of([r.name for r in broken], 3)
    problem = (
        f"internal error of the local executor on {counted(len(broken), 'check')} ({names}); no verdict "
        "(exit 4). This is a bug in testsession: please report it with the traceback above"
    )
    emit(SessionFailed(where, problem, traceback=broken[0].internalError))
    return outcome.model_copy(update={"exitCode": int(ExitCode.SERVICE), "problem": problem})
