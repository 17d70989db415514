"""The /v1 API over HTTP: one route for every operation, answered by the core's table of handlers
(core/answers.py `answer`, the same code a run in this process calls), so a request gets the same
status and body over the socket as in process. The route hands over the method, the path as sent
(still quoted: an id with a `%2F` in it is one segment both ways), the query's pairs, the headers,
the body the intake has read and bounded, and the account it has checked (intake.py).

An answer runs on a thread of the app's pool (runner/core/threads.py, at most WORKERS at once; the
others wait for a thread): the handlers are plain functions, and the completion long poll waits
there (up to 30 s) instead of on the event loop. The threads are daemons: a long poll still waiting
when the server stops never holds the process."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response

from runner.core.threads import DaemonPool
from runner.emulator.core.answers import Answer, Incoming, answer
from runner.emulator.core.backend import Backend
from runner.emulator.shell.intake import ACCOUNT_STATE
from runner.models.operations import OPERATIONS, PREFIX

PATH = PREFIX + "/{rest:path}"
# Every method, so that one the path does not take is the core's 405 in the service's error body.
METHODS = sorted({op.method for op in OPERATIONS} | {"PATCH", "OPTIONS"})
WORKERS = 128  # answers at once (each long poll holds one for up to 30 s)
IDLE_SECONDS = 30.0  # a thread with no request for this long ends


def answer_pool() -> DaemonPool:
    """The pool of one app's answers (app.state.v1_pool)."""
    return DaemonPool(WORKERS, "v1", IDLE_SECONDS)


async def v1(request: Request) -> Response:
    backend = cast(Backend, request.app.state.backend)
    pool = cast(DaemonPool, request.app.state.v1_pool)
    account = request.scope.get("state", {}).get(ACCOUNT_STATE)
    incoming = Incoming(
        request.method,
        cast(bytes, request.scope.get("raw_path") or request.scope["path"].encode()).decode("latin-1"),
        request.query_params.multi_items(),
        request.headers,
        await request.body(),
        account if isinstance(account, str) else None,
    )
    answered: Answer = await asyncio.wrap_future(pool.submit(answer, backend, incoming))
    headers: dict[str, Any] = dict(answered.headers)
    if answered.body:
        headers["Content-Type"] = "application/json"
    return Response(answered.body, answered.status, headers)
