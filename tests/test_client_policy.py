"""The client's non-network logic: retry policy, Retry-After, rate limiter, body validation, headers."""

from __future__ import annotations

import random
import threading
import time

import pytest

from runner.client import ApiClient, CallKind, RateLimiter, RetryPolicy, default_user_agent, validate_request
from runner.client.retry import parse_retry_after
from runner.core.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ConflictError,
    ConnectionFailedError,
    ConnectionRefusedByPeerError,
    InvalidRequestError,
    NotFoundError,
    PaymentRequiredError,
    PermissionDeniedError,
    RateLimitedError,
    ReadTimeoutError,
    ServerError,
)
from runner.models import TriggerRequest

POLICY = RetryPolicy()


def server(status: int) -> ServerError:
    return ServerError("boom", status=status)


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedByPeerError("refused"),
        ConnectionFailedError("reset"),
        ReadTimeoutError("slow"),
        BadResponseError("not json", status=200),
        server(500),
        server(502),
        server(503),
        RateLimitedError("slow down", status=429),
    ],
)
def test_reads_are_retried_on_transport_5xx_and_429(exc: Exception) -> None:
    assert POLICY.is_retryable(exc, CallKind.READ)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (ConnectionRefusedByPeerError("refused"), True),
        (RateLimitedError("slow down", status=429), True),
        (server(503), True),
        # Any of these may mean the session was started: never resend a create.
        (server(500), False),
        (server(502), False),
        (server(504), False),
        (ConnectionFailedError("reset"), False),
        (ReadTimeoutError("slow"), False),
        (BadResponseError("not json", status=201), False),
    ],
)
def test_creates_are_retried_only_when_the_service_did_nothing(exc: Exception, retried: bool) -> None:
    assert POLICY.is_retryable(exc, CallKind.CREATE) is retried  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "cls", [BadRequestError, AuthenticationError, PaymentRequiredError, PermissionDeniedError, NotFoundError,
            ConflictError],
)  # fmt: skip
@pytest.mark.parametrize("kind", list(CallKind))
def test_client_errors_are_never_retried(cls: type[Exception], kind: CallKind) -> None:
    assert not POLICY.is_retryable(cls("no"), kind)  # type: ignore[arg-type]


def test_backoff_is_full_jitter_capped_exponential() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=30.0)
    rng = random.Random(7)
    for attempt in range(12):
        ceiling = min(30.0, 0.5 * 2**attempt)
        samples = [policy.backoff(attempt, rng) for _ in range(200)]
        assert all(0.0 <= s <= ceiling for s in samples)
        # Full jitter spreads over the whole range, not just near the ceiling.
        assert min(samples) < ceiling * 0.2 and max(samples) > ceiling * 0.8


def test_retry_after_is_honoured_and_capped() -> None:
    rng = random.Random(1)
    limited = RateLimitedError("slow down", status=429, attributes={"retryAfterSeconds": 7})
    assert POLICY.delay(limited, 0, rng) == 7.0
    huge = RateLimitedError("slow down", status=429, attributes={"retryAfterSeconds": 3600})
    assert POLICY.delay(huge, 0, rng) == 60.0
    unavailable = ServerError("busy", status=503, attributes={"retryAfterSeconds": 2})
    assert POLICY.delay(unavailable, 3, rng) == 2.0
    # Without Retry-After: backoff.
    assert 0.0 <= POLICY.delay(RateLimitedError("x", status=429), 0, rng) <= 0.5


def test_retries_stop_after_max_retries() -> None:
    policy = RetryPolicy(max_retries=2)
    rng = random.Random(1)
    exc = server(503)
    assert policy.next_delay(exc, 0, CallKind.READ, rng) is not None
    assert policy.next_delay(exc, 1, CallKind.READ, rng) is not None
    assert policy.next_delay(exc, 2, CallKind.READ, rng) is None


def test_parse_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:40 GMT", now=now) == pytest.approx(20.0)
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", now=now) == 0.0


# --- rate limiter ---------------------------------------------------------------------------------


def test_rate_limiter_never_exceeds_the_limit_in_any_window_across_threads() -> None:
    limit, period = 8, 0.25
    seen = threading.local()

    def clock() -> float:
        # The value read inside the limiter's lock is the stamp of the slot the thread takes.
        seen.now = time.monotonic()
        return float(seen.now)

    limiter = RateLimiter(limit, period, clock=clock)
    stamps: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            limiter.acquire()
            with lock:
                stamps.append(seen.now)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started

    stamps.sort()
    assert len(stamps) == 30
    for i in range(len(stamps) - limit):
        # limit+1 consecutive slots must span at least a full period.
        assert stamps[i + limit] - stamps[i] >= period, f"window at {i} holds more than {limit}"
    # 30 slots at 8 per 0.25 s need at least 3 full periods of waiting.
    assert elapsed >= 3 * period


def test_rate_limiter_does_not_wait_below_the_limit() -> None:
    sleeps: list[float] = []
    limiter = RateLimiter(3, 10.0, sleep=sleeps.append)
    for _ in range(3):
        assert limiter.acquire() == 0.0
    assert sleeps == []
    assert limiter.in_window == 3


def test_rate_limiter_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0, 1.0)
    with pytest.raises(ValueError):
        RateLimiter(1, 0.0)


# --- validation and headers -------------------------------------------------------------------------


def test_validate_request_names_what_field_and_rule_without_echoing_values() -> None:
    with pytest.raises(InvalidRequestError) as info:
        validate_request(
            TriggerRequest,
            {
                "name": "",
                "runLocation": "eu-west-1",
                "environmentVariables": [{"key": "K", "value": "s3cr3t"}] * 51,
            },
            "trigger body",
        )
    lines = str(info.value).splitlines()
    assert "trigger body: name: must not be empty" in lines
    assert any(line.startswith("trigger body: environmentVariables: ") and "50" in line for line in lines)
    assert "s3cr3t" not in str(info.value)


def test_validate_request_passes_models_through() -> None:
    body = TriggerRequest(name="n", runLocation="eu-west-1")
    assert validate_request(TriggerRequest, body, "x") is body
    with pytest.raises(InvalidRequestError, match=r"x: \(body\): must be a mapping"):
        validate_request(TriggerRequest, ["not", "a", "mapping"], "x")  # type: ignore[arg-type]


def test_headers_user_agent_and_no_key_in_repr() -> None:
    client = ApiClient("http://127.0.0.1:9/base/", "KEY-123456", "acc-1")
    try:
        headers = client._headers
        assert headers["Authorization"] == "Bearer KEY-123456"
        assert headers["X-Service-Account"] == "acc-1"
        assert headers["Accept"] == "application/json"
        assert headers["User-Agent"] == default_user_agent()
        assert default_user_agent().startswith("testsession-runner/")
        assert "(python 3." in default_user_agent() and "; requests 2." in default_user_agent()
        assert client.base_url == "http://127.0.0.1:9/base"
        assert "KEY-123456" not in repr(client)
    finally:
        client.close()


def test_ids_cannot_change_the_path_and_empty_ids_are_refused() -> None:
    with ApiClient("http://127.0.0.1:9", "KEY-123456", "acc-1") as client:
        with pytest.raises(InvalidRequestError, match="test session id: must be a non-empty string"):
            client.get_session("")
        assert client.request_count == 0
