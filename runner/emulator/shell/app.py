"""The FastAPI app: the /v1 API built from the route table (routes.py), with auth, stats and faults
around it, the /_emulator/ control API and the HTML result pages."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.core.backend import Backend
from runner.emulator.shell.errors import install_error_handlers
from runner.emulator.shell.routes import build_router
from runner.models.operations import find


class StatsMiddleware:
    """Counts /v1 requests by route name and status (faults and auth failures included)."""

    def __init__(self, app: ASGIApp, backend: Backend) -> None:
        self.app, self.backend = app, backend

    def _route(self, scope: Scope) -> str:
        op = find(scope["method"], scope["path"])
        return op.name if op else "unmatched"

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


def create_app(backend: Backend, control_token: str | None = None) -> FastAPI:
    from runner.emulator.core.faults import FaultMiddleware
    from runner.emulator.shell import control, pages

    app = FastAPI(
        title="Monitoring service API (testsession emulator)",
        version="v1",
        description="Local emulation of the monitoring service's public API. The /_emulator/ control "
        "routes and the HTML result pages are not part of the service and not listed here.",
    )
    install_error_handlers(app)
    v1 = build_router(backend.settings.accountHeader)
    app.include_router(v1)
    app.include_router(control.build_router(backend, control_token), include_in_schema=False)
    app.include_router(pages.build_router(backend), include_in_schema=False)
    # Both match a request on the operation table (runner.models.operations), by operation name.
    app.add_middleware(FaultMiddleware, injector=backend.faults)
    app.add_middleware(StatsMiddleware, backend=backend)
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
