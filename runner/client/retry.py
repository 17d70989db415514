"""Which failed calls may be sent again, and how long to wait first.

The rule that matters most: a call that creates something (a test session above all) is resent only
when the request provably did not reach the service (connection refused) or the service said it did
nothing (rate limited, 503). A 500, a reset connection, a read timeout or an unreadable answer may
mean the session was started, and a second session must never be started. Each operation's kind
(READ, IDEMPOTENT, CREATE) is declared in its row of runner/models/operations.py.

Rate limited is a 429, or a RateLimitedError of another status that a caller recognised as one
(GitHub's primary rate limit answers 403 with `x-ratelimit-remaining: 0`; see `ci/comment.py`).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass

from runner.core.errors import (
    ApiError,
    BadResponseError,
    ConnectionFailedError,
    ConnectionRefusedByPeerError,
    RateLimitedError,
    ReadTimeoutError,
    ServerError,
)
from runner.models.operations import CallKind

__all__ = [
    "DID_NOTHING_STATUSES",
    "CallKind",
    "RetryPolicy",
    "did_nothing",
    "parse_retry_after",
    "retry_after_of",
]

# Statuses with which the service says it did not act on the request.
DID_NOTHING_STATUSES = frozenset({429, 503})


def did_nothing(exc: ApiError) -> bool:
    """The answer says the request was not acted on: rate limited (any status) or 503."""
    if isinstance(exc, RateLimitedError):
        return True
    return isinstance(exc, ServerError) and exc.status in DID_NOTHING_STATUSES


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 60.0

    def is_retryable(self, exc: ApiError, kind: CallKind) -> bool:
        if kind is CallKind.CREATE:
            if isinstance(exc, ConnectionRefusedByPeerError):
                return True
            return did_nothing(exc)
        # READ and IDEMPOTENT: a second copy does no harm, so anything that may pass is retried.
        if isinstance(exc, (ConnectionFailedError, ReadTimeoutError, BadResponseError)):
            return True
        return isinstance(exc, (ServerError, RateLimitedError))

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(max, base * 2**attempt)]; attempt 0 is the first retry."""
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** min(attempt, 32)))
        return rng.uniform(0.0, ceiling)

    def delay(self, exc: ApiError, attempt: int, rng: random.Random) -> float:
        """Retry-After of a 429/503 when present (capped), else exponential backoff with jitter."""
        if did_nothing(exc):
            retry_after = retry_after_of(exc)
            if retry_after is not None:
                return min(max(retry_after, 0.0), self.retry_after_max)
        return self.backoff(attempt, rng)

    def next_delay(self, exc: ApiError, attempt: int, kind: CallKind, rng: random.Random) -> float | None:
        """Seconds to wait before retry number `attempt` (0-based), or None: do not retry."""
        if attempt >= self.max_retries or not self.is_retryable(exc, kind):
            return None
        return self.delay(exc, attempt, rng)


def retry_after_of(exc: ApiError) -> float | None:
    value = exc.attributes.get("retryAfterSeconds")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def parse_retry_after(header: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date; None when absent or unreadable."""
    if header is None:
        return None
    header = header.strip()
    try:
        seconds = float(header)
    except ValueError:
        pass
    else:
        # "nan", "inf", "1e999": not a delay anyone can wait for; ignored (backoff applies instead).
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    try:
        return max(when.timestamp() - current, 0.0)
    except (OverflowError, ValueError, OSError):
        return None
