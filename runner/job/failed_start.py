"""The outcome of a run that ended before any session could run: a bad spec or flag (exit 2), a
service that could not be used (exit 4), a `wait` of a session that does not exist.

Its reports hold one error test case naming the problem and the fix, so that a CI step that
publishes junit.xml shows why the job failed instead of a missing file or a green, empty suite.
"""

from __future__ import annotations

from datetime import datetime, timezone

from runner import __version__
from runner.core.exitcodes import ExitCode
from runner.core.words import counted
from runner.job.outcome import Outcome, SessionOutcome
from runner.job.policy import run_verdict

NOT_STARTED = "not started"


def failed_start_outcome(command: str, code: ExitCode, problem: str, where: str = NOT_STARTED) -> Outcome:
    """`problem`: what went wrong and what to do, one or more lines (a spec's problems, one each)."""
    now = datetime.now(timezone.utc)
    lines = [line.strip() for line in problem.splitlines() if line.strip()] or ["unknown error"]
    first = lines[0] if len(lines) == 1 else f"{lines[0]} (and {counted(len(lines) - 1, 'more problem')})"
    session = SessionOutcome(
        name=f"testsession {command}", runLocation=where, exitCode=int(code), problem=problem
    )
    return Outcome(
        toolVersion=__version__,
        startedAt=now,
        finishedAt=now,
        verdict=run_verdict(code, detached=False, all_no_match=False),
        exitCode=int(code),
        partial=False,  # nothing ran: there is nothing partial to show
        message=first,
        sessions=[session],
    )
