"""The emulated service without HTTP: one facade over the state, split per resource as moto's backends
are (keys, accounts, sessions, error groups). The table of handlers (answers.py) is a thin layer on it.

Thread-safe: every public method takes the one lock, and the stores behind it are only ever called
under it. Tests and benchmarks read the state through `snapshot()`, a copy taken under the lock.

With a state file (`state=PATH`, state/store.py), the error groups and sessions stores save every change
to it and read back what earlier runs left; `close()` releases it.
Checks that run for real do so on the pool's daemon threads (realruns.py), which report back through
the `attempt_*` methods, under the lock too.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.checks.protocols import SELF_QUEUED
from runner.core.threads import DaemonPool
from runner.emulator.core.accounts import Accounts, CheckFilter, CheckPage
from runner.emulator.core.clock import SimClock
from runner.emulator.core.failures import ApiFailure
from runner.emulator.core.faults import FaultInjector
from runner.emulator.core.groups import ErrorGroups
from runner.emulator.core.keys import Keys, bearer_key, rate_limited, real_checks_refusal
from runner.emulator.core.realruns import SELF_QUEUED_LIMIT, RealJob, execute
from runner.emulator.core.sessions import SessionRecord, Sessions
from runner.emulator.core.world import Settings, World, WorldCheck, load_world
from runner.models import (
    Check,
    CheckUpdate,
    Dashboard,
    DashboardRequest,
    ErrorGroup,
    IncidentUpdate,
    IncidentUpdateRequest,
    RootCauseAnalysis,
    TestSession,
    TriggerRequest,
)

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt
    from runner.state.store import StateFile

# A thread of the real-check pools with no check for this long ends: a server's pool between bursts.
IDLE_SECONDS = 30.0


@dataclass(frozen=True)
class Snapshot:
    """The emulator's state at one moment, copied out (changing it changes nothing in the emulator)."""

    sessions: dict[str, SessionRecord]  # by id, in the order they were triggered (by this process)
    checks: dict[str, dict[str, WorldCheck]]  # account id -> check id -> the check, updates applied
    incident_updates: list[tuple[str, IncidentUpdate]]  # (incident id, update)
    dashboards: dict[str, tuple[str, Dashboard]]  # id -> (account id, dashboard)


class Backend:
    """The emulated service."""

    def __init__(
        self, world: World | None = None, speed: float | None = None, state: str | Path | None = None
    ) -> None:
        self._lock = threading.RLock()
        # Replaced whole under the lock, read without it: every finished attempt of a real check
        # notifies, and taking the Backend's lock for that made 16 engine threads queue on it.
        self._listeners: frozenset[Callable[[], None]] = frozenset()
        self.world: World = world or load_world()
        self._speed = speed  # the start's --speed, which wins over every world's
        self.settings: Settings = self.world.settings.model_copy(deep=True)  # as changed at run time
        # The clock and the injector's random sequence outlive a reset: simulated time never jumps back.
        self.clock = SimClock(speed or self.world.settings.speed)
        self.faults = FaultInjector(self.world.settings.seed)
        self.base_url = ""  # where the server listens, once it does: session links point there
        self.state: StateFile | None = None
        if state is not None:
            # Imported only with a state file (--state), as in sessions.py and groups.py: a run
            # without one has no use for its store and rows (start-up).
            from runner.state.store import StateFile

            self.state = StateFile.open(state)
        if self.state is not None:
            self._catch_up(self.state)
        self._keys = Keys()
        self._accounts = Accounts(self.clock)
        self._groups = ErrorGroups(self.clock, self.state)
        self._sessions = Sessions(self.clock, self._groups, self.state)
        self._requests: dict[str, Counter[str]] = {}  # operation name -> status -> requests
        # Real checks, at most executor.concurrency at once; a thread idle for IDLE_SECONDS ends.
        self._pool = DaemonPool(self.world.settings.executor.concurrency, "real-check", IDLE_SECONDS)
        # Browser checks: their protocol queues them itself.
        self._self_queued = DaemonPool(SELF_QUEUED_LIMIT, "real-browser-check", IDLE_SECONDS)
        # Reachable from other machines (the server binds beyond loopback): real checks then run only
        # for keys of the caller's own, never for the documented demo keys (keys.real_checks_refusal).
        self.exposed = False
        self.stopping = False  # set by shutdown: a long poll answers at once (408) instead of waiting on
        try:
            self.load(self.world)
        except BaseException:
            self.close()
            raise

    def _catch_up(self, state: StateFile) -> None:
        """Simulated time never goes back, across processes too: at a speed above 1 an earlier run's
        times lie ahead of the wall clock, and this run's sessions must start after them (or a failure
        of that run would look new)."""
        latest = state.latest()
        if latest is not None:
            self.clock.advance(max(0.0, self.clock.from_epoch(latest) - self.clock.now() + 0.001))

    def close(self) -> None:
        """Releases the state file (its running sessions saved as cancelled); without one, nothing."""
        with self._lock:
            if self.state is not None:
                self._sessions.abandon(self.base_url)
                self.state.close()

    # --- state -------------------------------------------------------------------------------

    def load(self, world: World) -> None:
        """Replaces all state with a fresh copy of `world`, its settings included (speed, rate limit,
        analysis delay, faults: what PATCH /_emulator/settings changed is undone). The clock keeps
        running, at the world's speed (or the start's --speed)."""
        with self._lock:
            self.world = world
            self.settings = world.settings.model_copy(deep=True)
            self.clock.set_speed(self._speed or world.settings.speed)
            self._pool.set_limit(world.settings.executor.concurrency)
            self.faults.set(world.settings.faults)
            self._sessions.abandon(self.base_url)  # with a state file: kept there, running ones cancelled
            for store in (self._keys, self._accounts, self._groups, self._sessions):
                store.clear()
            self._requests.clear()
            for account in world.accounts:
                for key in account.keys:
                    self._keys.add(key.key, account.id, key.role)
                state = self._accounts.load(account)
                self._groups.load(account, state.checks)
        self._notify()

    def reset(self) -> None:
        """Back to the loaded world: its accounts, sessions and settings, as right after loading."""
        self.load(self.world)

    def shutdown(self) -> None:
        """Stops every real check run (the server is stopping); the state stays readable."""
        with self._lock:
            self.stopping = True
            self._sessions.stop_all()
        self._notify()  # a long poll still waiting looks again and ends, instead of at its wait's end

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(
                sessions=self._sessions.records(),
                checks=self._accounts.checks(),
                incident_updates=self._accounts.incident_updates(),
                dashboards=self._accounts.dashboards(),
            )

    # --- change notification (long polls wake on cancel, clock moves, resets) ----------------

    def add_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners = self._listeners | {listener}

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners = self._listeners - {listener}

    def _notify(self) -> None:
        for listener in self._listeners:  # one reference read: the set it names never changes
            listener()

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self._notify()

    # --- settings and keys (the control API) -------------------------------------------------

    def update_settings(
        self,
        *,
        limit: int | None = None,
        window_seconds: float | None = None,
        analysis_delay: float | None = None,
        speed: float | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            if limit is not None:
                self.settings.rateLimit.limit = limit
            if window_seconds is not None:
                self.settings.rateLimit.windowSeconds = window_seconds
            if analysis_delay is not None:
                self.settings.analysisDelaySeconds = analysis_delay
            if speed is not None:
                self.clock.set_speed(speed)
            self._keys.forget_windows()
            result = self.settings_view()
        self._notify()
        return result

    def settings_view(self) -> dict[str, Any]:
        with self._lock:
            data = self.settings.model_dump(mode="json", exclude={"faults"})
        data["speed"] = self.clock.speed
        return data

    def revoke_key(self, key: str) -> bool:
        with self._lock:
            return self._keys.revoke(key)

    # --- auth, rate limit, stats -------------------------------------------------------------

    def authenticate(self, authorization: str | None, account_header: str | None, method: str) -> str:
        """The account id of a request, or the 401/403/429 it deserves."""
        with self._lock:
            settings = self.settings
            return self._keys.authenticate(
                authorization, account_header, method, settings.accountHeader, settings.rateLimit
            )

    def rate_limit_failure(self, retry_after: int) -> ApiFailure:
        """The 429 an injected rate_limit fault answers: the limit in force, as a real 429 says it."""
        with self._lock:
            return rate_limited(self.settings.rateLimit, retry_after)

    def record_request(self, route: str, status: int) -> None:
        with self._lock:
            self._requests.setdefault(route, Counter())[str(status)] += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            created = self._sessions.created()
            return {
                "sessionsCreated": dict(created),
                "sessionsTotal": sum(created.values()),
                "requests": {route: dict(counts) for route, counts in self._requests.items()},
                "requestsTotal": sum(sum(c.values()) for c in self._requests.values()),
                "rateLimited": sum(counts["429"] for counts in self._requests.values()),
                "analysesCreated": self._groups.analyses_created,
            }

    # --- test sessions -----------------------------------------------------------------------

    def trigger(
        self, account_id: str, request: TriggerRequest, authorization: str | None = None
    ) -> TestSession:
        """`authorization`: the request's header, to know which key asks for real checks."""
        with self._lock:
            account = self._accounts.get(account_id)
            refusal = real_checks_refusal(bearer_key(authorization)) if self.exposed else None
            session, jobs = self._sessions.trigger(account, request, self.settings, refusal)
            view = self._sessions.render(session, self.base_url)
        for job in jobs:
            pool = self._self_queued if job.definition.checkType in SELF_QUEUED else self._pool
            pool.submit(execute, job, self)
        return view

    # --- what the workers of real checks report (realruns.RealRunHooks) ----------------------

    def attempt_started(self, job: RealJob) -> None:
        with self._lock:
            self._sessions.attempt_started(job)

    def attempt_planned(self, job: RealJob, delay_seconds: float) -> float:
        with self._lock:
            return self._sessions.attempt_planned(job, delay_seconds)

    def real_seconds_until(self, sim_time: float) -> float:
        return self.clock.real_seconds_until(sim_time)  # the clock has its own lock

    def attempt_finished(self, job: RealJob, attempt: Attempt, final: bool) -> None:
        with self._lock:
            ended = self._sessions.attempt_finished(job, attempt, final)
        if ended:  # a long poll waiting for the session's end looks again (not at each of 10,000 checks)
            self._notify()

    def get_session(self, account_id: str, session_id: str) -> TestSession:
        with self._lock:
            return self._sessions.render(self._sessions.get(account_id, session_id), self.base_url)

    def find_session(self, session_id: str) -> dict[str, Any] | None:
        """A session of any account as JSON data (for the unauthenticated HTML pages)."""
        with self._lock:
            session = self._sessions.find(session_id)
            return self._sessions.render(session, self.base_url).model_dump(mode="json") if session else None

    def real_seconds_to_end(self, account_id: str, session_id: str) -> float | None:
        """Real seconds until the session is final; None when it never ends on its own."""
        with self._lock:
            return self._sessions.real_seconds_to_end(self._sessions.get(account_id, session_id))

    def cancel(self, account_id: str, session_id: str) -> None:
        with self._lock:
            session = self._sessions.get(account_id, session_id)
            self._sessions.cancel(session)
            if self.state is not None:
                self._sessions.render(session, self.base_url)  # saves the cancel at once
        self._notify()

    # --- error groups and analyses -----------------------------------------------------------

    def get_group(self, account_id: str, group_id: str, kind: str) -> ErrorGroup:
        with self._lock:
            return self._groups.view(account_id, group_id, kind)

    def create_analysis(
        self, account_id: str, group_id: str, kind: str, user_context: str | None
    ) -> RootCauseAnalysis:
        with self._lock:
            if not self._accounts.get(account_id).world.plan.analyses:
                raise ApiFailure(402, "Root cause analyses are not available on this account's plan")
            delay = self.settings.analysisDelaySeconds
            return self._groups.create_analysis(account_id, group_id, kind, user_context, delay)

    def get_analysis(self, account_id: str, analysis_id: str) -> RootCauseAnalysis:
        """Pending (id and status only) or completed."""
        with self._lock:
            return self._groups.analysis(account_id, analysis_id)

    # --- other resources ---------------------------------------------------------------------

    def add_incident_update(
        self, account_id: str, incident_id: str, request: IncidentUpdateRequest
    ) -> IncidentUpdate:
        with self._lock:
            return self._accounts.add_incident_update(account_id, incident_id, request)

    def delete_maintenance_window(self, account_id: str, window_id: str) -> None:
        with self._lock:
            self._accounts.delete_maintenance_window(account_id, window_id)

    def delete_maintenance(self, account_id: str, window_id: str, maintenance_id: str) -> None:
        with self._lock:
            self._accounts.delete_maintenance(account_id, window_id, maintenance_id)

    def delete_client_certificate(self, account_id: str, certificate_id: str) -> None:
        with self._lock:
            self._accounts.delete_client_certificate(account_id, certificate_id)

    def create_dashboard(self, account_id: str, request: DashboardRequest) -> Dashboard:
        with self._lock:
            return self._accounts.create_dashboard(account_id, request)

    def list_checks(self, account_id: str, where: CheckFilter, page: int, limit: int) -> CheckPage:
        with self._lock:
            return self._accounts.list_checks(account_id, where, page, limit)

    def list_variables(self, account_id: str, page: int, limit: int) -> list[dict[str, Any]]:
        with self._lock:
            return self._accounts.list_variables(account_id, page, limit)

    def get_check(self, account_id: str, check_id: str) -> dict[str, Any]:
        with self._lock:
            return self._accounts.get_check(account_id, check_id)

    def update_check(self, account_id: str, check_id: str, update: CheckUpdate, auto_assign: bool) -> Check:
        with self._lock:
            return self._accounts.update_check(account_id, check_id, update, auto_assign)
