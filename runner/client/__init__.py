"""The service's HTTP API: one client, its retry policy and the shared rate limiter.

The names below are loaded on first use (PEP 562): a module that needs one part of the package
(`runner.client.polling`'s pace of reads) does not load the client and the API's operation table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ApiClient", "CallKind", "RateLimiter", "RetryPolicy", "default_user_agent", "validate_request"]
