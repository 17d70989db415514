"""The emulator serves only its own host, and its control API only to a request no web page can send.

A page in the user's browser can reach a server on loopback two ways. DNS rebinding: a name of the
attacker's resolves to 127.0.0.1, so the page's requests arrive with `Host: attacker.example:PORT`
and the page reads the answers as its own. A cross-site request: a form or `fetch(..., {mode:
"no-cors"})` sends a "simple" request (GET/POST, no custom header, a text/plain, form or multipart
body) without asking the server first; the page cannot read the answer, but the request has done
its work (a world replaced, a key revoked).

So, on every route:
- the Host's name must be one the emulator answers to (`AllowedHosts`): the address it listens on,
  localhost, 127.0.0.1, ::1, any name given with `--allow-host`, and, bound to a wildcard address
  (0.0.0.0, ::), any IP address (a rebinding page always names a host; the machine's own addresses
  are not known up front). The port is not compared: a rebinding is told by its name, and a port
  mapping (`docker run -p 9000:8484`) or an SSH tunnel changes the port. Django's ALLOWED_HOSTS and
  Vite's `server.allowedHosts` draw the same line. Anything else: 421 Misdirected Request.
and on the control API (/_emulator/):
- the request carries `X-Testsession-Emulator: 1` (CONTROL_HEADER): a custom header makes a browser
  ask first (a CORS preflight), which the emulator never grants; else 403;
- a request from a web page (an `Origin` header) must come from the emulator's own origin; else 403;
- a body is JSON (`application/json`; a world may also be `application/yaml`); else 415.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from runner.emulator.shell.errors import error_response

CONTROL_HEADER = "X-Testsession-Emulator"
CONTROL_HEADERS = {CONTROL_HEADER: "1"}  # what a client of the control API adds to every request
CONTROL_PREFIX = "/_emulator/"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
JSON_TYPES = frozenset({"application/json"})
WORLD_TYPES = frozenset({"application/json", "application/yaml", "application/x-yaml", "text/yaml"})


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_name(host: str) -> str | None:
    """The name of a Host header value (`[::1]:8484` -> `::1`), lower case; None when malformed."""
    try:
        parts = urlsplit("//" + host)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        return None
    name = parts.hostname
    if not name or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return name.rstrip(".")


class AllowedHosts:
    """The names the emulator answers to, from the address it listens on and the names it was given."""

    def __init__(self, bind: str, extra: Iterable[str] = ()) -> None:
        bind = bind.strip("[]").lower()
        self.any_ip = bind in WILDCARDS
        names = set(LOOPBACK_NAMES) | {name.strip().strip("[]").lower().rstrip(".") for name in extra}
        if not self.any_ip:
            names.add(bind)
        self.names = frozenset(name for name in names if name)

    def allows(self, host: str | None) -> bool:
        name = host_name(host) if host else None
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))


def request_headers(scope: Scope) -> dict[str, str]:
    """An ASGI request's headers by lower-case name (Latin-1, as the wire gave them; a repeated
    header keeps its first value)."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def control_refusal(path: str, headers: dict[str, str]) -> tuple[int, str] | None:
    """Why a request to the control API is refused (status, message), or None when it may go on."""
    if headers.get(CONTROL_HEADER.lower()) != "1":
        # A page of another site cannot send it without a preflight, which is never granted.
        return 403, f"the control API needs the header `{CONTROL_HEADER}: 1`"
    origin = headers.get("origin")
    if origin is not None and origin.lower() != f"http://{headers.get('host', '')}".lower():
        return 403, "the control API answers no request from another web origin"
    has_body = headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in headers
    media = headers.get("content-type", "").partition(";")[0].strip().lower()
    allowed = WORLD_TYPES if path.rstrip("/") == "/_emulator/world" else JSON_TYPES
    if has_body and media not in allowed:
        return 415, f"the control API takes a body of type {' or '.join(sorted(allowed))}"
    return None


class HostGuard:
    """ASGI middleware: 421 for a Host the emulator does not answer to; the control API's rules."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = request_headers(scope)
        refusal: tuple[int, str] | None = None
        if not self.allowed.allows(headers.get("host")):
            refusal = (
                421,
                "this emulator does not answer to that Host (see `testsession emulator --allow-host`)",
            )
        elif scope["path"].startswith(CONTROL_PREFIX):
            refusal = control_refusal(scope["path"], headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        # The connection is closed after the answer: a body the client still sends is never read.
        response = error_response(status, message, headers={"Connection": "close"})
        await response(scope, receive, send)
