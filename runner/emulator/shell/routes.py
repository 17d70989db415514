"""The /v1 API as FastAPI routes: one thin handler per operation of runner.models.operations.

As moto's `urls.py`: handlers map the table's paths onto the Backend, which holds the state. The
router, and so /openapi.json, is built from the table (`build_router`): method, path, models,
statuses and summary come from its rows; a handler adds only how the answer is rendered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from fastapi.security import HTTPBearer

from runner.emulator.core.accounts import CheckFilter
from runner.emulator.core.answers import OMIT, completion_step, content_range
from runner.emulator.core.backend import Backend
from runner.emulator.shell.errors import documented, error_response
from runner.emulator.shell.intake import ACCOUNT_STATE
from runner.models import (
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
from runner.models.operations import CHECKS_PAGE_LIMIT, NAMES, OPERATIONS, PREFIX, VARIABLES_PAGE_LIMIT

_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer <API_KEY>`")


# --- what every handler gets ----------------------------------------------------------------------------


def backend_of(request: Request) -> Backend:
    return cast(Backend, request.app.state.backend)


CurrentBackend = Annotated[Backend, Depends(backend_of)]


def account_of(request: Request, backend: CurrentBackend) -> str:
    """The authenticated account id; the 401/403/429 the request deserves otherwise. The intake
    (intake.py) has checked the key before the body was read and left the account here; a request it
    did not take in (none in the app as built) is checked now."""
    account = request.scope.get("state", {}).get(ACCOUNT_STATE)
    if isinstance(account, str):
        return account
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


async def trigger(
    body: TriggerRequest, request: Request, backend: CurrentBackend, account: Account
) -> TestSession:
    # The key matters beyond the account: an exposed emulator runs real checks only for some keys.
    return backend.trigger(account, body, request.headers.get("authorization"))


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


async def list_checks(
    response: Response,
    backend: CurrentBackend,
    account: Account,
    limit: Annotated[int, Query(ge=1, le=CHECKS_PAGE_LIMIT, description="checks per page")] = 10,
    page: Annotated[int, Query(ge=1, description="page number, from 1")] = 1,
    tag: Annotated[list[str] | None, Query(description="checks with at least one of these tags")] = None,
    checkType: Annotated[str | None, Query(description="checks of this type")] = None,
    search: Annotated[str | None, Query(description="in the check's name, any case")] = None,
    apiCheckUrlFilterPattern: Annotated[
        str | None, Query(min_length=1, description="in an API check's URL (API checks only)")
    ] = None,
) -> Any:
    where = CheckFilter(tuple(tag or ()), checkType, search, apiCheckUrlFilterPattern)
    found = backend.list_checks(account, where, page, limit)
    response.headers["Content-Range"] = content_range(found.checks, found.first, found.total)
    return found.checks


async def get_check(id: str, backend: CurrentBackend, account: Account) -> Any:
    return backend.get_check(account, id)


async def list_variables(
    backend: CurrentBackend,
    account: Account,
    limit: Annotated[int, Query(ge=1, le=VARIABLES_PAGE_LIMIT, description="variables per page")] = 10,
    page: Annotated[int, Query(ge=1, description="page number, from 1")] = 1,
) -> Any:
    return backend.list_variables(account, page, limit)


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
            step = completion_step(backend, account, session_id, deadline, loop.time)
            if not isinstance(step, float):
                return step
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(event.wait(), step)
    finally:
        backend.remove_listener(wake)


# --- the router: one route per operation of the table ------------------------------------------------


# One handler per operation; what each answer leaves out is core/answers.py's OMIT (the in-process
# answers read it too).
HANDLERS: dict[str, Callable[..., Awaitable[Any]]] = {
    "trigger": trigger,
    "get_session": get_session,
    "completion": completion,
    "cancel": cancel,
    "get_test_session_error_group": get_test_session_error_group,
    "get_error_group": get_error_group,
    "create_test_session_error_group_analysis": create_test_session_error_group_analysis,
    "create_error_group_analysis": create_error_group_analysis,
    "get_analysis": get_analysis,
    "incident_update": incident_update,
    "delete_maintenance_window": delete_maintenance_window,
    "delete_maintenance": delete_maintenance,
    "delete_client_certificate": delete_client_certificate,
    "create_dashboard": create_dashboard,
    "update_check": update_check,
    "list_checks": list_checks,
    "get_check": get_check,
    "list_variables": list_variables,
}
if set(HANDLERS) != set(NAMES):
    raise RuntimeError("runner.emulator.shell.routes: one handler per operation of runner.models.operations")


def build_router(account_header: str) -> APIRouter:
    """The /v1 API as a FastAPI router, one route per row of OPERATIONS."""
    router = APIRouter(prefix=PREFIX, dependencies=[Depends(_credentials(account_header))])
    for op in OPERATIONS:
        omit = OMIT.get(op.name)
        also: dict[int | str, dict[str, Any]] = {
            status: {"model": op.response, "description": HTTPStatus(status).phrase} for status in op.also
        }
        router.add_api_route(
            op.path,
            HANDLERS[op.name],
            methods=[op.method],
            name=op.name,
            summary=op.summary,
            status_code=op.status,
            response_model=op.response,
            response_model_exclude_unset=omit == "unset",
            response_model_exclude_none=omit == "none",
            responses={**also, **documented(*op.errors)},
            deprecated=op.deprecated or None,
        )
    return router
