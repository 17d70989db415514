"""The FastAPI app: the /v1 API (routes.py: one route, the core's table of handlers answers), with
its intake (intake.py), faults and stats around it (middleware.py), the /_emulator/ control API and
the HTML result pages; every route behind the Host and control API guard (hosts.py). /openapi.json is
the document core/openapi.py writes from the operation table."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from runner.emulator.core import openapi
from runner.emulator.core.backend import Backend
from runner.emulator.shell import control, pages
from runner.emulator.shell.errors import install_error_handlers
from runner.emulator.shell.hosts import AllowedHosts, HostGuard
from runner.emulator.shell.intake import V1Intake
from runner.emulator.shell.middleware import FaultMiddleware, StatsMiddleware
from runner.emulator.shell.routes import METHODS, PATH, answer_pool, v1


def create_app(
    backend: Backend, control_token: str | None = None, allowed: AllowedHosts | None = None
) -> FastAPI:
    """`allowed`: the Host names served (hosts.py); by default those of an emulator on 127.0.0.1."""
    app = FastAPI(title=openapi.TITLE, version="v1", description=openapi.DESCRIPTION)
    install_error_handlers(app)
    app.add_route(PATH, v1, methods=METHODS, include_in_schema=False)
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
    app.state.v1_pool = answer_pool()
    header = backend.settings.accountHeader

    def document() -> dict[str, Any]:
        return openapi.document(header)

    app.openapi = document  # type: ignore[method-assign]
    return app
