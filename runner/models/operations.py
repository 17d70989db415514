"""The service's API, declared once: one row per operation.

Each row says what the client and the emulator must agree on: the operation's name (also the
emulator's handler, fault and stats name), method, path template, path and query parameters (their
types, defaults and bounds), request and response models, success and documented error statuses,
and its retry class. The client builds its URLs and picks how to retry from a row; the emulator
matches and validates a request, answers it and writes its OpenAPI document from the table
(emulator/core/answers.py, openapi.py); the CLI validates bodies with the rows' request models.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from runner.core.errors import InvalidRequestError
from runner.models.analyses import (
    ErrorGroup,
    RootCauseAnalysis,
    TestSessionErrorGroup,
)
from runner.models.base import RequestModel
from runner.models.resources import (
    Check,
    CheckList,
    CheckUpdate,
    CreateAnalysisRequest,
    Dashboard,
    DashboardRequest,
    IncidentUpdate,
    IncidentUpdateRequest,
    VariableList,
)
from runner.models.sessions import TestSession, TriggerRequest

PREFIX = "/v1"
# An answer's model: a resource (ApiModel), or a bare array of them (a RootModel: GET /v1/checks).
A = TypeVar("A", bound=BaseModel | None)


@dataclass(frozen=True)
class RateLimit:
    limit: int
    window_seconds: float


# The service's limit, per API key, on every route: the client's limiter keeps under it, and the
# emulator enforces it unless its world says otherwise.
RATE_LIMIT = RateLimit(limit=600, window_seconds=60.0)


class CallKind(Enum):
    """How a call may be sent again when its outcome is unknown (runner/client/retry.py)."""

    # Changes nothing: resent whatever happened.
    READ = "read"
    # Changes something, and sending it twice does no more than once (a delete, a cancel): resent
    # like a read.
    IDEMPOTENT = "idempotent"
    # Creates or changes something a second copy would repeat (a second session, analysis or
    # incident update; a check update that may overwrite a change made in between): resent only
    # when the service provably did nothing.
    CREATE = "create"


@dataclass(frozen=True)
class Param:
    """A path parameter: its name in the template and how a message names it."""

    name: str
    label: str
    positive_int: bool = False  # production's maintenance window ids are positive integers

    def segment(self, value: str | int) -> str:
        """The value as one path segment, quoted so an id can never change the path ("../x")."""
        if self.positive_int:
            text = str(value).strip()
            if not text.isascii() or not text.isdigit() or int(text) < 1:
                raise InvalidRequestError(f"{self.label}: must be a positive whole number (e.g. 2001)")
            return str(int(text))
        if not isinstance(value, str) or not value.strip():
            raise InvalidRequestError(f"{self.label}: must be a non-empty string")
        return quote(value, safe="")


@dataclass(frozen=True)
class Query:
    """A query parameter: its type (int, bool, str or list[str], a repeated key), its default (None:
    absent) and bounds. The emulator validates a request's query with them (pydantic, so "true" is a
    bool and "7" an int) and states them in its OpenAPI document."""

    name: str
    type: Any
    default: Any = None
    description: str = ""
    ge: int | None = None
    le: int | None = None
    min_length: int | None = None


COMMON_ERRORS = (400, 401, 403, 404, 429)
PAYMENT_ERRORS = (400, 401, 402, 403, 404, 429)  # also 402: not on the account's plan


@dataclass(frozen=True)
class Operation(Generic[A]):
    name: str
    method: str
    path: str  # below PREFIX, with {name} for each of `params`
    kind: CallKind
    status: int  # the success status
    response: type[A] | None = None  # None: no body (204)
    request: type[RequestModel] | None = None
    params: tuple[Param, ...] = ()
    query: tuple[Query, ...] = ()
    body_required: bool = True  # with `request`: False when a request may send no body
    errors: tuple[int, ...] = COMMON_ERRORS  # each answers the service's error body
    also: tuple[int, ...] = ()  # other success statuses with the same model (202: still pending)
    summary: str = ""
    deprecated: bool = False

    @property
    def template(self) -> str:
        return PREFIX + self.path

    def url_path(self, *values: str | int) -> str:
        """The request path, the parameters in order; InvalidRequestError for an unusable id."""
        path = self.template
        for param, value in zip(self.params, values, strict=True):
            path = path.replace("{" + param.name + "}", param.segment(value))
        return path


_SESSION = Param("testSessionId", "test session id")
_GROUP = Param("id", "error group id")

TRIGGER = Operation(
    "trigger",
    "POST",
    "/test-sessions/trigger",
    CallKind.CREATE,
    201,
    TestSession,
    TriggerRequest,
    errors=PAYMENT_ERRORS,
    summary="Trigger a test session",
)
GET_SESSION = Operation(
    "get_session",
    "GET",
    "/test-sessions/{testSessionId}",
    CallKind.READ,
    200,
    TestSession,
    params=(_SESSION,),
    summary="Read a test session",
)
COMPLETION = Operation(
    "completion",
    "GET",
    "/test-sessions/{testSessionId}/completion",
    CallKind.READ,
    200,
    TestSession,
    params=(_SESSION,),
    query=(Query("maxWaitSeconds", int, 30, ge=1, le=30),),
    errors=(400, 401, 403, 404, 408, 429),
    summary="Wait for a test session to be final (408 while it still runs)",
)
CANCEL: Operation[None] = Operation(
    "cancel",
    "POST",
    "/test-sessions/{testSessionId}/cancel",
    CallKind.IDEMPOTENT,
    204,
    params=(_SESSION,),
    summary="Cancel a test session",
)
GET_TEST_SESSION_ERROR_GROUP = Operation(
    "get_test_session_error_group",
    "GET",
    "/test-session-error-groups/{id}",
    CallKind.READ,
    200,
    TestSessionErrorGroup,
    params=(_GROUP,),
    summary="Read a test-session error group",
)
GET_ERROR_GROUP = Operation(
    "get_error_group",
    "GET",
    "/error-groups/{id}",
    CallKind.READ,
    200,
    ErrorGroup,
    params=(_GROUP,),
    summary="Read a check error group",
)
CREATE_TEST_SESSION_ERROR_GROUP_ANALYSIS = Operation(
    "create_test_session_error_group_analysis",
    "POST",
    "/root-cause-analyses/test-session-error-groups/{id}",
    CallKind.CREATE,
    202,
    RootCauseAnalysis,
    CreateAnalysisRequest,
    params=(_GROUP,),
    body_required=False,
    errors=PAYMENT_ERRORS,
    summary="Start a root cause analysis of a test-session error group",
)
CREATE_ERROR_GROUP_ANALYSIS = Operation(
    "create_error_group_analysis",
    "POST",
    "/root-cause-analyses/error-groups/{id}",
    CallKind.CREATE,
    202,
    RootCauseAnalysis,
    CreateAnalysisRequest,
    params=(_GROUP,),
    body_required=False,
    errors=PAYMENT_ERRORS,
    summary="Start a root cause analysis of a check error group",
)
GET_ANALYSIS = Operation(
    "get_analysis",
    "GET",
    "/root-cause-analyses/{id}",
    CallKind.READ,
    200,
    RootCauseAnalysis,
    params=(Param("id", "analysis id"),),
    also=(202,),
    summary="Read a root cause analysis (200 completed, 202 pending)",
)
INCIDENT_UPDATE = Operation(
    "incident_update",
    "POST",
    "/status-pages/incidents/{incidentId}/incident-updates",
    CallKind.CREATE,
    200,
    IncidentUpdate,
    IncidentUpdateRequest,
    params=(Param("incidentId", "incident id"),),
    summary="Add an update to a status page incident",
)
# Production's maintenance window ids are positive integers (docs/production-contract.md).
_WINDOW = Param("id", "maintenance window id", positive_int=True)
DELETE_MAINTENANCE_WINDOW: Operation[None] = Operation(
    "delete_maintenance_window",
    "DELETE",
    "/maintenance-windows/{id}",
    CallKind.IDEMPOTENT,
    204,
    params=(_WINDOW,),
    summary="Delete a maintenance window",
)
DELETE_MAINTENANCE: Operation[None] = Operation(
    "delete_maintenance",
    "DELETE",
    "/maintenance-windows/{id}/maintenances/{maintenanceId}",
    CallKind.IDEMPOTENT,
    204,
    params=(_WINDOW, Param("maintenanceId", "maintenance id")),
    summary="Delete one maintenance of a window",
)
DELETE_CLIENT_CERTIFICATE: Operation[None] = Operation(
    "delete_client_certificate",
    "DELETE",
    "/client-certificates/{id}",
    CallKind.IDEMPOTENT,
    204,
    params=(Param("id", "client certificate id"),),
    summary="Delete a client certificate",
)
CREATE_DASHBOARD = Operation(
    "create_dashboard",
    "POST",
    "/dashboards",
    CallKind.CREATE,
    201,
    Dashboard,
    DashboardRequest,
    errors=(400, 401, 403, 409, 429),
    summary="Create a dashboard (409 when its URL or domain is taken)",
)
UPDATE_CHECK = Operation(
    "update_check",
    "PUT",
    "/checks/{id}",
    CallKind.CREATE,
    200,
    Check,
    CheckUpdate,
    params=(Param("id", "check id"),),
    query=(Query("autoAssignAlerts", bool, True),),
    deprecated=True,
    summary="Update a check (deprecated: PUT /v1/checks/api/{id} and /v1/checks/browser/{id} replace it)",
)

# Production's page-based listing: `limit` (1-100, default 10) and `page` (from 1) in the query, a bare
# array in the body, the total in `Content-Range: 0-9/23` (OpenAPI getV1Checks; the CLI's
# rest/checks.ts reads the total from that header). The filters are production's too.
CHECKS_PAGE_LIMIT = 100  # production's largest `limit`
LIST_CHECKS = Operation(
    "list_checks",
    "GET",
    "/checks",
    CallKind.READ,
    200,
    CheckList,
    query=(
        Query("limit", int, 10, "checks per page", ge=1, le=CHECKS_PAGE_LIMIT),
        Query("page", int, 1, "page number, from 1", ge=1),
        Query("tag", list[str], description="checks with at least one of these tags"),
        Query("checkType", str, description="checks of this type"),
        Query("search", str, description="in the check's name, any case"),
        Query(
            "apiCheckUrlFilterPattern",
            str,
            description="in an API check's URL (API checks only)",
            min_length=1,
        ),
    ),
    errors=(400, 401, 403, 429),
    summary="List the account's checks, one page at a time (the total in Content-Range)",
)
GET_CHECK = Operation(
    "get_check",
    "GET",
    "/checks/{id}",
    CallKind.READ,
    200,
    Check,
    params=(Param("id", "check id"),),
    summary="Read a check with its definition (secret variable values are null)",
)
# The account's environment variables, pages as for checks (limit 1-100, default 10; page from 1; OpenAPI
# getV1Variables): a bare array, a secret's value always null. What `checks export` writes into the
# world's account `environmentVariables`.
VARIABLES_PAGE_LIMIT = 100  # production's largest `limit`
LIST_VARIABLES = Operation(
    "list_variables",
    "GET",
    "/variables",
    CallKind.READ,
    200,
    VariableList,
    query=(
        Query("limit", int, 10, "variables per page", ge=1, le=VARIABLES_PAGE_LIMIT),
        Query("page", int, 1, "page number, from 1", ge=1),
    ),
    errors=(400, 401, 403, 429),
    summary="List the account's environment variables, one page at a time (secret values are null)",
)

OPERATIONS: tuple[Operation[Any], ...] = (
    TRIGGER, GET_SESSION, COMPLETION, CANCEL, GET_TEST_SESSION_ERROR_GROUP, GET_ERROR_GROUP,
    CREATE_TEST_SESSION_ERROR_GROUP_ANALYSIS, CREATE_ERROR_GROUP_ANALYSIS, GET_ANALYSIS, INCIDENT_UPDATE,
    DELETE_MAINTENANCE_WINDOW, DELETE_MAINTENANCE, DELETE_CLIENT_CERTIFICATE, CREATE_DASHBOARD,
    UPDATE_CHECK, LIST_CHECKS, GET_CHECK, LIST_VARIABLES,
)  # fmt: skip
BY_NAME = {op.name: op for op in OPERATIONS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


@functools.cache
def _pattern(name: str) -> re.Pattern[str]:
    """The path pattern of the operation `name`, compiled when a request with its method is first
    matched (compiling all 18 at import was ~0.5% of a one-check run's start-up)."""
    # A parameter matches one segment, as the emulator's router matches it.
    template = re.escape(BY_NAME[name].template)
    return re.compile("^" + re.sub(r"\\\{([A-Za-z]+)\\\}", r"(?P<\1>[^/]+)", template) + "$")


def match(method: str, path: str) -> tuple[Operation[Any], dict[str, str]] | None:
    """The operation a request is for (method and path both match) and its path parameters, as
    they stand in the path (still quoted), or None."""
    method = method.upper()
    for op in OPERATIONS:
        if op.method != method:
            continue
        found = _pattern(op.name).match(path)
        if found:
            return op, found.groupdict()
    return None


def find(method: str, path: str) -> Operation[Any] | None:
    """The operation a request is for (method and path both match), or None."""
    matched = match(method, path)
    return matched[0] if matched else None


def _check_table() -> None:
    """The table's own rules, checked once at import: a broken row fails every test at once."""
    if len(NAMES) != len(OPERATIONS):
        raise RuntimeError("runner.models.operations: operation names must be unique")
    for op in OPERATIONS:
        named = re.findall(r"\{([A-Za-z]+)\}", op.path)
        if named != [param.name for param in op.params]:
            raise RuntimeError(f"runner.models.operations: {op.name}: params must match the path")


_check_table()
