"""The service's API, declared once: one row per operation (name, method, path, handler).

As moto's `urls.py`: the table maps paths to thin handlers over the Backend, which holds the state.
The FastAPI app is built from it (`build_router`), and the fault injector and the request stats match a
request on the app's own routes by name (`operation_name`), so a route cannot be added to one and
missed by the other. Names are unique; `ROUTE_ALIASES` keeps older fault-spec names working.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from pydantic import BaseModel
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from runner.emulator.backend import Backend
from runner.emulator.errors import documented, error_response
from runner.models import (
    DEFAULT_ACCOUNT_HEADER,
    STILL_RUNNING_MESSAGE,
    Check,
    CheckUpdate,
    CreateAnalysisRequest,
    Dashboard,
    DashboardRequest,
    ErrorGroup,
    IncidentUpdate,
    IncidentUpdateRequest,
    RootCauseAnalysis,
    TestSession,
    TriggerRequest,
)

PREFIX = "/v1"
COMMON_ERRORS = (400, 401, 403, 404, 429)
_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer <API_KEY>`")


# --- what every handler gets ----------------------------------------------------------------------------


def backend_of(request: Request) -> Backend:
    return cast(Backend, request.app.state.backend)


CurrentBackend = Annotated[Backend, Depends(backend_of)]


def account_of(request: Request, backend: CurrentBackend) -> str:
    """The authenticated account id; the 401/403/429 the request deserves otherwise."""
    return backend.authenticate(
        request.headers.get("authorization"),
        request.headers.get(backend.settings.accountHeader),
        request.method,
    )


Account = Annotated[str, Depends(account_of)]
# Production's maintenance window ids are positive integers (docs/production-contract.md).
WindowId = Annotated[int, Path(ge=1, description="maintenance window id (a positive integer)")]


def _credentials(header: str) -> Callable[..., None]:
    """A dependency that only documents the credentials in /openapi.json (account_of reads them): the
    account header's name is the world's (settings.accountHeader), so it is known per app."""

    def credentials(
        _key: Any = Depends(_bearer),
        _account: str | None = Header(default=None, alias=header, description="Account id (uuid)"),
    ) -> None:
        return None

    return credentials


# --- the handlers: thin, the Backend does the work ------------------------------------------------------


async def trigger(body: TriggerRequest, backend: CurrentBackend, account: Account) -> TestSession:
    return backend.trigger(account, body)


async def get_session(testSessionId: str, backend: CurrentBackend, account: Account) -> TestSession:
    return backend.get_session(account, testSessionId)


async def completion(
    testSessionId: str,
    backend: CurrentBackend,
    account: Account,
    maxWaitSeconds: Annotated[int, Query(ge=1, le=30)] = 30,
) -> Any:
    session = await wait_for_completion(backend, account, testSessionId, maxWaitSeconds)
    if session is None:
        return error_response(408, STILL_RUNNING_MESSAGE)
    return session


async def cancel(testSessionId: str, backend: CurrentBackend, account: Account) -> Response:
    backend.cancel(account, testSessionId)
    return Response(status_code=204)


async def get_test_session_error_group(id: str, backend: CurrentBackend, account: Account) -> ErrorGroup:
    return backend.get_group(account, id, "test-session")


async def get_error_group(id: str, backend: CurrentBackend, account: Account) -> ErrorGroup:
    return backend.get_group(account, id, "check")


async def create_test_session_error_group_analysis(
    id: str, backend: CurrentBackend, account: Account, body: CreateAnalysisRequest | None = None
) -> RootCauseAnalysis:
    return backend.create_analysis(account, id, "test-session", body.userContext if body else None)


async def create_error_group_analysis(
    id: str, backend: CurrentBackend, account: Account, body: CreateAnalysisRequest | None = None
) -> RootCauseAnalysis:
    return backend.create_analysis(account, id, "check", body.userContext if body else None)


async def get_analysis(
    id: str, response: Response, backend: CurrentBackend, account: Account
) -> RootCauseAnalysis:
    analysis = backend.get_analysis(account, id)
    response.status_code = 200 if analysis.is_completed else 202
    return analysis


async def incident_update(
    incidentId: str, body: IncidentUpdateRequest, backend: CurrentBackend, account: Account
) -> IncidentUpdate:
    return backend.add_incident_update(account, incidentId, body)


async def delete_maintenance_window(id: WindowId, backend: CurrentBackend, account: Account) -> Response:
    backend.delete_maintenance_window(account, str(id))
    return Response(status_code=204)


async def delete_maintenance(
    id: WindowId, maintenanceId: str, backend: CurrentBackend, account: Account
) -> Response:
    backend.delete_maintenance(account, str(id), maintenanceId)
    return Response(status_code=204)


async def delete_client_certificate(id: str, backend: CurrentBackend, account: Account) -> Response:
    backend.delete_client_certificate(account, id)
    return Response(status_code=204)


async def create_dashboard(body: DashboardRequest, backend: CurrentBackend, account: Account) -> Dashboard:
    return backend.create_dashboard(account, body)


async def update_check(
    id: str,
    body: CheckUpdate,
    response: Response,
    backend: CurrentBackend,
    account: Account,
    autoAssignAlerts: Annotated[bool, Query()] = True,
) -> Check:
    response.headers["Deprecation"] = "true"
    return backend.update_check(account, id, body, autoAssignAlerts)


async def wait_for_completion(
    backend: Backend, account: str, session_id: str, max_wait: float
) -> TestSession | None:
    """The final session, or None when `max_wait` real seconds pass first. Wakes at the session's
    computed end, and at once on cancel, clock advance or reset (backend listeners)."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()

    def wake() -> None:
        # RuntimeError: the loop is gone because the server is shutting down.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(event.set)

    backend.add_listener(wake)
    try:
        deadline = loop.time() + max_wait
        while True:
            event.clear()
            session = backend.get_session(account, session_id)
            if session.status != "RUNNING":
                return session
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            to_end = backend.real_seconds_to_end(account, session_id)
            timeout = remaining if to_end is None else min(remaining, to_end + 0.001)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
    finally:
        backend.remove_listener(wake)


# --- the table ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str  # below PREFIX
    handler: Callable[..., Awaitable[Any]]
    status: int = 200
    model: type[BaseModel] | None = None
    errors: tuple[int, ...] = COMMON_ERRORS  # each answers an ErrorBody
    # Fields left out of the answer: "unset" (a session has no `metadata: null` when the trigger sent
    # none), "none" (an analysis shows only what it has).
    omit: Literal["unset", "none"] | None = None
    responses: Mapping[int | str, dict[str, Any]] = field(default_factory=dict)
    deprecated: bool = False


_PAYMENT_ERRORS = (400, 401, 402, 403, 404, 429)  # also 402: not on the account's plan

OPERATIONS: tuple[Operation, ...] = (
    Operation("trigger", "POST", "/test-sessions/trigger", trigger, 201, TestSession,
              _PAYMENT_ERRORS, "unset"),
    Operation("get_session", "GET", "/test-sessions/{testSessionId}", get_session, 200, TestSession,
              omit="unset"),
    Operation("completion", "GET", "/test-sessions/{testSessionId}/completion", completion, 200,
              TestSession, (400, 401, 403, 404, 408, 429), "unset"),
    Operation("cancel", "POST", "/test-sessions/{testSessionId}/cancel", cancel, 204),
    Operation("get_test_session_error_group", "GET", "/test-session-error-groups/{id}",
              get_test_session_error_group, model=ErrorGroup),
    Operation("get_error_group", "GET", "/error-groups/{id}", get_error_group, model=ErrorGroup),
    Operation("create_test_session_error_group_analysis", "POST",
              "/root-cause-analyses/test-session-error-groups/{id}",
              create_test_session_error_group_analysis, 202, RootCauseAnalysis, _PAYMENT_ERRORS, "none"),
    Operation("create_error_group_analysis", "POST", "/root-cause-analyses/error-groups/{id}",
              create_error_group_analysis, 202, RootCauseAnalysis, _PAYMENT_ERRORS, "none"),
    Operation("get_analysis", "GET", "/root-cause-analyses/{id}", get_analysis, model=RootCauseAnalysis,
              omit="none", responses={202: {"model": RootCauseAnalysis, "description": "Pending"}}),
    Operation("incident_update", "POST", "/status-pages/incidents/{incidentId}/incident-updates",
              incident_update, model=IncidentUpdate),
    Operation("delete_maintenance_window", "DELETE", "/maintenance-windows/{id}",
              delete_maintenance_window, 204),
    Operation("delete_maintenance", "DELETE", "/maintenance-windows/{id}/maintenances/{maintenanceId}",
              delete_maintenance, 204),
    Operation("delete_client_certificate", "DELETE", "/client-certificates/{id}",
              delete_client_certificate, 204),
    Operation("create_dashboard", "POST", "/dashboards", create_dashboard, 201, Dashboard,
              errors=(400, 401, 403, 409, 429)),
    Operation("update_check", "PUT", "/checks/{id}", update_check, model=Check, deprecated=True),
)  # fmt: skip

ROUTE_NAMES: tuple[str, ...] = tuple(op.name for op in OPERATIONS)
if len(set(ROUTE_NAMES)) != len(ROUTE_NAMES):
    raise RuntimeError("runner.emulator.routes: operation names must be unique")

# Older names a fault spec may still use: one name for several operations.
ROUTE_ALIASES: dict[str, tuple[str, ...]] = {
    "create_analysis": ("create_test_session_error_group_analysis", "create_error_group_analysis"),
}


def build_router(account_header: str) -> APIRouter:
    """The /v1 API as a FastAPI router, one route per row of OPERATIONS."""
    router = APIRouter(prefix=PREFIX, dependencies=[Depends(_credentials(account_header))])
    for op in OPERATIONS:
        router.add_api_route(
            op.path,
            op.handler,
            methods=[op.method],
            name=op.name,
            status_code=op.status,
            response_model=op.model,
            response_model_exclude_unset=op.omit == "unset",
            response_model_exclude_none=op.omit == "none",
            responses={**op.responses, **documented(*op.errors)},
            deprecated=op.deprecated or None,
        )
    return router


def operation_name(routes: Iterable[BaseRoute], scope: Scope) -> str | None:
    """The name of the API operation a request is for (method and path both match), or None."""
    for route in routes:
        if isinstance(route, APIRoute) and route.matches(scope)[0] == Match.FULL:
            return route.name
    return None


@functools.cache
def reference_routes() -> list[BaseRoute]:
    """The API's routes as an app built with the default account header has them."""
    return build_router(DEFAULT_ACCOUNT_HEADER).routes


def route_name(method: str, path: str) -> str | None:
    """`operation_name` for a method and path, outside a running app (tools and tests)."""
    return operation_name(reference_routes(), {"type": "http", "method": method.upper(), "path": path})
