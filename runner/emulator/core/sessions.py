"""Test sessions: the trigger (which checks run: scripted ones planned up front, real ones handed to
the executor), how a session looks at a moment of simulated time, and cancel."""

from __future__ import annotations

import copy
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.checks.declared import cannot_run_message
from runner.checks.failures import FailureKind
from runner.checks.limits import Limits
from runner.checks.variables import VariableSources, variables_from
from runner.emulator.core import realruns
from runner.emulator.core.accounts import AccountState
from runner.emulator.core.clock import SimClock
from runner.emulator.core.failures import ApiFailure, not_found
from runner.emulator.core.groups import ErrorGroups
from runner.emulator.core.realruns import RealJob
from runner.emulator.core.simulation import SessionRun, not_run, plan_run, render_run
from runner.emulator.core.world import Mode, Settings, WorldCheck
from runner.models import NO_MATCHING_CHECKS, SessionResult, Target, TestSession, TriggerRequest

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt
    from runner.state.store import SessionRow, StateFile  # with a state file only (backend.py)


@dataclass
class Session:
    id: str
    account_id: str
    name: str
    location: str
    metadata: dict[str, Any] | None
    start: float
    runs: list[SessionRun] = field(default_factory=list)  # add each with `add`
    cancelled_at: float | None = None
    # Set on cancel, reset and emulator stop: the session's real runs end within a second.
    stop: threading.Event = field(default_factory=threading.Event)
    # The runs with no end yet, and the latest end of the others: a long poll asks for `end` on
    # every wake (each finished attempt of a real check), which must not read all the runs.
    _open: int = field(default=0, init=False, repr=False)
    _latest: float | None = field(default=None, init=False, repr=False)
    # The rows of each run as last rendered, by its index in `runs`, with what they were made of
    # (`_rows_key`): a session of 10,000 checks is read many times while it runs, and most of its
    # runs show the same rows read after read (an ended run's never change: its failures are
    # recorded in their groups before it is rendered; a run waiting for a worker stays RUNNING).
    rendered: dict[int, tuple[object, list[SessionResult]]] = field(
        default_factory=dict, init=False, repr=False
    )
    rendered_link: str = field(default="", init=False, repr=False)  # the link those rows carry

    def add(self, run: SessionRun) -> None:
        self.runs.append(run)
        self._counted(run)

    def ended(self, run: SessionRun, was_open: bool) -> None:
        """A run of this session got its end (a real run's final attempt); `was_open`: it had none."""
        if was_open:
            self._open -= 1
        self._counted(run)

    def _counted(self, run: SessionRun) -> None:
        end = run.end
        if end is None:
            self._open += 1
        elif self._latest is None or end > self._latest:
            self._latest = end

    @property
    def end(self) -> float | None:
        if self._open:
            return None
        return self.start if self._latest is None else self._latest


@dataclass(frozen=True)
class SessionRecord:
    """A session as stored, copied out for tests and benchmarks (times in simulated seconds)."""

    id: str
    account_id: str
    name: str
    location: str
    metadata: dict[str, Any] | None
    check_ids: tuple[str, ...]
    start: float
    end: float | None
    cancelled_at: float | None


@dataclass(frozen=True)
class StoredSession:
    """A session of an earlier process (or from before a reset), read back from the state file: final,
    as it was last rendered (one that was still running is CANCELLED, see state.py)."""

    id: str
    account_id: str
    row: SessionRow


def match_checks(account: AccountState, request: TriggerRequest) -> list[WorldCheck]:
    """The account's checks the trigger's target selects: with tags and ids both given, a check must
    pass both filters."""
    target = request.target or Target()
    return [c for c in account.checks.values() if target.selects(c.id, c.tags, c.activated)]


class Sessions:
    """Not thread-safe: the Backend calls it under its lock."""

    def __init__(self, clock: SimClock, groups: ErrorGroups, state: StateFile | None = None) -> None:
        self._clock = clock
        self._groups = groups  # failures are recorded in their error group as they happen
        self._sessions: dict[str, Session] = {}
        self._state = state  # with --state: each rendering that shows a change is saved

    def abandon(self, base_url: str) -> None:
        """Before the sessions are dropped (reset, stop), with a state file: each is saved as it is
        now, the running ones cancelled first, so the file never keeps a session that no process runs."""
        if self._state is None:
            return
        for session in self._sessions.values():
            self.cancel(session)  # does nothing to a session that has ended
            self.render(session, base_url)

    def clear(self) -> None:
        self.stop_all()
        self._sessions.clear()

    def stop_all(self) -> None:
        """Stops every real run (a reset, the emulator's stop)."""
        for session in self._sessions.values():
            session.stop.set()

    def created(self) -> Counter[str]:
        """Sessions created per account id."""
        return Counter(session.account_id for session in self._sessions.values())

    def records(self) -> dict[str, SessionRecord]:
        return {s.id: self._record(s) for s in self._sessions.values()}

    @staticmethod
    def _record(s: Session) -> SessionRecord:
        checks = tuple(run.check.id for run in s.runs)
        metadata = copy.deepcopy(s.metadata)
        return SessionRecord(
            s.id, s.account_id, s.name, s.location, metadata, checks, s.start, s.end, s.cancelled_at
        )

    def trigger(
        self, account: AccountState, request: TriggerRequest, settings: Settings, refusal: str | None = None
    ) -> tuple[Session, list[RealJob]]:
        """The new session and the real runs to hand to the executor's pool. `refusal`: why real
        checks may not run for this caller (each then fails closed with it)."""
        if not account.world.plan.testSessions:
            raise ApiFailure(402, "Test sessions are not available on this account's plan")
        if request.runLocation not in settings.locations:
            raise ApiFailure(400, "runLocation: unknown location; allowed: " + ", ".join(settings.locations))
        matched = match_checks(account, request)
        if settings.notRunnable == "skip":
            matched = [check for check in matched if check.plan.mode is not Mode.NOT_RUNNABLE]
        if not matched:
            # As production: a 403 with this errorCode, the one no-match signal a client reads.
            raise ApiFailure(403, "No checks matched the target", error_code=NO_MATCHING_CHECKS)
        env: dict[str, str | None] = {v.key: v.value for v in request.environmentVariables or []}
        start = self._clock.now()
        # Only what was given: production's schema has no null metadata (nor null fields in it).
        metadata = request.metadata.model_dump(mode="json", exclude_none=True) if request.metadata else None
        session = Session(
            str(uuid.uuid4()), account.world.id, request.name, request.runLocation, metadata, start
        )
        variables = VariableSources(
            session=tuple(variables_from(request.environmentVariables)),
            account=tuple(variables_from(account.world.environmentVariables)),
            runtime={"ACCOUNT_ID": account.world.id, "REGION": request.runLocation},
        )
        limits = Limits(body_cap_bytes=settings.executor.bodyBytes)
        jobs: list[RealJob] = []
        for check in matched:
            max_run = settings.max_run_seconds(check)
            plan = check.plan
            # As production: the session's retry strategy, else the check's own.
            retry = request.retryStrategy or check.retryStrategy
            if plan.mode is Mode.NOT_RUNNABLE:
                reason = plan.reason or "it cannot run here"
                session.add(
                    not_run(
                        check,
                        start,
                        cannot_run_message(reason, plan.leave_out),
                        FailureKind.NOT_RUNNABLE_LOCALLY,
                    )
                )
            elif plan.mode is Mode.SCRIPTED or plan.definition is None:
                session.add(plan_run(check, start, env, retry, max_run))
            elif refusal is not None:
                session.add(not_run(check, start, refusal, FailureKind.REFUSED))
            else:
                run = realruns.open_run(check, start)
                session.add(run)
                definition, stop = plan.definition, session.stop
                jobs.append(RealJob(session, run, definition, variables, retry, max_run, limits, stop))
        self._sessions[session.id] = session
        return session, jobs

    # --- what a real run's worker reports (the Backend calls these under its lock) ---------------

    def _live(self, job: RealJob) -> Session | None:
        """The job's session; None once it was cancelled or dropped (reset): its reports are ignored."""
        session = job.owner
        if (
            isinstance(session, Session)
            and self._sessions.get(session.id) is session
            and session.cancelled_at is None
        ):
            return session
        return None

    def attempt_started(self, job: RealJob) -> None:
        if self._live(job):
            realruns.begin(job.run, self._clock.now())

    def attempt_planned(self, job: RealJob, delay_seconds: float) -> float:
        """The retry's planned start in simulated time: a backoff is simulated seconds, as every
        other time of the emulator (at speed 10, a 5 s backoff is half a real second)."""
        at = self._clock.now() + delay_seconds
        if self._live(job):
            realruns.plan_next(job.run, at)
        return at

    def attempt_finished(self, job: RealJob, attempt: Attempt, final: bool) -> bool:
        """True when the session's end became known with it (its last open run ended)."""
        session = self._live(job)
        if session is None:
            return False
        was_open = job.run.end is None
        realruns.finish(job.run, attempt, final, self._clock.now())
        if job.run.end is None:
            return False
        session.ended(job.run, was_open)
        return was_open and session.end is not None

    def get(self, account_id: str, session_id: str) -> Session | StoredSession:
        session = self.find(session_id)
        if session is None or session.account_id != account_id:
            raise not_found("Test session")
        return session

    def find(self, session_id: str) -> Session | StoredSession | None:
        """A session of any account: of this process, else one the state file keeps."""
        session = self._sessions.get(session_id)
        if session is not None or self._state is None:
            return session
        row = self._state.session(session_id)
        return StoredSession(row.id, row.account_id, row) if row else None

    def real_seconds_to_end(self, session: Session | StoredSession) -> float | None:
        """Real seconds until the session is final; None when it never ends on its own."""
        if isinstance(session, StoredSession) or session.cancelled_at is not None:
            return 0.0
        end = session.end
        return None if end is None else self._clock.real_seconds_until(end)

    def cancel(self, session: Session | StoredSession) -> None:
        if isinstance(session, StoredSession):
            return  # final
        now = self._clock.now()
        end = session.end
        if session.cancelled_at is None and (end is None or end > now):
            self._materialize(session, now)
            session.cancelled_at = now
        session.stop.set()

    def _view_time(self, session: Session) -> float:
        now = self._clock.now()
        return min(now, session.cancelled_at) if session.cancelled_at is not None else now

    def _materialize(self, session: Session, at: float) -> None:
        """Records every failure that has happened by `at` in its test-session error group."""
        environment = (session.metadata or {}).get("environment")
        for run in session.runs:
            for slot in run.slots:
                attempt = slot.attempt
                if attempt is None or attempt.passed or slot.group_id or slot.end is None or slot.end > at:
                    continue
                slot.group_id = self._groups.record(
                    session.account_id, run.check, attempt.failure_message or "", slot.end, environment,
                    None if run.scripted else attempt,  # a script's failure is analysed from its message
                )  # fmt: skip

    def render(self, session: Session | StoredSession, base_url: str) -> TestSession:
        """The session as the API shows it now."""
        if isinstance(session, StoredSession):
            return _stored_rendering(session.row, base_url)
        clock = self._clock
        at = self._view_time(session)
        self._materialize(session, at)
        link = f"{base_url}/sessions/{session.id}"
        cancelled = session.cancelled_at is not None
        results: list[SessionResult] = []
        if session.rendered_link != link:
            session.rendered.clear()
            session.rendered_link = link
        rendered = session.rendered
        for index, run in enumerate(session.runs):
            held = rendered.get(index)
            key = _ENDED if held is not None and held[0] is _ENDED else _rows_key(run, at, cancelled)
            if held is not None and key is not None and held[0] == key:
                rows = held[1]
            else:
                rows = render_run(run, at, cancelled, session.location, link, clock.moment)
                if key is not None:
                    rendered[index] = (key, rows)
            results.extend(rows)
        finals = [r for r in results if r.resultType == "FINAL"]
        end = session.end
        if cancelled:
            status, stopped = "CANCELLED", session.cancelled_at
        elif end is not None and end <= at:
            status = "FAILED" if any(r.status == "FAILED" for r in finals) else "PASSED"
            stopped = end
        else:
            status, stopped = "RUNNING", None
        group_ids: list[str] = []
        for row in results:
            group_ids.extend(g for g in row.errorGroupIds if g not in group_ids)
        # Only what was given is set: no `metadata: null` when the trigger sent none (the route
        # leaves unset fields out).
        given = {} if session.metadata is None else {"metadata": session.metadata}
        rendering = TestSession(
            testSessionId=session.id,
            testSessionLink=link,
            name=session.name,
            status=status,
            errorGroupIds=group_ids,
            startedAt=clock.iso(session.start),
            timeElapsed=round(((stopped if stopped is not None else at) - session.start) * 1000),
            stoppedAt=clock.iso(stopped) if stopped is not None else None,
            results=results,
            **given,
        )
        if self._state is not None:
            self._state.save_session(session.account_id, rendering, base_url, clock.to_epoch(at))
        return rendering


_ENDED = object()  # the key of an ended run's rows: they never change


def _rows_key(run: SessionRun, at: float, cancelled: bool) -> object | None:
    """What a run's rows are made of at `at` (simulation.render_run): _ENDED once it has ended;
    while open, its attempts, the last one's start and end, which have begun and which have ended
    by `at`; None for an open run of a cancelled session (its row shows `at`: made every time)."""
    end = run.end
    if end is not None and end <= at:
        return _ENDED
    if cancelled:
        return None
    last = run.slots[-1]
    ended = sum(1 for s in run.slots if s.end is not None and s.end <= at)
    return (len(run.slots), last.start, last.end, last.start <= at, ended)


def _stored_rendering(row: SessionRow, base_url: str) -> TestSession:
    """A stored rendering, its links moved to where this emulator listens now."""

    def moved(link: Any) -> Any:
        if isinstance(link, str) and row.base_url and link.startswith(row.base_url + "/"):
            return base_url + link[len(row.base_url) :]
        return link

    body = dict(row.body)
    if "testSessionLink" in body:
        body["testSessionLink"] = moved(body["testSessionLink"])
    body["results"] = [
        {**r, "testSessionResultLink": moved(r.get("testSessionResultLink"))} if isinstance(r, dict) else r
        for r in body.get("results") or []
    ]
    return TestSession.model_validate(body)
