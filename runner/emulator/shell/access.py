"""Who may use the emulator's non-API routes: the /_emulator/ control API and the HTML pages.

Bound to loopback (the default, and every test), both stay open: only the local machine can reach
them. A control token, when set, is required on every /_emulator/ route from any address. The HTML
pages show what GET /v1/test-sessions/{id} shows, so a request from another machine needs the same
credentials as that call (a key of the session's account); from loopback they stay open, so that
links in local reports open in a browser.

Checks that run for real send requests from this machine wherever their definition says. Bound
beyond loopback, the emulator runs them only for a key that the world file names for its owner,
never for a documented demo key (`tsk_demo_...`, world.yml's default): a trigger with one gets each
such check as a failed result saying why (core/keys.py, `real_checks_refusal`).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable

from fastapi import Request

from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure

ENV_CONTROL_TOKEN = "TESTSESSION_EMULATOR_CONTROL_TOKEN"


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def control_guard(token: str | None) -> Callable[[Request], None]:
    """A dependency for the control routes: `Authorization: Bearer <token>` when a token is set."""

    def check(request: Request) -> None:
        if token is None:
            return
        scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise ApiFailure(
                401, "Bad Token", {"reason": "the control API needs the emulator's control token"}
            )

    return check


def page_account(backend: Backend, request: Request) -> str | None:
    """None for a loopback client; else the account of the request's API credentials (or 401/403)."""
    client = request.client.host if request.client else None
    if is_loopback(client):
        return None
    return backend.authenticate(
        request.headers.get("authorization"), request.headers.get(backend.settings.accountHeader), "GET"
    )
