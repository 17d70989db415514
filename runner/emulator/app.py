"""The FastAPI app: thin route handlers over the Backend; auth, stats and faults around them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.security import HTTPBearer
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.backend import Backend
from runner.emulator.errors import documented, error_response, install_error_handlers
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

_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer <API_KEY>`")


class StatsMiddleware:
    """Counts /v1 requests by route name and status (faults and auth failures included)."""

    def __init__(self, app: ASGIApp, backend: Backend, router: APIRouter) -> None:
        self.app, self.backend, self.router = app, backend, router

    def _route(self, scope: Scope) -> str:
        for route in self.router.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return str(getattr(route, "name", "unknown"))
        return "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        recorded = False

        async def record(message: Message) -> None:
            nonlocal recorded
            # Counted before the answer leaves, so a client that reads the stats after its answer
            # always finds its own request there.
            if message["type"] == "http.response.start" and not recorded:
                recorded = True
                self.backend.record_request(self._route(scope), message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            if not recorded:  # no answer at all: a reset fault or a crash
                self.backend.record_request(self._route(scope), 500)


async def wait_for_completion(
    backend: Backend, account: str, session_id: str, max_wait: float
) -> dict[str, Any] | None:
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
            if session["status"] != "RUNNING":
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


def build_v1(backend: Backend) -> APIRouter:
    def auth(
        request: Request,
        _credentials: Any = Depends(_bearer),
        x_service_account: str | None = Header(default=None, description="Account id (uuid)"),
    ) -> str:
        return backend.authenticate(request.headers.get("authorization"), x_service_account, request.method)

    v1 = APIRouter(prefix="/v1")
    common = (400, 401, 403, 404, 429)

    @v1.post(
        "/test-sessions/trigger",
        name="trigger",
        status_code=201,
        response_model=TestSession,
        responses=documented(400, 401, 402, 403, 404, 429),
    )
    async def trigger(body: TriggerRequest, account: str = Depends(auth)) -> Any:
        return backend.trigger(account, body)

    @v1.get(
        "/test-sessions/{testSessionId}",
        name="get_session",
        response_model=TestSession,
        responses=documented(*common),
    )
    async def get_session(testSessionId: str, account: str = Depends(auth)) -> Any:
        return backend.get_session(account, testSessionId)

    @v1.get(
        "/test-sessions/{testSessionId}/completion",
        name="completion",
        response_model=TestSession,
        responses=documented(400, 401, 403, 404, 408, 429),
    )
    async def completion(
        testSessionId: str,
        maxWaitSeconds: int = Query(default=30, ge=1, le=30),
        account: str = Depends(auth),
    ) -> Any:
        session = await wait_for_completion(backend, account, testSessionId, maxWaitSeconds)
        if session is None:
            return error_response(408, STILL_RUNNING_MESSAGE)
        return session

    @v1.post(
        "/test-sessions/{testSessionId}/cancel", name="cancel", status_code=204, responses=documented(*common)
    )
    async def cancel(testSessionId: str, account: str = Depends(auth)) -> Response:
        backend.cancel(account, testSessionId)
        return Response(status_code=204)

    @v1.get(
        "/test-session-error-groups/{id}",
        name="get_test_session_error_group",
        response_model=ErrorGroup,
        responses=documented(*common),
    )
    async def get_test_session_error_group(id: str, account: str = Depends(auth)) -> Any:
        return backend.get_group(account, id, "test-session")

    @v1.get(
        "/error-groups/{id}", name="get_error_group", response_model=ErrorGroup, responses=documented(*common)
    )
    async def get_error_group(id: str, account: str = Depends(auth)) -> Any:
        return backend.get_group(account, id, "check")

    analysis_errors = documented(400, 401, 402, 403, 404, 429)

    @v1.post(
        "/root-cause-analyses/test-session-error-groups/{id}",
        name="create_analysis",
        status_code=202,
        response_model=RootCauseAnalysis,
        response_model_exclude_none=True,
        responses=analysis_errors,
    )
    async def create_test_session_error_group_analysis(
        id: str, body: CreateAnalysisRequest | None = None, account: str = Depends(auth)
    ) -> Any:
        return backend.create_analysis(account, id, "test-session", body.userContext if body else None)

    @v1.post(
        "/root-cause-analyses/error-groups/{id}",
        name="create_analysis",
        status_code=202,
        response_model=RootCauseAnalysis,
        response_model_exclude_none=True,
        responses=analysis_errors,
    )
    async def create_error_group_analysis(
        id: str, body: CreateAnalysisRequest | None = None, account: str = Depends(auth)
    ) -> Any:
        return backend.create_analysis(account, id, "check", body.userContext if body else None)

    @v1.get(
        "/root-cause-analyses/{id}",
        name="get_analysis",
        response_model=RootCauseAnalysis,
        response_model_exclude_none=True,
        responses={202: {"model": RootCauseAnalysis, "description": "Pending"}, **documented(*common)},
    )
    async def get_analysis(id: str, response: Response, account: str = Depends(auth)) -> Any:
        completed, body = backend.get_analysis(account, id)
        response.status_code = 200 if completed else 202
        return body

    @v1.post(
        "/status-pages/incidents/{incidentId}/incident-updates",
        name="incident_update",
        response_model=IncidentUpdate,
        responses=documented(*common),
    )
    async def incident_update(
        incidentId: str, body: IncidentUpdateRequest, account: str = Depends(auth)
    ) -> Any:
        return backend.add_incident_update(account, incidentId, body)

    @v1.delete(
        "/maintenance-windows/{id}",
        name="delete_maintenance_window",
        status_code=204,
        responses=documented(*common),
    )
    async def delete_maintenance_window(id: str, account: str = Depends(auth)) -> Response:
        backend.delete_maintenance_window(account, id)
        return Response(status_code=204)

    @v1.delete(
        "/maintenance-windows/{id}/maintenances/{maintenanceId}",
        name="delete_maintenance",
        status_code=204,
        responses=documented(*common),
    )
    async def delete_maintenance(id: str, maintenanceId: str, account: str = Depends(auth)) -> Response:
        backend.delete_maintenance(account, id, maintenanceId)
        return Response(status_code=204)

    @v1.delete(
        "/client-certificates/{id}",
        name="delete_client_certificate",
        status_code=204,
        responses=documented(*common),
    )
    async def delete_client_certificate(id: str, account: str = Depends(auth)) -> Response:
        backend.delete_client_certificate(account, id)
        return Response(status_code=204)

    @v1.post(
        "/dashboards",
        name="create_dashboard",
        status_code=201,
        response_model=Dashboard,
        responses=documented(400, 401, 403, 409, 429),
    )
    async def create_dashboard(body: DashboardRequest, account: str = Depends(auth)) -> Any:
        return backend.create_dashboard(account, body)

    @v1.put(
        "/checks/{id}",
        name="update_check",
        response_model=Check,
        deprecated=True,
        responses=documented(*common),
    )
    async def update_check(
        id: str,
        body: CheckUpdate,
        response: Response,
        autoAssignAlerts: bool = Query(default=True),
        account: str = Depends(auth),
    ) -> Any:
        response.headers["Deprecation"] = "true"
        return backend.update_check(account, id, body, autoAssignAlerts)

    return v1


def create_app(backend: Backend, control_token: str | None = None) -> FastAPI:
    from runner.emulator import control, pages
    from runner.emulator.faults import FaultMiddleware

    app = FastAPI(
        title="Monitoring service API (testsession emulator)",
        version="v1",
        description="Local emulation of the monitoring service's public API. The /_emulator/ control "
        "routes and the HTML result pages are not part of the service and not listed here.",
    )
    install_error_handlers(app)
    v1 = build_v1(backend)
    app.include_router(v1)
    app.include_router(control.build_router(backend, control_token), include_in_schema=False)
    app.include_router(pages.build_router(backend), include_in_schema=False)
    app.add_middleware(FaultMiddleware, injector=backend.faults)
    app.add_middleware(StatsMiddleware, backend=backend, router=v1)
    app.state.backend = backend
    _drop_422_from_openapi(app)
    return app


def _drop_422_from_openapi(app: FastAPI) -> None:
    """Validation failures answer 400 with an ErrorBody (documented per route), never FastAPI's 422."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for item in schema.get("paths", {}).values():
                for operation in item.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
