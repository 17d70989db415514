"""The service's HTTP API: one client, its retry policy and the shared rate limiter."""

from runner.client.http import ApiClient, default_user_agent, validate_request
from runner.client.ratelimit import RateLimiter
from runner.client.retry import CallKind, RetryPolicy

__all__ = ["ApiClient", "CallKind", "RateLimiter", "RetryPolicy", "default_user_agent", "validate_request"]
