"""The ASGI middlewares around the /v1 API: fault injection and request stats, both matching a
request on the operation table (runner.models.operations) by name.

`reset` (and the end of `truncated`) closes the client's TCP connection. ASGI has no message for that, so
the fault middleware finds uvicorn's transport through the `send`/`receive` callables it was given
(uvicorn passes bound methods of its request cycle; Starlette's own middlewares pass `receive` through).
Under a server where that fails, `reset` degrades to response headers followed by a closed connection.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import error_body
from runner.emulator.core.faults import FaultSpec
from runner.models.operations import find

_BAD_GATEWAY = f"502 {HTTPStatus(502).phrase}"
PROXY_PAGE = f"<html><body><h1>{_BAD_GATEWAY}</h1><p>{_BAD_GATEWAY} (proxy)</p></body></html>".encode()
FAULT_HEADER = b"x-emulator-fault"


class StatsMiddleware:
    """Counts /v1 requests by operation name and status (faults and auth failures included)."""

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


def _json_error(status: int, attributes: dict[str, Any] | None = None) -> bytes:
    return error_body(status, attributes=attributes).model_dump_json(exclude_unset=True).encode()


async def _answer(
    send: Send, status: int, body: bytes, content_type: bytes, kind: str, extra: list[tuple[bytes, bytes]]
) -> None:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (FAULT_HEADER, kind.encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _connection_of(receive: Receive, send: Send) -> tuple[asyncio.Transport, Any] | None:
    """uvicorn's transport and request cycle, reached through the bound methods it passed us."""
    for callable_ in (send, receive):
        cycle = getattr(callable_, "__self__", None)
        transport = getattr(cycle, "transport", None)
        if isinstance(transport, asyncio.Transport):
            return transport, cycle
    return None


async def _wait_disconnected(cycle: Any) -> None:
    # uvicorn marks the cycle disconnected from connection_lost, a loop callback or two later; once it
    # is marked, uvicorn neither answers 500 nor logs an incomplete response for the dropped request.
    for _ in range(100):
        if getattr(cycle, "disconnected", True):
            return
        await asyncio.sleep(0.001)


class FaultMiddleware:
    """Applies the backend's faults (backend.faults) to the API's operations, matched on the operation
    table by name; everything else passes through untouched."""

    def __init__(self, app: ASGIApp, backend: Backend) -> None:
        self.app = app
        self.backend = backend

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        spec = None
        op = find(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if op is not None:
            spec = self.backend.faults.pick(op.name)
        if spec is None:
            await self.app(scope, receive, send)
        elif spec.phase == "before":
            await self._before(spec, scope, receive, send)
        else:
            await self._after(spec, scope, receive, send)

    async def _before(self, spec: FaultSpec, scope: Scope, receive: Receive, send: Send) -> None:
        if spec.kind == "slow":
            await asyncio.sleep(spec.delaySeconds or 0)
            await self.app(scope, receive, send)
        elif spec.kind == "reset":
            await self._reset(receive, send)
        else:
            await self._fail(spec, send)

    async def _after(self, spec: FaultSpec, scope: Scope, receive: Receive, send: Send) -> None:
        captured: list[Message] = []

        async def capture(message: Message) -> None:
            captured.append(message)

        await self.app(scope, receive, capture)
        if spec.kind == "slow":
            await asyncio.sleep(spec.delaySeconds or 0)
            for message in captured:
                await send(message)
        elif spec.kind == "reset":
            await self._reset(receive, send)
        elif spec.kind == "truncated":
            await self._truncate(captured, receive, send)
        else:
            await self._fail(spec, send)

    async def _fail(self, spec: FaultSpec, send: Send) -> None:
        if spec.kind == "rate_limit":
            # The limit in force (the world's, or as changed since), as the emulator's own 429 says it.
            failure = self.backend.rate_limit_failure(spec.retryAfterSeconds or 0)
            body = _json_error(failure.status, failure.attributes)
            headers = [(k.lower().encode(), v.encode()) for k, v in failure.headers.items()]
            await _answer(send, failure.status, body, b"application/json", spec.kind, headers)
        elif spec.kind == "non_json":
            await _answer(send, spec.status or 200, PROXY_PAGE, b"text/html; charset=utf-8", spec.kind, [])
        else:  # status (and any other kind phrased as a status: never reached with validated specs)
            status = spec.status or 503
            await _answer(send, status, _json_error(status), b"application/json", spec.kind, [])

    async def _reset(self, receive: Receive, send: Send) -> None:
        connection = _connection_of(receive, send)
        if connection is not None:
            transport, cycle = connection
            transport.abort()  # no byte of an answer: the client sees the connection closed or reset
            await _wait_disconnected(cycle)
            return
        # Not under uvicorn: headers that promise a body which never comes, then the server closes.
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"1024"), (FAULT_HEADER, b"reset")]})  # fmt: skip

    async def _truncate(self, captured: list[Message], receive: Receive, send: Send) -> None:
        start = next((m for m in captured if m["type"] == "http.response.start"), None)
        body = b"".join(m.get("body", b"") for m in captured if m["type"] == "http.response.body")
        status = start["status"] if start else 200
        if start is None or len(body) < 2 or status in (204, 304) or status < 200:
            await self._reset(receive, send)  # nothing to cut in half: lose the answer entirely
            return
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers += [(b"content-length", str(len(body)).encode()), (FAULT_HEADER, b"truncated")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
        connection = _connection_of(receive, send)
        if connection is not None:
            transport, cycle = connection
            transport.close()  # close, not abort: the half body already handed over is flushed first
            await _wait_disconnected(cycle)
        # Otherwise returning now leaves the response incomplete and the server closes the connection.
