"""The /v1 API over HTTP: one route for every operation, answered by the core's table of handlers
(core/answers.py `answer`, the same code a run in this process calls), so a request gets the same
status and body over the socket as in process. The route hands over the method, the path as sent
(still quoted: an id with a `%2F` in it is one segment both ways), the query's pairs, the headers,
the body the intake has read and bounded, and the account it has checked (intake.py).

An answer runs on a worker thread: the handlers are plain functions, and the completion long poll
waits there (up to 30 s) instead of on the event loop. At most WORKERS answers run at once; the
others wait for a thread."""

from __future__ import annotations

from typing import Any, cast

import anyio
from starlette.requests import Request
from starlette.responses import Response

from runner.emulator.core.answers import Incoming, answer
from runner.emulator.core.backend import Backend
from runner.emulator.shell.intake import ACCOUNT_STATE
from runner.models.operations import OPERATIONS, PREFIX

PATH = PREFIX + "/{rest:path}"
# Every method, so that one the path does not take is the core's 405 in the service's error body.
METHODS = sorted({op.method for op in OPERATIONS} | {"PATCH", "OPTIONS"})
WORKERS = 128  # answers at once (each long poll holds one for up to 30 s)
_LIMITER = "v1_limiter"  # the app state's name of the workers' limit (made on the server's loop)


async def v1(request: Request) -> Response:
    backend = cast(Backend, request.app.state.backend)
    limiter = getattr(request.app.state, _LIMITER, None)
    if limiter is None:
        limiter = anyio.CapacityLimiter(WORKERS)
        setattr(request.app.state, _LIMITER, limiter)
    account = request.scope.get("state", {}).get(ACCOUNT_STATE)
    incoming = Incoming(
        request.method,
        cast(bytes, request.scope.get("raw_path") or request.scope["path"].encode()).decode("latin-1"),
        request.query_params.multi_items(),
        request.headers,
        await request.body(),
        account if isinstance(account, str) else None,
    )
    # abandon_on_cancel: a server stopping does not wait for a long poll's thread (which ends at once
    # anyway: the Backend's shutdown wakes it).
    answered = await anyio.to_thread.run_sync(
        answer, backend, incoming, abandon_on_cancel=True, limiter=limiter
    )
    headers: dict[str, Any] = dict(answered.headers)
    if answered.body:
        headers["Content-Type"] = "application/json"
    return Response(answered.body, answered.status, headers)
