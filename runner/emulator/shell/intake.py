"""How a /v1 request comes in: its key is checked before a byte of its body is read, and the body is
bounded.

FastAPI reads a route's whole body before it solves the route's dependencies (the account among them),
so a request without a key could make the emulator read hundreds of megabytes before its 401, and a
key holder could send a 100 MB session name. Here, for every operation of the table:
1. the credentials are checked (`Backend.authenticate`: 401/403/429) from the headers alone; the
   account found is left in the request's state for the route (routes.py hands it to the core's
   answer), so a request is counted once against the rate limit;
2. a declared Content-Length over MAX_BODY_BYTES is 413 at once; a body without one (chunked) is
   counted as it is read and refused with 413 as soon as it passes the bound;
3. the body read is handed to the route.
The contract names no size limit for a request body (/work/shared/spec); MAX_BODY_BYTES is the
emulator's own, documented in docs/emulator.md. The largest body the service's models allow (a
trigger with 50 environment variables, a dashboard) is a few tens of kilobytes.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure
from runner.emulator.shell.errors import error_response
from runner.emulator.shell.hosts import request_headers
from runner.models.operations import find

MAX_BODY_BYTES = 1024 * 1024  # 1 MiB
ACCOUNT_STATE = "account"  # the key in the request's state where the authenticated account id waits


async def _refuse(failure: ApiFailure, scope: Scope, receive: Receive, send: Send) -> None:
    # Connection: close: the server drops the connection after the answer, the body left unread.
    headers = {**failure.headers, "Connection": "close"}
    response = error_response(
        failure.status, failure.message, failure.attributes, headers, failure.error_code
    )
    await response(scope, receive, send)


def _too_large() -> ApiFailure:
    return ApiFailure(413, f"request body larger than {MAX_BODY_BYTES} bytes")


class V1Intake:
    """ASGI middleware for the /v1 operations: key first, then a bounded body (see the module)."""

    def __init__(self, app: ASGIApp, backend: Backend) -> None:
        self.app, self.backend = app, backend

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or find(scope["method"], scope["path"]) is None:
            await self.app(scope, receive, send)
            return
        headers = request_headers(scope)
        try:
            account = self.backend.authenticate(
                headers.get("authorization"),
                headers.get(self.backend.settings.accountHeader.lower()),
                scope["method"],
            )
            declared = headers.get("content-length")
            if declared is not None and int(declared) > MAX_BODY_BYTES:  # h11/httptools checked the digits
                raise _too_large()
            # No body declared (a GET, a DELETE): nothing to read, and the route runs even if the
            # client has gone meanwhile (a slow fault holds a request longer than its client waits).
            chunked = "transfer-encoding" in headers
            body = await self._read(receive) if chunked or (declared or "0").strip() != "0" else b""
        except ApiFailure as failure:
            await _refuse(failure, scope, receive, send)
            return
        if body is None:  # the client went away while sending
            return
        scope.setdefault("state", {})[ACCOUNT_STATE] = account
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: a disconnect, as the server reports it

        await self.app(scope, replay, send)

    @staticmethod
    async def _read(receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
