"""Fault injection: make API routes of the emulator fail the ways a real service and its proxies do.

A `FaultSpec` names a route, a kind of failure and how often it fires; a `FaultInjector` holds the active
specs (thread-safe, deterministic with a seed); `FaultMiddleware` is a pure ASGI middleware that applies
them. Phase "before" answers without running the handler (the service did nothing); phase "after" runs
the handler first (its side effects happened) and then loses or breaks the answer, which is the case a
client's retry logic must not turn into a duplicate.

`reset` (and the end of `truncated`) closes the client's TCP connection. ASGI has no message for that, so
the middleware finds uvicorn's transport through the `send`/`receive` callables it was given (uvicorn
passes bound methods of its request cycle; Starlette's own middlewares pass `receive` through). Under a
server where that fails, `reset` degrades to response headers followed by a closed connection.
"""

from __future__ import annotations

import asyncio
import builtins
import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.shell.errors import error_body
from runner.models.operations import NAMES, RATE_LIMIT, find

ALL_ROUTES = "*"
# Older names a fault spec may still use: one name for several operations.
ROUTE_ALIASES: dict[str, tuple[str, ...]] = {
    "create_analysis": ("create_test_session_error_group_analysis", "create_error_group_analysis"),
}
_BAD_GATEWAY = f"502 {HTTPStatus(502).phrase}"
PROXY_PAGE = f"<html><body><h1>{_BAD_GATEWAY}</h1><p>{_BAD_GATEWAY} (proxy)</p></body></html>".encode()
FAULT_HEADER = b"x-emulator-fault"

Kind = Literal["status", "reset", "slow", "non_json", "truncated", "rate_limit"]
Phase = Literal["before", "after"]


def targets(spec_route: str, route: str) -> bool:
    """Whether a spec's `route` (a name, an alias or "*") covers the operation named `route`."""
    return spec_route in (ALL_ROUTES, route) or route in ROUTE_ALIASES.get(spec_route, ())


class FaultSpec(BaseModel):
    """One fault. Unset fields get their per-kind defaults during validation, so a dump shows them."""

    model_config = ConfigDict(extra="forbid")

    route: str = Field(
        description='an operation name of runner.models.operations, an alias of ROUTE_ALIASES, or "*"'
    )
    kind: Kind
    status: Literal[200, 500, 502, 503] | None = Field(
        default=None, description="kind status: 500, 502 or 503 (default 503); kind non_json: default 200"
    )
    rate: float | None = Field(default=None, ge=0, le=1, description="fraction of matching requests")
    count: int | None = Field(default=None, ge=1, description="the next N matching requests")
    delaySeconds: float | None = Field(default=None, gt=0, le=600, description="kind slow")
    retryAfterSeconds: int | None = Field(default=None, ge=0, le=3600, description="kind rate_limit")
    phase: Phase | None = Field(default=None, description="default by kind")

    @model_validator(mode="after")
    def _defaults_by_kind(self) -> FaultSpec:
        if self.route != ALL_ROUTES and self.route not in NAMES and self.route not in ROUTE_ALIASES:
            raise ValueError(f'route must be "*" or one of {", ".join((*NAMES, *ROUTE_ALIASES))}')
        if self.rate is not None and self.count is not None:
            raise ValueError("give rate or count, not both")
        if self.kind == "status":
            self.status = self.status or 503
            if self.status == 200:
                raise ValueError("kind status needs status 500, 502 or 503")
        elif self.kind == "non_json":
            self.status = self.status or 200
        elif self.status is not None:
            raise ValueError("status is only for kinds status and non_json")
        if self.kind == "slow":
            if self.delaySeconds is None:
                raise ValueError("kind slow needs delaySeconds")
        elif self.delaySeconds is not None:
            raise ValueError("delaySeconds is only for kind slow")
        if self.kind == "rate_limit":
            self.retryAfterSeconds = 1 if self.retryAfterSeconds is None else self.retryAfterSeconds
        elif self.retryAfterSeconds is not None:
            raise ValueError("retryAfterSeconds is only for kind rate_limit")
        if self.phase is None:
            self.phase = _default_phase(self.kind, self.status)
        if self.kind == "truncated" and self.phase == "before":
            raise ValueError("kind truncated needs phase after (there is no answer to truncate before)")
        return self


def _default_phase(kind: str, status: int | None) -> Phase:
    # A 503 or a 429 is the service refusing work; a 500/502, a lost or broken answer comes after it.
    if kind in ("slow", "rate_limit") or (kind == "status" and status == 503):
        return "before"
    return "after"


@dataclass
class _Active:
    spec: FaultSpec
    remaining: int | None  # count still to fire; None when the spec has no count


class FaultInjector:
    """The active faults. Thread-safe; with a seed, `rate` decisions repeat run after run."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._active: list[_Active] = []
        self._stats: dict[str, dict[str, int]] = {}

    def add(self, spec: FaultSpec) -> FaultSpec:
        with self._lock:
            self._active.append(_Active(spec.model_copy(), spec.count))
        return spec

    def set(self, specs: Iterable[FaultSpec]) -> None:
        with self._lock:
            self._active = [_Active(spec.model_copy(), spec.count) for spec in specs]

    def clear(self) -> None:
        with self._lock:
            self._active = []

    def list(self) -> builtins.list[FaultSpec]:
        """The active faults in order; `count` shows what is left to fire."""
        with self._lock:
            return [item.spec.model_copy(update={"count": item.remaining}) for item in self._active]

    @property
    def stats(self) -> dict[str, dict[str, int]]:
        """Faults fired so far: {route name: {kind: n}}."""
        with self._lock:
            return {route: dict(kinds) for route, kinds in self._stats.items()}

    def pick(self, route: str) -> FaultSpec | None:
        """The fault that fires for a request to the operation `route`, if any (the first active one
        that fires)."""
        with self._lock:
            for item in self._active:
                if not targets(item.spec.route, route) or not self._fires(item):
                    continue
                if item.remaining == 0:
                    self._active.remove(item)
                kinds = self._stats.setdefault(route, {})
                kinds[item.spec.kind] = kinds.get(item.spec.kind, 0) + 1
                return item.spec
        return None

    def _fires(self, item: _Active) -> bool:
        if item.remaining is not None:
            item.remaining -= 1
            return True
        if item.spec.rate is not None:
            return self._random.random() < item.spec.rate
        return True


# --- the middleware -------------------------------------------------------------------------------------


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
    """Applies the injector's faults to the API's operations (`routes`, matched by name); everything
    else passes through untouched."""

    def __init__(self, app: ASGIApp, injector: FaultInjector) -> None:
        self.app = app
        self.injector = injector

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        spec = None
        op = find(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if op is not None:
            spec = self.injector.pick(op.name)
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
            wait = spec.retryAfterSeconds or 0
            attributes = {
                "limit": RATE_LIMIT.limit,
                "windowSeconds": RATE_LIMIT.window_seconds,
                "retryAfterSeconds": wait,
            }
            body = _json_error(429, attributes)
            await _answer(
                send, 429, body, b"application/json", spec.kind, [(b"retry-after", str(wait).encode())]
            )
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
