"""Checks that run for real in a session: a bounded pool of daemon threads that executes them.

Trigger plans a `RealJob` per matched check with a definition (sessions.py); the Backend hands the
jobs to its `Pool` (at most `settings.executor.concurrency` at once; browser checks, which their
protocol queues itself, to a pool of their own, SELF_QUEUED_LIMIT). A worker runs the executor
(`checks.run_check`) and reports through `RealRunHooks`, which the Backend implements under its lock:
a worker changes no shared state itself, it hands back values (frozen `Attempt`s, secrets masked).

Time: a real attempt takes real time; the session's times are the SimClock's, so each attempt's
start and end are the clock's reading when they really happen, and its response time is the real
one in milliseconds. A retry's backoff is simulated time, like every other time of the emulator: the
worker waits until the clock reaches the planned start (at speed 10, a tenth of the backoff; a
clock advanced by the control API or a speed changed mid-wait are followed within WAIT_SLICE).
A session's stop event (cancel, reset, emulator stop) ends a request or a retry wait within a
fraction of a second (the executor's own guarantee).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import Attempt
from runner.emulator.core.simulation import SessionAttempt, SessionRun
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
    from runner.checks.scripts import default_runner

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
            scripts=default_runner(),
        )
    except Exception as exc:  # a bug in the executor: the check fails closed instead of hanging
        hooks.attempt_finished(job, internal_error(exc), True)


def internal_error(exc: BaseException) -> Attempt:
    message = f"the check could not be run: internal error of the local executor ({type(exc).__name__})"
    return Attempt.not_run(FailureKind.INTERNAL_ERROR, message)


class Pool:
    """At most `limit` jobs at once on daemon threads, first come first served. Threads start as jobs
    arrive and end after `idle_seconds` without one (a process may exit while they wait)."""

    def __init__(self, limit: int, idle_seconds: float = 30.0) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()  # every put, and every worker's decision to end, under it
        self._limit = limit
        self._idle = idle_seconds
        self._workers = 0

    @property
    def workers(self) -> int:
        """Threads alive (busy or waiting for a job)."""
        with self._lock:
            return self._workers

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self._limit = limit

    def submit(self, work: Callable[[], None]) -> None:
        with self._lock:
            self._jobs.put(work)
            if self._workers >= self._limit:
                return  # a worker takes it when it is free
            self._workers += 1
        threading.Thread(target=self._work, name="real-check", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                work = self._jobs.get(timeout=self._idle)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():  # nothing was put since: no job is left without a worker
                        self._workers -= 1
                        return
                continue
            with contextlib.suppress(Exception):  # `execute` never raises; a worker outlives a bug anyway
                work()
            with self._lock:
                if self._workers > self._limit:  # the limit went down
                    self._workers -= 1
                    return


# --- a real check's run in the session, changed only under the Backend's lock --------------------------


def open_run(check: WorldCheck, start: float) -> SessionRun:
    """A run whose first attempt is waiting for a worker (it starts when one picks it up)."""
    final_id = str(uuid.uuid4())
    return SessionRun(check=check, final_id=final_id, attempts=[SessionAttempt(final_id, start, None, False)])


def begin(run: SessionRun, at: float) -> None:
    """The open attempt really started at clock time `at`."""
    run.attempts[-1].start = at


def plan_next(run: SessionRun, at: float) -> None:
    """The open attempt (a retry, after a backoff) is planned to start at clock time `at`."""
    run.attempts[-1].start = at


def finish(run: SessionRun, evidence: Attempt, final: bool, at: float) -> None:
    """The open attempt ended at clock time `at` as the executor says; a retry follows unless final."""
    attempt = run.attempts[-1]
    attempt.end = max(at, attempt.start)
    attempt.passed = evidence.passed
    attempt.degraded = evidence.passed and evidence.degraded
    attempt.error_class = (
        None if evidence.passed else (evidence.error_class or ErrorClass.CONFIGURATION_ERROR)
    )
    attempt.message = None if evidence.passed else (evidence.message or str(evidence.error_kind or "failed"))
    attempt.response_ms = (
        evidence.response_time_ms if evidence.response_time_ms is not None else evidence.duration_ms
    )
    attempt.evidence = evidence
    if not final:
        attempt.id = str(uuid.uuid4())  # an ATTEMPT row; the open one keeps the FINAL's id
        run.attempts.append(SessionAttempt(run.final_id, attempt.end, None, False))
