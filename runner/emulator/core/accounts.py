"""Each account's resources besides sessions and error groups: its plan and checks, status page
incidents, maintenance windows, client certificates and dashboards."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from runner.emulator.core.clock import SimClock
from runner.emulator.core.failures import ApiFailure, not_found
from runner.emulator.core.world import SCRIPT_FIELDS, Account, WorldCheck
from runner.models import (
    Check,
    CheckUpdate,
    Dashboard,
    DashboardRequest,
    IncidentUpdate,
    IncidentUpdateRequest,
    describe_validation_error,
    frequency_offset_problem,
)

# What PUT /v1/checks/{id} answers of the check itself; the update's other fields follow as extras.
CHECK_VIEW = {"id", "name", "checkType", "activated", "tags", "locations", "frequency", "frequencyOffset"}
# What GET /v1/checks and /v1/checks/{id} serve of a world check (production's ChecksV1Check): these
# always, then the definition fields it has. A scripted check's own fields (behaviour, when, ...) are
# the emulator's, never served: it is served with what it has of production's shape.
SERVED_ALWAYS = ("id", "name", "checkType", "activated", "tags", "locations", "frequency", "shouldFail")
SERVED_WHEN_SET = (
    "frequencyOffset",
    "request",
    "degradedResponseTime",
    "maxResponseTime",
    "environmentVariables",
    *SCRIPT_FIELDS,
)


@dataclass(frozen=True)
class CheckFilter:
    """GET /v1/checks's filters, as production documents them (OpenAPI getV1Checks)."""

    tags: tuple[str, ...] = ()  # at least one of them
    check_type: str | None = None
    search: str | None = None  # in the name, any case
    url_pattern: str | None = None  # in an API check's request URL; other types are left out

    def matches(self, check: WorldCheck) -> bool:
        if self.tags and not set(self.tags) & set(check.tags):
            return False
        if self.check_type and check.checkType != self.check_type:
            return False
        if self.search and self.search.lower() not in check.name.lower():
            return False
        if self.url_pattern is not None:
            url = (check.request or {}).get("url")
            return check.checkType == "API" and isinstance(url, str) and self.url_pattern in url
        return True


@dataclass(frozen=True)
class CheckPage:
    checks: list[dict[str, Any]]
    first: int  # index of the first check of the page in the whole list, from 0
    total: int


def served_check(check: WorldCheck, extras: dict[str, Any] | None = None) -> dict[str, Any]:
    """A world check as production serves it; a secret variable's value is null, as production's
    (it never reveals one: ai/mcp-server/security-and-permissions.mdx, cli/checkly-env.mdx)."""
    data = check.model_dump(mode="json", warnings=False)  # an update may have set plain dicts
    view = {name: data[name] for name in SERVED_ALWAYS}
    view.update({name: data[name] for name in SERVED_WHEN_SET if data.get(name) not in (None, "", [])})
    if "environmentVariables" in view:
        view["environmentVariables"] = [
            {**variable, "value": None} if variable.get("secret") else variable
            for variable in view["environmentVariables"]
        ]
    # Fields a PUT set that a world check does not have (description, muted, ...), as PUT answered them.
    for name, value in (extras or {}).items():
        if name not in view and name != "autoAssignAlerts":  # a query flag of the PUT, not a field
            view[name] = value
    return view


@dataclass
class AccountState:
    world: Account
    checks: dict[str, WorldCheck]
    check_extras: dict[str, dict[str, Any]]  # fields an update set that a WorldCheck does not have
    incidents: set[str]
    windows: dict[str, set[str]]  # maintenance window id -> its maintenance ids
    certificates: set[str]


class Accounts:
    """Not thread-safe: the Backend calls it under its lock."""

    def __init__(self, clock: SimClock) -> None:
        self._clock = clock
        self._accounts: dict[str, AccountState] = {}
        self._dashboards: dict[str, tuple[str, Dashboard]] = {}  # id -> (account id, dashboard)
        self._taken: set[str] = set()  # dashboard URLs and domains in use, by anyone, lower case
        self._incident_updates: list[tuple[str, IncidentUpdate]] = []  # (incident id, update)

    def clear(self) -> None:
        self._accounts.clear()
        self._dashboards.clear()
        self._taken.clear()
        self._incident_updates.clear()

    def load(self, account: Account) -> AccountState:
        state = AccountState(
            world=account,
            # Not copied: a check is never changed in place (update_check validates a new one), and
            # a deep copy of 10,000 checks took 2.5 s of a run's start.
            checks={c.id: c for c in account.checks},
            check_extras={},
            incidents={i.id for i in account.incidents},
            windows={str(w.id): set(w.maintenances) for w in account.maintenanceWindows},
            certificates={c.id for c in account.clientCertificates},
        )
        self._accounts[account.id] = state
        for dashboard in account.dashboards:
            self._taken.update(x.lower() for x in (dashboard.customUrl, dashboard.customDomain) if x)
        return state

    def get(self, account_id: str) -> AccountState:
        return self._accounts[account_id]

    def checks(self) -> dict[str, dict[str, WorldCheck]]:
        """account id -> check id -> the check as it is now (updates applied)."""
        return {account_id: dict(state.checks) for account_id, state in self._accounts.items()}

    def incident_updates(self) -> list[tuple[str, IncidentUpdate]]:
        return list(self._incident_updates)

    def dashboards(self) -> dict[str, tuple[str, Dashboard]]:
        return dict(self._dashboards)

    # --- the API's operations ----------------------------------------------------------------

    def list_checks(self, account_id: str, where: CheckFilter, page: int, limit: int) -> CheckPage:
        """One page of the account's checks that match, in the world's order."""
        account = self.get(account_id)
        matching = [check for check in account.checks.values() if where.matches(check)]
        first = (page - 1) * limit
        checks = [served_check(c, account.check_extras.get(c.id)) for c in matching[first : first + limit]]
        return CheckPage(checks=checks, first=first, total=len(matching))

    def get_check(self, account_id: str, check_id: str) -> dict[str, Any]:
        account = self.get(account_id)
        check = account.checks.get(check_id)
        if check is None:
            raise not_found("Check")
        return served_check(check, account.check_extras.get(check_id))

    def list_variables(self, account_id: str, page: int, limit: int) -> list[dict[str, Any]]:
        """One page of the account's environment variables (the world's `environmentVariables`), in
        production's shape: key, value, locked, secret; a secret's value is null, always."""
        variables = self.get(account_id).world.environmentVariables
        first = (page - 1) * limit
        return [
            {"key": v.key, "value": None if v.secret else v.value, "locked": v.locked, "secret": v.secret}
            for v in variables[first : first + limit]
        ]

    def add_incident_update(
        self, account_id: str, incident_id: str, request: IncidentUpdateRequest
    ) -> IncidentUpdate:
        if incident_id not in self.get(account_id).incidents:
            raise not_found("Incident")
        now = self._clock.iso(self._clock.now())
        update = IncidentUpdate(
            id=request.id or str(uuid.uuid4()),
            description=request.description,
            status=request.status or "INVESTIGATING",
            publicIncidentUpdateDate=request.publicIncidentUpdateDate or now,
            created_at=request.created_at or now[:10],
            notifySubscribers=request.notifySubscribers,
        )
        self._incident_updates.append((incident_id, update))
        return update

    def delete_maintenance_window(self, account_id: str, window_id: str) -> None:
        if self.get(account_id).windows.pop(window_id, None) is None:
            raise not_found("Maintenance window")

    def delete_maintenance(self, account_id: str, window_id: str, maintenance_id: str) -> None:
        window = self.get(account_id).windows.get(window_id)
        if window is None or maintenance_id not in window:
            raise not_found("Maintenance")
        window.discard(maintenance_id)

    def delete_client_certificate(self, account_id: str, certificate_id: str) -> None:
        certificates = self.get(account_id).certificates
        if certificate_id not in certificates:
            raise not_found("Client certificate")
        certificates.discard(certificate_id)

    def create_dashboard(self, account_id: str, request: DashboardRequest) -> Dashboard:
        for name in ("customUrl", "customDomain"):
            value = getattr(request, name)
            if value and value.lower() in self._taken:
                raise ApiFailure(409, f"{name} is already taken")
        self._taken.update(x.lower() for x in (request.customUrl, request.customDomain) if x)
        # As production: a numeric id and a string dashboardId.
        number = len(self._dashboards) + 1
        dashboard = Dashboard.model_validate(
            {
                **request.model_dump(mode="json"),
                "id": number,
                "dashboardId": str(uuid.uuid4()),
                "created_at": self._clock.iso(self._clock.now()),
            }
        )
        self._dashboards[str(number)] = (account_id, dashboard)
        return dashboard

    def update_check(self, account_id: str, check_id: str, update: CheckUpdate, auto_assign: bool) -> Check:
        account = self.get(account_id)
        check = account.checks.get(check_id)
        if check is None:
            raise not_found("Check")
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
        try:
            # Validated, not model_copy(update=...): a variable must become a WorldVariable (what GET
            # serves, with a secret's value null, and what a session reads), never stay a plain dict.
            check = WorldCheck.model_validate({**check.model_dump(exclude_unset=True), **known})
        except ValidationError as exc:
            raise ApiFailure(400, "; ".join(describe_validation_error(exc))) from None
        account.checks[check_id] = check
        extras = account.check_extras.setdefault(check_id, {})
        extras.update(
            {k: v for k, v in update.model_dump(mode="json", exclude_unset=True).items() if k not in known}
        )
        extras["autoAssignAlerts"] = auto_assign
        view = check.model_dump(mode="json", include=CHECK_VIEW)
        # The fields the check has, then whatever else the update set (kept as extra fields).
        return Check.model_validate({**extras, **view})
