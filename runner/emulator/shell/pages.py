"""Tiny HTML pages that a session's and a result's links point at. Open to loopback clients (links
in local reports); from elsewhere they need the API's credentials (see access.py)."""

from __future__ import annotations

import html
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure
from runner.emulator.shell.access import page_account


def _page(title: str, rows: list[tuple[str, Any]]) -> HTMLResponse:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><table>{body}</table></body></html>"
    )


def build_router(backend: Backend) -> APIRouter:
    router = APIRouter(prefix="/sessions")

    def find(request: Request, session_id: str) -> dict[str, Any]:
        account = page_account(backend, request)
        if account is not None:
            # 404 for another account's session.
            return backend.get_session(account, session_id).model_dump(mode="json")
        session = backend.find_session(session_id)
        if session is None:
            raise ApiFailure(404, "Test session not found")
        return session

    @router.get("/{session_id}", response_class=HTMLResponse)
    async def session_page(request: Request, session_id: str) -> HTMLResponse:
        session = find(request, session_id)
        rows: list[tuple[str, Any]] = [("status", session["status"]), ("started", session["startedAt"])]
        rows += [(f"{r['name']} ({r['resultType']})", r["status"]) for r in session["results"]]
        return _page(f"Test session {session['name']}", rows)

    @router.get("/{session_id}/results/{result_id}", response_class=HTMLResponse)
    async def result_page(request: Request, session_id: str, result_id: str) -> HTMLResponse:
        session = find(request, session_id)
        for result in session["results"]:
            if result["testSessionResultId"] == result_id:
                keys = (
                    "status",
                    "checkType",
                    "runLocation",
                    "resultType",
                    "startedAt",
                    "stoppedAt",
                    "responseTime",
                    "errorMessage",
                    "bodyTruncated",  # a real run's body cut at the read cap
                )
                rows = [(k, result.get(k)) for k in keys if k != "bodyTruncated" or result.get(k)]
                return _page(f"{result['name']} in {session['name']}", rows)
        raise ApiFailure(404, "Result not found")

    return router
