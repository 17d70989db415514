"""The service's HTTP API: one client, its retry policy and the shared rate limiter.

The names below are loaded on first use (PEP 562): a module that needs one part of the package
(`runner.client.polling`'s pace of reads) does not load the client and the API's operation table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.core.lazy import lazy_names

if TYPE_CHECKING:
    from runner.client.http import ApiClient, default_user_agent, validate_request
    from runner.client.ratelimit import RateLimiter
    from runner.client.retry import CallKind, RetryPolicy

_HOME = {
    "ApiClient": "http",
    "default_user_agent": "http",
    "validate_request": "http",
    "RateLimiter": "ratelimit",
    "CallKind": "retry",
    "RetryPolicy": "retry",
}


__getattr__ = lazy_names(__name__, _HOME)


__all__ = ["ApiClient", "CallKind", "RateLimiter", "RetryPolicy", "default_user_agent", "validate_request"]
