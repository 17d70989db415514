"""All emulator state and behaviour, without HTTP: the routes in app.py are thin wrappers around this."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from http import HTTPStatus
from typing import Any

from runner.emulator.clock import SimClock
from runner.emulator.grouping import clean_message, error_hash
from runner.emulator.simulation import CheckRun, plan_run, render_run
from runner.emulator.world import Account, World, WorldCheck, WorldErrorGroup, load_world, seen_at
from runner.models import (
    NO_MATCHING_CHECKS,
    Analysis,
    AnalysisSummary,
    Check,
    CheckUpdate,
    Dashboard,
    DashboardRequest,
    ErrorGroup,
    IncidentUpdate,
    IncidentUpdateRequest,
    RootCauseAnalysis,
    SessionResult,
    TestSession,
    TriggerRequest,
    frequency_offset_problem,
)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PROVIDER = "emulator"


class ApiFailure(Exception):
    """An error answer of the API: status, message and optional attributes and headers."""

    def __init__(
        self,
        status: int,
        message: str,
        attributes: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        error_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.attributes = attributes
        self.headers = headers or {}
        self.error_code = error_code  # the body's errorCode, e.g. ERR_NO_MATCHING_CHECKS


def _not_found(what: str) -> ApiFailure:
    return ApiFailure(404, f"{what} not found")


@dataclass
class Session:
    id: str
    account_id: str
    name: str
    location: str
    metadata: dict[str, Any] | None
    start: float
    runs: list[CheckRun]
    cancelled_at: float | None = None

    @property
    def end(self) -> float | None:
        ends = [run.end for run in self.runs]
        return (
            None
            if any(end is None for end in ends)
            else max((e for e in ends if e is not None), default=self.start)
        )


@dataclass
class Group:
    id: str
    account_id: str
    kind: str  # "test-session" or "check"
    check: WorldCheck
    raw: str
    cleaned: str
    hash: str
    first_seen: float
    last_seen: float
    analyses: list[str] = field(default_factory=list)  # newest first


@dataclass
class AnalysisJob:
    id: str
    account_id: str
    group_id: str
    created: float
    ready_at: float
    user_context: str | None
    content: Analysis | None = None
    model: str | None = None


@dataclass
class AccountState:
    world: Account
    checks: dict[str, WorldCheck]
    check_extras: dict[str, dict[str, Any]]
    incidents: set[str]
    windows: dict[str, set[str]]
    certificates: set[str]


class Backend:
    """The emulated service. Thread-safe; every public method takes the lock."""

    def __init__(self, world: World | None = None, speed: float | None = None) -> None:
        from runner.emulator.faults import FaultInjector

        self._lock = threading.RLock()
        self.world = world or load_world()
        self._speed = speed  # the start's --speed, which wins over every world's
        self.clock = SimClock(speed or self.world.settings.speed)
        self.faults = FaultInjector(self.world.settings.seed)
        self.base_url = ""
        self._listeners: set[Callable[[], None]] = set()
        self.load(self.world)

    # --- state -------------------------------------------------------------------------------

    def load(self, world: World) -> None:
        """Replaces all state with a fresh copy of `world`, its settings included (speed, rate limit,
        analysis delay, faults: what PATCH /_emulator/settings changed is undone). The clock keeps
        running, at the world's speed (or the start's --speed)."""
        from runner.emulator.faults import FaultSpec

        with self._lock:
            self.world = world
            self.settings = world.settings.model_copy(deep=True)
            self.clock.set_speed(self._speed or world.settings.speed)
            self.faults.clear()
            for spec in world.settings.faults:
                self.faults.add(FaultSpec.model_validate(spec))
            self.accounts: dict[str, AccountState] = {}
            self.keys: dict[str, tuple[str, str]] = {}  # key -> (account id, role)
            self.revoked: set[str] = set()
            self.sessions: dict[str, Session] = {}
            self.groups: dict[str, Group] = {}
            self.group_index: dict[tuple[str, str, str], str] = {}
            self.analyses: dict[str, AnalysisJob] = {}
            self.dashboards: dict[str, tuple[str, Dashboard]] = {}  # id -> (account id, dashboard)
            self.taken: set[str] = set()
            self.incident_updates: list[tuple[str, IncidentUpdate]] = []  # (incident id, update)
            self.windows_used: dict[str, deque[float]] = {}
            self.stats_sessions: Counter[str] = Counter()
            self.stats_requests: dict[str, Counter[str]] = {}
            self.rate_limited = 0
            for account in world.accounts:
                self._load_account(account)
        self._notify()

    def _load_account(self, account: Account) -> None:
        state = AccountState(
            world=account,
            checks={c.id: c.model_copy(deep=True) for c in account.checks},
            check_extras={},
            incidents={i.id for i in account.incidents},
            windows={str(w.id): set(w.maintenances) for w in account.maintenanceWindows},
            certificates={c.id for c in account.clientCertificates},
        )
        self.accounts[account.id] = state
        for key in account.keys:
            self.keys[key.key] = (account.id, key.role)
        for dashboard in account.dashboards:
            self.taken.update(x.lower() for x in (dashboard.customUrl, dashboard.customDomain) if x)
        now = self.clock.now()
        for spec in account.errorGroups:
            check = state.checks[spec.checkId]
            cleaned = clean_message(spec.rawErrorMessage)
            first, last = self._seen(spec, now)
            group = Group(
                spec.id,
                account.id,
                spec.kind,
                check,
                spec.rawErrorMessage,
                cleaned,
                error_hash(cleaned),
                first,
                last,
            )
            self.groups[group.id] = group
            if spec.kind == "test-session":  # later sessions failing the same way land in it
                self.group_index[(account.id, check.id, group.hash)] = group.id
            for existing in spec.analyses:
                job = AnalysisJob(
                    existing.id, account.id, group.id, now - 3600, now - 3600, existing.userContext
                )
                self.analyses[job.id] = job
                group.analyses.append(job.id)

    def _seen(self, spec: WorldErrorGroup, now: float) -> tuple[float, float]:
        """(firstSeen, lastSeen) in simulated time: relative ones from now, absolute ones as given."""

        def sim(value: str) -> float:
            moment = seen_at(value)
            if isinstance(moment, timedelta):
                return now + moment.total_seconds()
            return self.clock.from_datetime(moment)

        first = sim(spec.firstSeen) if spec.firstSeen else now - 86400
        last = sim(spec.lastSeen) if spec.lastSeen else (first if spec.firstSeen else now - 3600)
        return first, max(first, last)

    def reset(self) -> None:
        """Back to the loaded world: its accounts, sessions and settings, as right after loading."""
        self.load(self.world)

    # --- change notification (long polls wake on cancel, clock moves, resets) ----------------

    def add_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.add(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.discard(listener)

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self._notify()

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
            self.windows_used.clear()
            result = self.settings_view()
        self._notify()
        return result

    def settings_view(self) -> dict[str, Any]:
        data = self.settings.model_dump(mode="json", exclude={"faults"})
        data["speed"] = self.clock.speed
        return data

    def revoke_key(self, key: str) -> bool:
        with self._lock:
            known = key in self.keys
            if known:
                self.revoked.add(key)
            return known

    # --- auth, rate limit, stats -------------------------------------------------------------

    def authenticate(self, authorization: str | None, account_header: str | None, method: str) -> str:
        """The account id of a request, or the 401/403/429 it deserves."""
        scheme, _, key = (authorization or "").strip().partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise ApiFailure(401, "Bad Token", {"reason": "missing bearer credential"})
        with self._lock:
            found = self.keys.get(key)
            if found is None or key in self.revoked:
                reason = "revoked key" if found else "unknown key"
                raise ApiFailure(401, "Bad Token", {"reason": reason})
            self._rate_limit(key)
            account_id, role = found
        name = self.settings.accountHeader
        if not account_header:
            raise ApiFailure(403, f"Forbidden: the {name} header is missing")
        if account_header.strip() != account_id:
            raise ApiFailure(403, f"Forbidden: the key does not belong to the account in {name}")
        if role == "read-only" and method.upper() in WRITE_METHODS:
            raise ApiFailure(403, "Forbidden: this key is read-only")
        return account_id

    def _rate_limit(self, key: str) -> None:
        limit = self.settings.rateLimit
        now = time.monotonic()
        used = self.windows_used.setdefault(key, deque())
        while used and used[0] <= now - limit.windowSeconds:
            used.popleft()
        if len(used) >= limit.limit:
            retry_after = max(1, math.ceil(used[0] + limit.windowSeconds - now))
            attributes = {
                "limit": limit.limit,
                "windowSeconds": limit.windowSeconds,
                "retryAfterSeconds": retry_after,
            }
            raise ApiFailure(429, HTTPStatus(429).phrase, attributes, {"Retry-After": str(retry_after)})
        used.append(now)

    def record_request(self, route: str, status: int) -> None:
        with self._lock:
            self.stats_requests.setdefault(route, Counter())[str(status)] += 1
            if status == 429:
                self.rate_limited += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "sessionsCreated": dict(self.stats_sessions),
                "sessionsTotal": sum(self.stats_sessions.values()),
                "requests": {route: dict(counts) for route, counts in self.stats_requests.items()},
                "requestsTotal": sum(sum(c.values()) for c in self.stats_requests.values()),
                "rateLimited": self.rate_limited,
                "analysesCreated": len(self.analyses),
            }

    # --- test sessions -----------------------------------------------------------------------

    def _account(self, account_id: str) -> AccountState:
        return self.accounts[account_id]

    def trigger(self, account_id: str, request: TriggerRequest) -> TestSession:
        with self._lock:
            account = self._account(account_id)
            if not account.world.plan.testSessions:
                raise ApiFailure(402, "Test sessions are not available on this account's plan")
            if request.runLocation not in self.settings.locations:
                raise ApiFailure(
                    400, "runLocation: unknown location; allowed: " + ", ".join(self.settings.locations)
                )
            checks = self._match(account, request)
            if not checks:
                # As production: a 403 with this errorCode, the one no-match signal a client reads.
                raise ApiFailure(403, "No checks matched the target", error_code=NO_MATCHING_CHECKS)
            env: dict[str, str | None] = {v.key: v.value for v in request.environmentVariables or []}
            start = self.clock.now()
            runs = [
                plan_run(check, start, env, request.retryStrategy, self.settings.max_run_seconds(check))
                for check in checks
            ]
            # Only what was given: production's schema has no null metadata (nor null fields in it).
            metadata = (
                request.metadata.model_dump(mode="json", exclude_none=True) if request.metadata else None
            )
            session = Session(
                str(uuid.uuid4()), account_id, request.name, request.runLocation, metadata, start, runs
            )
            self.sessions[session.id] = session
            self.stats_sessions[account_id] += 1
            return self._render(session)

    @staticmethod
    def _match(account: AccountState, request: TriggerRequest) -> list[WorldCheck]:
        target = request.target
        matched = []
        for check in account.checks.values():
            if not check.activated and not (target and target.allowDeactivated):
                continue
            if (
                target
                and target.matchTags
                and not any(all(t in check.tags for t in group) for group in target.matchTags)
            ):
                continue
            if target and target.checkId and check.id not in target.checkId:
                continue
            matched.append(check)
        return matched

    def _session(self, account_id: str, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.account_id != account_id:
            raise _not_found("Test session")
        return session

    def _view_time(self, session: Session) -> float:
        now = self.clock.now()
        return min(now, session.cancelled_at) if session.cancelled_at is not None else now

    def _materialize(self, session: Session, at: float) -> None:
        """Records every failure that has happened by `at` in its test-session error group."""
        for run in session.runs:
            for attempt in run.attempts:
                if attempt.passed or attempt.group_id or attempt.end is None or attempt.end > at:
                    continue
                attempt.group_id = self._record_error(
                    session.account_id, run.check, attempt.message or "", attempt.end
                )

    def _record_error(self, account_id: str, check: WorldCheck, raw: str, seen: float) -> str:
        cleaned = clean_message(raw)
        digest = error_hash(cleaned)
        key = (account_id, check.id, digest)
        group_id = self.group_index.get(key)
        if group_id is not None:
            group = self.groups[group_id]
            group.last_seen = max(group.last_seen, seen)
            group.raw = raw
            return group_id
        group = Group(str(uuid.uuid4()), account_id, "test-session", check, raw, cleaned, digest, seen, seen)
        self.groups[group.id] = group
        self.group_index[key] = group.id
        return group.id

    def _render(self, session: Session) -> TestSession:
        at = self._view_time(session)
        self._materialize(session, at)
        link = f"{self.base_url}/sessions/{session.id}"
        cancelled = session.cancelled_at is not None
        results: list[SessionResult] = []
        for run in session.runs:
            results.extend(render_run(run, at, cancelled, session.location, link, self.clock.iso))
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
        return TestSession(
            testSessionId=session.id,
            testSessionLink=link,
            name=session.name,
            status=status,
            errorGroupIds=group_ids,
            startedAt=self.clock.iso(session.start),
            timeElapsed=round(((stopped if stopped is not None else at) - session.start) * 1000),
            stoppedAt=self.clock.iso(stopped) if stopped is not None else None,
            results=results,
            **given,
        )

    def get_session(self, account_id: str, session_id: str) -> TestSession:
        with self._lock:
            return self._render(self._session(account_id, session_id))

    def find_session(self, session_id: str) -> dict[str, Any] | None:
        """A session of any account as JSON data (for the unauthenticated HTML pages)."""
        with self._lock:
            session = self.sessions.get(session_id)
            return self._render(session).model_dump(mode="json") if session else None

    def real_seconds_to_end(self, account_id: str, session_id: str) -> float | None:
        """Real seconds until the session is final; None when it never ends on its own."""
        with self._lock:
            session = self._session(account_id, session_id)
            if session.cancelled_at is not None:
                return 0.0
            end = session.end
            return None if end is None else self.clock.real_seconds_until(end)

    def cancel(self, account_id: str, session_id: str) -> None:
        with self._lock:
            session = self._session(account_id, session_id)
            now = self.clock.now()
            end = session.end
            if session.cancelled_at is None and (end is None or end > now):
                self._materialize(session, now)
                session.cancelled_at = now
        self._notify()

    # --- error groups and analyses -----------------------------------------------------------

    def _group(self, account_id: str, group_id: str, kind: str) -> Group:
        group = self.groups.get(group_id)
        if group is None or group.account_id != account_id or group.kind != kind:
            raise _not_found("Error group")
        return group

    def get_group(self, account_id: str, group_id: str, kind: str) -> ErrorGroup:
        with self._lock:
            group = self._group(account_id, group_id, kind)
            return ErrorGroup(
                id=group.id,
                checkId=group.check.id,
                errorHash=group.hash,
                rawErrorMessage=group.raw,
                cleanedErrorMessage=group.cleaned,
                firstSeen=self.clock.iso(group.first_seen),
                lastSeen=self.clock.iso(group.last_seen),
                archivedUntilNextEvent=False,
                rootCauseAnalyses=[self._summary(self.analyses[a]) for a in group.analyses],
            )

    def create_analysis(
        self, account_id: str, group_id: str, kind: str, user_context: str | None
    ) -> RootCauseAnalysis:
        with self._lock:
            if not self._account(account_id).world.plan.analyses:
                raise ApiFailure(402, "Root cause analyses are not available on this account's plan")
            group = self._group(account_id, group_id, kind)
            now = self.clock.now()
            job = AnalysisJob(
                str(uuid.uuid4()),
                account_id,
                group.id,
                now,
                now + self.settings.analysisDelaySeconds,
                user_context,
            )
            self.analyses[job.id] = job
            group.analyses.insert(0, job.id)
            return RootCauseAnalysis(id=job.id, status="PENDING")

    def _complete(self, job: AnalysisJob) -> Analysis | None:
        """The analysis content once its simulated generation time is over, else None."""
        if self.clock.now() < job.ready_at:
            return None
        if job.content is None:
            from runner.emulator.analyser import analyse

            group = self.groups[job.group_id]
            job.content, job.model = analyse(group.raw, group.check.checkType, group.check.name)
        return job.content

    def _summary(self, job: AnalysisJob) -> AnalysisSummary:
        content = self._complete(job)
        return AnalysisSummary(
            id=job.id,
            status="COMPLETED" if content else "PENDING",  # not a field of the summary: an extra one
            created_at=self.clock.iso(job.created),
            analysis=content,
            provider=PROVIDER if content else None,
            model=job.model,
            durationMs=round((job.ready_at - job.created) * 1000) if content else None,
            userContext=job.user_context,
        )

    def get_analysis(self, account_id: str, analysis_id: str) -> RootCauseAnalysis:
        """Pending (id and status only) or completed."""
        with self._lock:
            job = self.analyses.get(analysis_id)
            if job is None or job.account_id != account_id:
                raise _not_found("Root cause analysis")
            content = self._complete(job)
            if content is None:
                return RootCauseAnalysis(id=job.id, status="PENDING")
            group = self.groups[job.group_id]
            return RootCauseAnalysis(
                id=job.id,
                status="COMPLETED",
                checkType=group.check.checkType,
                provider=PROVIDER,
                model=job.model,
                checkId=group.check.id,
                errorGroupId=group.id,
                durationMs=round((job.ready_at - job.created) * 1000),
                analysis=content,
                created_at=self.clock.iso(job.created),
            )

    # --- other resources ---------------------------------------------------------------------

    def add_incident_update(
        self, account_id: str, incident_id: str, request: IncidentUpdateRequest
    ) -> IncidentUpdate:
        with self._lock:
            if incident_id not in self._account(account_id).incidents:
                raise _not_found("Incident")
            now = self.clock.iso(self.clock.now())
            update = IncidentUpdate(
                id=request.id or str(uuid.uuid4()),
                description=request.description,
                status=request.status or "INVESTIGATING",
                publicIncidentUpdateDate=request.publicIncidentUpdateDate or now,
                created_at=request.created_at or now[:10],
                notifySubscribers=request.notifySubscribers,
            )
            self.incident_updates.append((incident_id, update))
            return update

    def delete_maintenance_window(self, account_id: str, window_id: str) -> None:
        with self._lock:
            if self._account(account_id).windows.pop(window_id, None) is None:
                raise _not_found("Maintenance window")

    def delete_maintenance(self, account_id: str, window_id: str, maintenance_id: str) -> None:
        with self._lock:
            window = self._account(account_id).windows.get(window_id)
            if window is None or maintenance_id not in window:
                raise _not_found("Maintenance")
            window.discard(maintenance_id)

    def delete_client_certificate(self, account_id: str, certificate_id: str) -> None:
        with self._lock:
            certificates = self._account(account_id).certificates
            if certificate_id not in certificates:
                raise _not_found("Client certificate")
            certificates.discard(certificate_id)

    def create_dashboard(self, account_id: str, request: DashboardRequest) -> Dashboard:
        with self._lock:
            for name in ("customUrl", "customDomain"):
                value = getattr(request, name)
                if value and value.lower() in self.taken:
                    raise ApiFailure(409, f"{name} is already taken")
            self.taken.update(x.lower() for x in (request.customUrl, request.customDomain) if x)
            # As production: a numeric id and a string dashboardId.
            number = len(self.dashboards) + 1
            dashboard = Dashboard.model_validate(
                {
                    **request.model_dump(mode="json"),
                    "id": number,
                    "dashboardId": str(uuid.uuid4()),
                    "created_at": self.clock.iso(self.clock.now()),
                }
            )
            self.dashboards[str(number)] = (account_id, dashboard)
            return dashboard

    def update_check(
        self, account_id: str, check_id: str, update: CheckUpdate, auto_assign: bool
    ) -> Check:
        with self._lock:
            account = self._account(account_id)
            check = account.checks.get(check_id)
            if check is None:
                raise _not_found("Check")
            changes = update.model_dump(exclude_unset=True)
            frequency = update.frequency if update.frequency is not None else check.frequency
            offset = update.frequencyOffset if update.frequencyOffset is not None else check.frequencyOffset
            check_type = update.checkType or check.checkType
            if "frequency" in changes or "frequencyOffset" in changes:
                problem = None
                if offset is not None:
                    problem = frequency_offset_problem(frequency, offset, check_type)
                elif frequency == 0 and check_type != "API":
                    problem = "frequency 0 (sub-minute) is allowed for API checks only"
                if problem:
                    raise ApiFailure(400, f"frequencyOffset: {problem}")
            known = {k: v for k, v in changes.items() if k in WorldCheck.model_fields and v is not None}
            account.checks[check_id] = check = check.model_copy(update=known)
            extras = account.check_extras.setdefault(check_id, {})
            extras.update(
                {
                    k: v
                    for k, v in update.model_dump(mode="json", exclude_unset=True).items()
                    if k not in known
                }
            )
            extras["autoAssignAlerts"] = auto_assign
            view = check.model_dump(
                mode="json",
                include={
                    "id",
                    "name",
                    "checkType",
                    "activated",
                    "tags",
                    "locations",
                    "frequency",
                    "frequencyOffset",
                },
            )
            # The fields the check has, then whatever else the update set (kept as extra fields).
            return Check.model_validate({**extras, **view})
