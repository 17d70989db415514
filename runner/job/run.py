"""The main job: run every session of a spec, each on its own worker, and judge the outcome.

The sessions' results come from a `ResultSource` (source.py): the service through the client
(remote.py), or a checks file's checks run in this process (local.py).

Workers hand back their SessionOutcome (a future) and report progress as events on a queue. The main
thread hands the events to the observers, keeps the last values it saw of each session (for partial
reports), and reacts to signals and deadlines:
- first signal: every session triggered is cancelled in parallel, each cancel bounded, and the run
  ends within `shutdown_seconds` with what is known;
- second signal: stop waiting at once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING

from runner import __version__
from runner.core.errors import ApiError, NotFoundError
from runner.core.exitcodes import ExitCode
from runner.core.threads import DaemonPool
from runner.job.analyses import READS_WAIT
from runner.job.events import (
    Drained,
    Event,
    EventQueue,
    Observer,
    Progress,
    ResultFinished,
    Stopping,
    Tick,
    Triggered,
    Where,
)
from runner.job.known import mark_known
from runner.job.outcome import CommitInfo, Outcome, ResultOutcome, SessionOutcome, count_results
from runner.job.plan import SessionPlan, session_outcome
from runner.job.policy import (
    NOTHING_JUDGED,
    NOTHING_JUDGED_CODE,
    Gate,
    is_partial,
    run_exit_code,
    run_verdict,
    session_exit_code,
    shared_session,
)
from runner.job.refusals import unknown_session
from runner.job.source import ResultSource, SessionContext
from runner.models import SessionMetadata, TestSession, TriggerRequest

if TYPE_CHECKING:
    from runner.job.baseline import Baseline, BaselineWarning
    from runner.job.quarantine import Quarantine
    from runner.job.remote import RemoteSource
    from runner.job.session import SessionWorker

SHUTDOWN_SECONDS = 4.0  # from the first signal to the reports: CI runners kill about 10 s after it
TICK_SECONDS = 1.0
DEADLINE_MARGIN = 15.0  # past every deadline of a worker: it is stuck, and the run ends without it
# While sessions run, the events are handed on in batches at most this often: a local run's results
# come one at a time (10,000 in seconds), and a wake of the main thread for each took the interpreter
# from the threads running checks thousands of times. A session's end is seen at once, a signal
# within this time; a CI log's lines are held longer than this anyway (the console's FLUSH_SECONDS).
PUMP_SECONDS = 0.05


@dataclass
class _Seen:
    """What the main thread last saw of one session, from its events (for partial reports)."""

    where: Where
    environment: str | None
    session_id: str | None = None
    link: str | None = None
    results: dict[str, ResultOutcome] = field(default_factory=dict)

    def record(self, event: Event) -> None:
        if isinstance(event, Triggered):
            self.session_id, self.link = event.session_id, event.link
        elif isinstance(event, Progress):  # what runs, by name: a partial report shows it running
            for result in event.running:
                known = self.results.get(result.id)
                if known is None or known.verdict == "running":
                    self.results[result.id] = result
        elif isinstance(event, ResultFinished):
            self.results[event.result.id] = event.result

    def partial(self, code: ExitCode) -> SessionOutcome:
        session = None
        if self.session_id is not None:
            session = TestSession(testSessionId=self.session_id, testSessionLink=self.link, status="RUNNING")
        results = [r for r in self.results.values()]
        return session_outcome(self.where, self.environment, session, results, [], code)


class Runner:
    def __init__(
        self,
        source: ResultSource,
        plan: SessionPlan,
        observer: Observer,
        commit: SessionMetadata | None = None,
        *,
        baseline: Baseline | BaselineWarning | None = None,
        quarantine: Quarantine | None = None,
        events: EventQueue | None = None,
        shutdown_seconds: float = SHUTDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # The service through its client (remote.py), or a checks file's checks run here (local.py).
        self.source = source
        self.plan = plan
        self.observer = observer
        self.commit = commit or SessionMetadata()
        self.baseline = baseline
        self.quarantine = quarantine
        self.shutdown_seconds = shutdown_seconds
        self.clock = clock
        self.started_at = datetime.now(timezone.utc)
        self.stop = threading.Event()  # set by the main thread once a signal was seen
        # A remote source's client reports its retries to this queue (ApiClient(on_retry=...)).
        self.events = events or EventQueue()
        # Written only by the signal handler: plain assignments, no locks (a handler that waits on a
        # lock the interrupted main thread holds would hang the run).
        self._signals: list[tuple[str, ExitCode]] = []
        self.stop_code: ExitCode | None = None
        self.stop_reason: str | None = None

    # --- signals ------------------------------------------------------------------------------

    def interrupt(self, signal_name: str, code: ExitCode) -> None:
        """Called from a signal handler: records the signal; the main thread acts on it."""
        self._signals.append((signal_name, code))

    # --- entry points -------------------------------------------------------------------------

    def run(self, requests: list[TriggerRequest], detach: bool = False) -> Outcome:
        jobs = []
        for index, request in enumerate(requests):
            where = Where(request.name, request.runLocation, index)
            environment = request.metadata.environment if request.metadata else None
            context = self._context(where, environment)
            call = self.source.trigger_only if detach else self.source.run_session
            jobs.append((where, environment, _bind(call, request, context)))
        return self._outcome(self._supervise(jobs), detached=detach)

    def wait_for(self, session_id: str) -> Outcome:
        """`testsession wait ID`: a session triggered earlier, maybe by another job."""
        try:
            session = self._first_read(session_id)
        except NotFoundError as exc:  # the user named an id the service does not have: exit 2
            raise unknown_session(exc, session_id, self._remote().client.account_id) or exc from None
        if session is None:  # a signal came before the service answered: nothing was followed
            where = Where(session_id, "unknown", 0)
            stopped = session_outcome(where, None, None, [], [], self.stop_code or ExitCode.INTERRUPTED)
            return self._outcome([stopped])
        location = next((r.runLocation for r in session.results if r.runLocation), None) or "unknown"
        environment = session.metadata.environment if session.metadata else None
        where = Where(session.name, location, 0)
        worker = self._worker(where, environment)
        return self._outcome(self._supervise([(where, environment, lambda: worker.follow(session, True))]))

    def _first_read(self, session_id: str) -> TestSession | None:
        """The session, read on a worker so that a signal is answered at once even while the
        service holds the read (its timeout and retries take minutes); None after a signal."""
        pool = DaemonPool(1, "read")
        future = pool.submit(self._remote().client.get_session, session_id)
        try:
            while True:
                try:
                    return future.result(timeout=0.1)  # the read's own error is raised here
                except FutureTimeout:
                    if self._signals:
                        name, code = self._signals[0]
                        self.stop_code, self.stop_reason = code, f"interrupted by {name}"
                        self.stop.set()
                        self.observer.notify(Stopping(self.stop_reason, hurry=True))
                        return None
        finally:
            pool.shutdown()

    def _context(self, where: Where, environment: str | None) -> SessionContext:
        return SessionContext(
            self.plan, where, environment, self.events.put, self.stop, lambda: self.stop_code, self.clock
        )

    def _worker(self, where: Where, environment: str | None) -> SessionWorker:
        return self._remote().worker(self._context(where, environment))

    def _remote(self) -> RemoteSource:
        """`wait` follows a session of the service: its source is the service's client. Imported only
        here: a checks file's run loads nothing of the client."""
        from runner.job.remote import RemoteSource

        if not isinstance(self.source, RemoteSource):
            raise TypeError("wait follows a session of the service: give the Runner a RemoteSource")
        return self.source

    # --- supervision --------------------------------------------------------------------------

    def _supervise(
        self, jobs: list[tuple[Where, str | None, Callable[[], SessionOutcome]]]
    ) -> list[SessionOutcome]:
        seen = [_Seen(where, environment) for where, environment, _call in jobs]
        pool = DaemonPool(len(jobs), "session")
        futures = [pool.submit(call) for _where, _env, call in jobs]
        for future in futures:
            future.add_done_callback(lambda _f: self.events.put(None))  # wakes the main thread
        started = self.clock()
        analyses = self.plan.analyses.timeout_seconds if self.plan.analyses.enabled else 0.0
        give_up = started + self.plan.timeout_seconds + analyses + READS_WAIT + DEADLINE_MARGIN
        next_tick = started + TICK_SECONDS
        try:
            while not all(f.done() for f in futures):
                if self._pump(seen, timeout=max(0.0, min(0.2, next_tick - self.clock()))):
                    wait([f for f in futures if not f.done()], PUMP_SECONDS, FIRST_COMPLETED)
                if self._signals:
                    self._shutdown(seen, futures)
                    break
                now = self.clock()
                if now >= give_up:
                    self.stop_code, self.stop_reason = ExitCode.TIMEOUT, "the run passed its deadline"
                    self._shutdown(seen, futures)
                    break
                if now >= next_tick:
                    self.observer.notify(Tick(now - started))
                    next_tick = now + TICK_SECONDS
            self._pump(seen, timeout=0.0)
        finally:
            pool.shutdown()
        return [self._value(future, seen[i]) for i, future in enumerate(futures)]

    def _pump(self, seen: list[_Seen], timeout: float) -> bool:
        """Hands the queued events to the observers, waiting up to `timeout` for the first; False
        when none came."""
        try:
            event = self.events.get(timeout=timeout) if timeout > 0 else self.events.get_nowait()
        except queue.Empty:
            if timeout > 0:
                # A quiet wait ended: a drain with nothing in it. The console's result lines held for
                # a CI log go out now once their FLUSH_SECONDS are up, not at the next event (a pass
                # held just after a failure's lines waited ~1 s, for the next tick).
                self.observer.notify(Drained())
            return False
        while True:
            if event is not None:
                where = getattr(event, "where", None)
                if isinstance(where, Where) and where.index < len(seen):
                    seen[where.index].record(event)
                self.observer.notify(event)
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                self.observer.notify(Drained())  # the console writes a drain's result lines at once
                return True

    def _shutdown(self, seen: list[_Seen], futures: list[Future[SessionOutcome]]) -> None:
        if self._signals and self.stop_code is None:
            name, code = self._signals[0]
            self.stop_code, self.stop_reason = code, f"interrupted by {name}"
        self.stop.set()
        end = self.clock() + self.shutdown_seconds
        self.observer.notify(Stopping(self.stop_reason or "stopping"))
        ids = [s.session_id for s, f in zip(seen, futures, strict=True) if s.session_id and not f.done()]
        cancels = DaemonPool(len(ids), "cancel")
        pending = [cancels.submit(partial(self.source.cancel, i)) for i in ids]
        hurried = False
        try:
            while self.clock() < end:
                self._pump(seen, timeout=0.1)
                if len(self._signals) > 1 and not hurried:
                    hurried = True
                    self.observer.notify(Stopping("a second signal: stopping now", hurry=True))
                    break
                if all(f.done() for f in futures) and all(c.done() for c in pending):
                    break
        finally:
            cancels.shutdown()
        failed = sum(1 for c in pending if c.done() and c.exception() is not None)
        unanswered = sum(1 for c in pending if not c.done())
        if failed or unanswered:
            from runner.core.words import counted, plural
            from runner.job.events import Note

            self.observer.notify(
                Note(
                    f"{failed + unanswered} of {counted(len(pending), 'session')} may still run: "
                    f"{plural(failed + unanswered, 'its', 'their')} cancel "
                    f"{'failed' if failed else 'got no answer in time'}"
                )
            )

    def _value(self, future: Future[SessionOutcome], seen: _Seen) -> SessionOutcome:
        if not future.done():
            return seen.partial(self.stop_code or ExitCode.INTERRUPTED)
        try:
            return future.result()
        except ApiError as exc:  # pragma: no cover - workers turn these into outcomes
            return seen.partial(ExitCode.SERVICE).model_copy(update={"problem": str(exc)})
        except Exception as exc:  # a bug must not cost the reports of the other sessions
            return seen.partial(ExitCode.SERVICE).model_copy(update={"problem": f"unexpected error: {exc!r}"})

    # --- the outcome --------------------------------------------------------------------------

    def _outcome(self, sessions: list[SessionOutcome], detached: bool = False) -> Outcome:
        commit = self.commit
        draft = Outcome(
            toolVersion=__version__,
            startedAt=self.started_at,
            # The fields copied, not model_dump'ed: that would build SessionMetadata's serializer for them.
            commit=CommitInfo(**{name: getattr(commit, name) for name in CommitInfo.model_fields}),
            sessions=sessions,
        )
        return judge(
            draft, self.plan.gate, self.baseline, self.stop_code, self.stop_reason, detached, self.quarantine
        )


def judge(
    draft: Outcome,
    gate: Gate,
    baseline: Baseline | BaselineWarning | None = None,
    stop_code: ExitCode | None = None,
    stop_reason: str | None = None,
    detached: bool = False,
    quarantine: Quarantine | None = None,
) -> Outcome:
    """The run's outcome from its sessions: known or new and the baseline judged over the whole run,
    the quarantined checks marked, then every session whose code came from its checks judged again
    with them (`failOn: new` forgives known failures, a quarantine excuses its check), then the
    run's code, verdict and counts. The one path to a verdict."""
    gated = draft.model_copy(update={"failOnDegraded": gate.fail_on_degraded, "failOn": gate.fail_on})
    marked = mark_known(gated)
    if quarantine:  # imported only then: most runs quarantine nothing
        from runner.job.quarantine import mark_quarantined

        marked = mark_quarantined(marked, quarantine)
    if baseline is not None:  # imported only then (start-up): most runs compare with no baseline
        from runner.job.baseline import mark_baseline

        marked = mark_baseline(marked, baseline)
    shared = shared_session(
        [s.testSessionId for s in marked.sessions], [f"{s.name} ({s.runLocation})" for s in marked.sessions]
    )
    # A shared session's results are the other session's: shown once, under the session that ran them.
    unrun = {"exitCode": int(NOTHING_JUDGED_CODE), "results": [], "errorGroups": []}
    sessions = [
        s.model_copy(update={**unrun, "problem": shared[i]}) if i in shared else s
        for i, s in enumerate(marked.sessions)
    ]
    judged = [_judge_session(s, gate, detached) for s in sessions]
    code = run_exit_code([ExitCode(s.exitCode) for s in judged], stop_code)
    all_no_match = bool(judged) and all(s.noMatch for s in judged)
    problems = [f"{s.name} ({s.runLocation}): {s.problem}" for s in judged if s.problem]
    return marked.model_copy(
        update={
            "finishedAt": datetime.now(timezone.utc),
            "verdict": run_verdict(code, detached=detached, all_no_match=all_no_match),
            "exitCode": int(code),
            "partial": is_partial(code),
            "message": stop_reason or ("; ".join(problems) if problems and code != ExitCode.OK else None),
            "counts": count_results([r for s in judged for r in s.results]),
            "sessions": judged,
        }
    )


def _judge_session(session: SessionOutcome, gate: Gate, detached: bool) -> SessionOutcome:
    code = session_exit_code(
        ExitCode(session.exitCode),
        session.results,
        gate,
        no_match=session.noMatch,
        problem=bool(session.problem),
        detached=detached,
    )
    update: dict[str, object] = {"exitCode": int(code)}
    if code == NOTHING_JUDGED_CODE and not session.problem and not session.results:
        update["problem"] = NOTHING_JUDGED
    return session.model_copy(update=update)


def _bind(
    call: Callable[[TriggerRequest, SessionContext], SessionOutcome],
    request: TriggerRequest,
    context: SessionContext,
) -> Callable[[], SessionOutcome]:
    return lambda: call(request, context)
