"""API keys: which account a request acts for, what its key may do, and the per-key rate limit."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from http import HTTPStatus

from runner.emulator.core.failures import ApiFailure
from runner.emulator.core.world import RateLimit

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The demo keys the packaged world (world.yml's defaults), the docs and the examples publish all
# start so: anyone may know one, so a key like it never makes this machine send requests for others.
DEMO_KEY_PREFIX = "tsk_demo_"


def bearer_key(authorization: str | None) -> str | None:
    scheme, _, key = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return key.strip() or None


def is_demo_key(key: str) -> bool:
    return key.startswith(DEMO_KEY_PREFIX)


def real_checks_refusal(key: str | None) -> str | None:
    """Why an emulator reachable from other machines does not run real checks for this key (None: it
    does). A check run for real sends requests from this machine to any address its definition
    names, so only a key that the world file names for its owner may ask for one."""
    if key is not None and not is_demo_key(key):
        return None
    return (
        "not run: this emulator is reachable from other machines (bound beyond loopback) and runs "
        "real checks only for an API key the world file names, never for the documented demo key; "
        "give the account a key of your own in the world file (e.g. key: ${MY_EMULATOR_KEY}) and "
        "trigger with it"
    )


def rate_limited(limit: RateLimit, retry_after: int) -> ApiFailure:
    """The one 429 of the emulator, for its own limit and an injected one: it names the limit in force."""
    attributes = {
        "limit": limit.limit,
        "windowSeconds": limit.windowSeconds,
        "retryAfterSeconds": retry_after,
    }
    return ApiFailure(429, HTTPStatus(429).phrase, attributes, {"Retry-After": str(retry_after)})


class Keys:
    """Not thread-safe: the Backend calls it under its lock. `clock` (monotonic seconds) times the rate
    limit's window; a test sets its own to judge a flood without a race against real time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._keys: dict[str, tuple[str, str]] = {}  # key -> (account id, role)
        self._revoked: set[str] = set()
        self._used: dict[str, deque[float]] = {}  # key -> `clock` times of its requests in the window

    def clear(self) -> None:
        self._keys.clear()
        self._revoked.clear()
        self._used.clear()

    def add(self, key: str, account_id: str, role: str) -> None:
        self._keys[key] = (account_id, role)

    def revoke(self, key: str) -> bool:
        known = key in self._keys
        if known:
            self._revoked.add(key)
        return known

    def forget_windows(self) -> None:
        """A changed rate limit starts counting afresh."""
        self._used.clear()

    def authenticate(
        self,
        authorization: str | None,
        account_header: str | None,
        method: str,
        header_name: str,
        limit: RateLimit,
    ) -> str:
        """The account id of a request, or the 401/403/429 it deserves."""
        key = bearer_key(authorization)
        if key is None:
            raise ApiFailure(401, "Bad Token", {"reason": "missing bearer credential"})
        found = self._keys.get(key)
        if found is None or key in self._revoked:
            reason = "revoked key" if found else "unknown key"
            raise ApiFailure(401, "Bad Token", {"reason": reason})
        self._count(key, limit)
        account_id, role = found
        if not account_header:
            raise ApiFailure(403, f"Forbidden: the {header_name} header is missing")
        if account_header.strip() != account_id:
            raise ApiFailure(403, f"Forbidden: the key does not belong to the account in {header_name}")
        if role == "read-only" and method.upper() in WRITE_METHODS:
            raise ApiFailure(403, "Forbidden: this key is read-only")
        return account_id

    def _count(self, key: str, limit: RateLimit) -> None:
        """Counts the request in its key's sliding window, or raises the 429 it meets."""
        now = self.clock()
        used = self._used.setdefault(key, deque())
        while used and used[0] <= now - limit.windowSeconds:
            used.popleft()
        if len(used) >= limit.limit:
            raise rate_limited(limit, max(1, math.ceil(used[0] + limit.windowSeconds - now)))
        used.append(now)
