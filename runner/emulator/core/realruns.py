"""Checks that run for real in a session: a bounded pool of daemon threads that executes them.

Trigger plans a `RealJob` per matched check with a definition (sessions.py); the Backend hands the
jobs to its pool (runner/core/threads.py: at most `settings.executor.concurrency` at once; browser
checks, which their protocol queues itself, to a pool of their own, SELF_QUEUED_LIMIT). A worker runs
the executor (`checks.run_check`) and reports through `RealRunHooks`, which the Backend implements
under its lock: a worker changes no shared state itself, it hands back values (frozen `Attempt`s,
secrets masked).

Time: a real attempt takes real time; the session's times are the SimClock's, so each attempt's
start and end are the clock's reading when they really happen, and its response time is the real
one in milliseconds. A retry's backoff is simulated time, like every other time of the emulator: the
worker waits until the clock reaches the planned start (at speed 10, a tenth of the backoff; a
clock advanced by the control API or a speed changed mid-wait are followed within WAIT_SLICE).
A session's stop event (cancel, reset, emulator stop) ends a request or a retry wait within a
fraction of a second (the executor's own guarantee).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from runner.checks.internal import internal_error
from runner.checks.outcome import Attempt
from runner.emulator.core.simulation import SessionRun, Slot
from runner.emulator.core.world import WorldCheck
from runner.models import RetryStrategy

if TYPE_CHECKING:
    from runner.checks.limits import Limits
    from runner.checks.variables import VariableSources
    from runner.models.check_definitions import CheckDefinition


# Checks whose protocol queues them itself (checks.protocols.SELF_QUEUED: browser checks, at most
# TESTSESSION_BROWSER_CONCURRENCY browsers at once) run on a pool of their own, at most this many
# waiting or running: they do not hold the executor's workers while they queue.
SELF_QUEUED_LIMIT = 64

# A retry wait looks at the clock at least this often (real seconds): a clock advanced or a speed
# changed while it waits is followed within this; a stop ends it at once.
WAIT_SLICE = 0.25


@dataclass(frozen=True)
class RealJob:
    """One check of one session to execute; `owner` is the session, `run` its SessionRun there."""

    owner: object
    run: SessionRun
    definition: CheckDefinition
    variables: VariableSources
    retry: RetryStrategy | None
    max_run_seconds: float | None
    limits: Limits
    stop: threading.Event


class RealRunHooks(Protocol):
    """What a worker reports; the Backend applies it under its lock."""

    def attempt_started(self, job: RealJob) -> None: ...

    def attempt_planned(self, job: RealJob, delay_seconds: float) -> float:
        """The simulated time the next attempt is planned to start, `delay_seconds` from now."""
        ...

    def real_seconds_until(self, sim_time: float) -> float: ...

    def attempt_finished(self, job: RealJob, attempt: Attempt, final: bool) -> None: ...


def execute(job: RealJob, hooks: RealRunHooks) -> None:
    """Runs the job's check to its end (or its stop) and reports each attempt; never raises."""
    if job.stop.is_set():
        return
    from runner.checks.run import run_check  # libcurl and friends: only when needed
    from runner.checks.scripts import runner_for

    def sleep(seconds: float) -> bool:
        at = hooks.attempt_planned(job, seconds)
        while (remaining := hooks.real_seconds_until(at)) > 0:
            if job.stop.wait(min(remaining, WAIT_SLICE)):
                return True
        if job.stop.is_set():
            return True
        hooks.attempt_started(job)
        return False

    hooks.attempt_started(job)
    try:
        run_check(
            job.definition,
            max_run_seconds=job.max_run_seconds,
            variables=job.variables,
            retry=job.retry,
            on_attempt=lambda attempt, final: hooks.attempt_finished(job, attempt, final),
            stop=job.stop,
            sleep=sleep,
            limits=job.limits,
            scripts=runner_for(job.definition),
        )
    except Exception as exc:  # a bug in the executor: the check fails closed instead of hanging
        hooks.attempt_finished(job, internal_error(exc, job.variables, job.definition), True)


# --- a real check's run in the session, changed only under the Backend's lock --------------------------


def open_run(check: WorldCheck, start: float) -> SessionRun:
    """A run whose first attempt is waiting for a worker (it starts when one picks it up)."""
    final_id = str(uuid.uuid4())
    return SessionRun(check, final_id, [Slot(final_id, start)])


def begin(run: SessionRun, at: float) -> None:
    """The open attempt really started at clock time `at`."""
    run.slots[-1].start = at


def plan_next(run: SessionRun, at: float) -> None:
    """The open attempt (a retry, after a backoff) is planned to start at clock time `at`."""
    run.slots[-1].start = at


def finish(run: SessionRun, attempt: Attempt, final: bool, at: float) -> None:
    """The open attempt ended at clock time `at` as the engine's `attempt`; a retry follows unless final.
    A pass is kept as its row shows it (Attempt.as_kept_passed: ~0.9 KiB less a check)."""
    slot = run.slots[-1]
    slot.end = max(at, slot.start)
    slot.attempt = attempt if not attempt.passed else attempt.as_kept_passed()
    if not final:
        slot.id = str(uuid.uuid4())  # an ATTEMPT row; the open one keeps the FINAL's id
        run.slots.append(Slot(run.final_id, slot.end))
