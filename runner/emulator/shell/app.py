"""The FastAPI app: the /v1 API (routes.py, built from the operation table), with its intake
(intake.py), faults and stats around it (middleware.py), the /_emulator/ control API and the HTML
result pages; every route behind the Host and control API guard (hosts.py)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from runner.emulator.core.backend import Backend
from runner.emulator.shell import control, pages
from runner.emulator.shell.errors import install_error_handlers
from runner.emulator.shell.hosts import AllowedHosts, HostGuard
from runner.emulator.shell.intake import V1Intake
from runner.emulator.shell.middleware import FaultMiddleware, StatsMiddleware
from runner.emulator.shell.routes import build_router


def create_app(
    backend: Backend, control_token: str | None = None, allowed: AllowedHosts | None = None
) -> FastAPI:
    """`allowed`: the Host names served (hosts.py); by default those of an emulator on 127.0.0.1."""
    app = FastAPI(
        title="Monitoring service API (testsession emulator)",
        version="v1",
        description="Local emulation of the monitoring service's public API. The /_emulator/ control "
        "routes and the HTML result pages are not part of the service and not listed here.",
    )
    install_error_handlers(app)
    app.include_router(build_router(backend.settings.accountHeader))
    app.include_router(control.build_router(backend, control_token), include_in_schema=False)
    app.include_router(pages.build_router(backend), include_in_schema=False)
    # From the inside out (the last added runs first): the /v1 intake (the key before the body, a bounded
    # body), faults and stats (both match a request on the operation table, runner.models.operations,
    # by operation name), and outermost the Host and control API guard.
    app.add_middleware(V1Intake, backend=backend)
    app.add_middleware(FaultMiddleware, backend=backend)
    app.add_middleware(StatsMiddleware, backend=backend)
    app.add_middleware(HostGuard, allowed=allowed or AllowedHosts("127.0.0.1"))
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
