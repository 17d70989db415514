"""The client under injected faults: what is retried, what is not, and that no second session starts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from helpers import emulator_stats, sessions_created

from runner.client import ApiClient, RateLimiter
from runner.core.errors import (
    BadResponseError,
    ConnectionFailedError,
    ConnectionRefusedByPeerError,
    RateLimitedError,
    ReadTimeoutError,
    ServerError,
    exit_code_for,
)
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS

CHECKOUT = "0b9a3c4d-1111-4a5b-8c6d-000000000003"
TRIGGER = {"name": "faulty", "runLocation": "eu-west-1", "target": {"checkId": [CHECKOUT]}}


class Sleeps:
    """An injected sleep: records what the client asked for and sleeps for none of it."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def emulator(module_emulator: Emulator) -> Emulator:
    """Overrides conftest's: one server for the module, reset (state, faults, stats, limits) per test."""
    module_emulator.backend.reset()
    return module_emulator


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def client(emulator: Emulator, sleeps: Sleeps) -> Iterator[ApiClient]:
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, read_timeout=5, sleep=sleeps) as api:
        yield api


def inject(emulator: Emulator, *faults: dict[str, Any]) -> None:
    answer = requests.post(
        f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, json=list(faults), timeout=5
    )
    assert answer.status_code == 200, answer.text


def a_session_id(emulator: Emulator) -> str:
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id) as setup:
        return setup.trigger(TRIGGER).testSessionId


# --- reads: retried --------------------------------------------------------------------------


def test_503_burst_on_get_session_is_retried(client: ApiClient, emulator: Emulator, sleeps: Sleeps) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "status", "status": 503, "count": 3})
    session = client.get_session(session_id)
    assert session.testSessionId == session_id
    assert client.request_count == 4
    assert len(sleeps.calls) == 3
    # Full jitter below the exponential ceilings 0.5, 1, 2.
    assert all(0 <= s <= c for s, c in zip(sleeps.calls, (0.5, 1.0, 2.0), strict=True))
    assert emulator_stats(emulator, 5)["requests"]["get_session"] == {"503": 3, "200": 1}


@pytest.mark.parametrize("status", [500, 502])
def test_5xx_on_a_read_is_retried(client: ApiClient, emulator: Emulator, status: int) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "status", "status": status, "count": 1})
    assert client.get_session(session_id).testSessionId == session_id
    assert client.request_count == 2


@pytest.mark.parametrize(
    ("fault", "first_error"),
    [
        ({"kind": "non_json"}, "BadResponseError"),
        ({"kind": "non_json", "status": 502}, "ServerError"),
        ({"kind": "truncated"}, "ConnectionFailedError"),
        ({"kind": "reset"}, "ConnectionFailedError"),
    ],
    ids=["non_json 200", "proxy page 502", "truncated", "reset"],
)
def test_broken_answers_to_a_read_are_retried(
    emulator: Emulator, sleeps: Sleeps, fault: dict[str, Any], first_error: str
) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "count": 2, **fault})
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, sleep=sleeps) as api:
        assert api.get_session(session_id).testSessionId == session_id
        assert api.request_count == 3
    assert len(sleeps.calls) == 2


def test_broken_answer_errors_when_retries_are_exhausted(emulator: Emulator, sleeps: Sleeps) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "non_json", "count": 10})
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, max_retries=2, sleep=sleeps) as api:
        with pytest.raises(BadResponseError) as info:
            api.get_session(session_id)
        assert api.request_count == 3
    assert info.value.status == 200
    assert "not JSON" in info.value.message and "gave up after 3 attempts" in info.value.message
    assert exit_code_for(info.value) == ExitCode.SERVICE


def test_truncated_and_reset_raise_connection_failed_without_retries(emulator: Emulator) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "truncated", "count": 1})
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, max_retries=0) as api:
        with pytest.raises(ConnectionFailedError) as info:
            api.get_session(session_id)
        assert not isinstance(info.value, ConnectionRefusedByPeerError)
        inject(emulator, {"route": "get_session", "kind": "reset", "count": 1})
        with pytest.raises(ConnectionFailedError):
            api.get_session(session_id)


def test_retries_exhausted_raise_the_last_error(emulator: Emulator, sleeps: Sleeps) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "status", "status": 503, "count": 10})
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, max_retries=2, sleep=sleeps) as api:
        with pytest.raises(ServerError) as info:
            api.get_session(session_id)
        assert api.request_count == 3
    assert info.value.status == 503
    assert "gave up after 3 attempts" in str(info.value)


def test_slow_read_times_out_then_is_retried(emulator: Emulator, sleeps: Sleeps) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "slow", "delaySeconds": 1.0, "count": 1})
    with ApiClient(
        emulator.url, emulator.api_key, emulator.account_id, read_timeout=0.3, sleep=sleeps
    ) as api:
        assert api.get_session(session_id).testSessionId == session_id
        assert api.request_count == 2
    # Let the slow first answer finish, so it is not counted in the next test.
    assert emulator_stats(emulator, 3)["requests"]["get_session"] == {"200": 2}


def test_deadline_stops_retries(emulator: Emulator, sleeps: Sleeps) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "get_session", "kind": "status", "status": 503, "count": 10})
    now = [100.0]
    with ApiClient(
        emulator.url,
        emulator.api_key,
        emulator.account_id,
        sleep=sleeps,
        clock=lambda: now[0],
        deadline=100.0,
    ) as api:
        with pytest.raises(ServerError):
            api.get_session(session_id)
        assert api.request_count == 1
    assert sleeps.calls == []


# --- creates: a second session must never start ------------------------------------------------


@pytest.mark.parametrize("status", [500, 502])
def test_5xx_after_trigger_is_not_retried(client: ApiClient, emulator: Emulator, status: int) -> None:
    inject(emulator, {"route": "trigger", "kind": "status", "status": status, "phase": "after", "count": 1})
    with pytest.raises(ServerError) as info:
        client.trigger(TRIGGER)
    assert info.value.status == status
    assert client.request_count == 1
    assert sessions_created(emulator, 1) == 1  # the service did start it: the client must not start another


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"kind": "reset", "phase": "after"}, ConnectionFailedError),
        ({"kind": "truncated"}, ConnectionFailedError),
        ({"kind": "non_json"}, BadResponseError),
    ],
    ids=["reset", "truncated", "non_json"],
)
def test_lost_answer_to_trigger_is_not_retried(
    client: ApiClient, emulator: Emulator, fault: dict[str, Any], error: type[Exception]
) -> None:
    inject(emulator, {"route": "trigger", "count": 1, **fault})
    with pytest.raises(error) as info:
        client.trigger(TRIGGER)
    assert not isinstance(info.value, ConnectionRefusedByPeerError)
    assert client.request_count == 1
    assert sessions_created(emulator, 1) == 1


def test_503_before_trigger_is_retried_and_starts_one_session(
    client: ApiClient, emulator: Emulator, sleeps: Sleeps
) -> None:
    inject(emulator, {"route": "trigger", "kind": "status", "status": 503, "phase": "before", "count": 2})
    session = client.trigger(TRIGGER)
    assert session.status == "RUNNING"
    assert client.request_count == 3 and len(sleeps.calls) == 2
    assert sessions_created(emulator, 3) == 1


def test_slow_trigger_times_out_and_is_not_retried(emulator: Emulator, sleeps: Sleeps) -> None:
    # Phase after: the service starts the session, then is slow to answer.
    inject(emulator, {"route": "trigger", "kind": "slow", "delaySeconds": 0.6, "phase": "after", "count": 1})
    with ApiClient(
        emulator.url, emulator.api_key, emulator.account_id, read_timeout=0.2, sleep=sleeps
    ) as api:
        with pytest.raises(ReadTimeoutError):
            api.trigger(TRIGGER)
        assert api.request_count == 1
    assert sleeps.calls == []
    assert sessions_created(emulator, 1) == 1


@pytest.mark.parametrize(
    ("call", "route"),
    [
        (
            lambda api: api.create_error_group_analysis("7d1e2f3a-2222-4b5c-9d6e-000000000001"),
            "create_analysis",
        ),
        (lambda api: api.add_incident_update("inc-1001", {"description": "x"}), "incident_update"),
        (lambda api: api.create_dashboard({"header": "h", "customUrl": "fresh-one"}), "create_dashboard"),
    ],
    ids=["analysis", "incident update", "dashboard"],
)
def test_other_creates_are_not_retried_after_a_500(
    client: ApiClient, emulator: Emulator, call: Any, route: str
) -> None:
    inject(emulator, {"route": route, "kind": "status", "status": 500, "count": 1})
    with pytest.raises(ServerError):
        call(client)
    assert client.request_count == 1


def test_check_update_is_not_retried_after_a_reset(client: ApiClient, emulator: Emulator) -> None:
    inject(emulator, {"route": "update_check", "kind": "reset", "phase": "after", "count": 1})
    with pytest.warns(DeprecationWarning), pytest.raises(ConnectionFailedError):
        client.update_check("0b9a3c4d-1111-4a5b-8c6d-000000000001", {"description": "x"})
    assert client.request_count == 1


def test_cancel_is_retried_like_a_read(client: ApiClient, emulator: Emulator) -> None:
    session_id = a_session_id(emulator)
    inject(emulator, {"route": "cancel", "kind": "status", "status": 500, "count": 1})
    client.cancel(session_id)
    assert client.request_count == 2


# --- 429 and Retry-After -------------------------------------------------------------------------


def test_429_storm_honours_retry_after_for_a_create(
    client: ApiClient, emulator: Emulator, sleeps: Sleeps
) -> None:
    inject(emulator, {"route": "trigger", "kind": "rate_limit", "retryAfterSeconds": 2, "count": 3})
    client.trigger(TRIGGER)
    assert sleeps.calls == [2.0, 2.0, 2.0]
    assert client.request_count == 4
    assert sessions_created(emulator, 4) == 1


def test_retry_after_is_capped(emulator: Emulator, sleeps: Sleeps) -> None:
    inject(
        emulator, {"route": "get_error_group", "kind": "rate_limit", "retryAfterSeconds": 3600, "count": 1}
    )
    with ApiClient(
        emulator.url, emulator.api_key, emulator.account_id, sleep=sleeps, retry_after_max=5
    ) as api:
        api.get_error_group("7d1e2f3a-2222-4b5c-9d6e-000000000001")
    assert sleeps.calls == [5.0]


def test_429_storm_really_waits(emulator: Emulator) -> None:
    inject(emulator, {"route": "get_error_group", "kind": "rate_limit", "retryAfterSeconds": 1, "count": 1})
    started = time.monotonic()
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id) as api:
        api.get_error_group("7d1e2f3a-2222-4b5c-9d6e-000000000001")
    assert time.monotonic() - started >= 1.0


def test_429_until_retries_run_out(emulator: Emulator, sleeps: Sleeps) -> None:
    inject(emulator, {"route": "trigger", "kind": "rate_limit", "retryAfterSeconds": 1, "count": 10})
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, max_retries=3, sleep=sleeps) as api:
        with pytest.raises(RateLimitedError) as info:
            api.trigger(TRIGGER)
        assert api.request_count == 4
    assert info.value.retry_after == 1.0
    assert sessions_created(emulator, 4) == 0


# --- connection refused ------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("create", [False, True], ids=["read", "trigger"])
def test_connection_refused_is_retried_then_raised(sleeps: Sleeps, create: bool) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with ApiClient(url, "tsk_secret_key_value", "acc", max_retries=3, sleep=sleeps) as api:
        with pytest.raises(ConnectionRefusedByPeerError) as info:
            api.trigger(TRIGGER) if create else api.get_session("s-1")
        assert api.request_count == 4
    assert len(sleeps.calls) == 3
    assert "tsk_secret_key_value" not in str(info.value)
    assert info.value.status is None
    assert exit_code_for(info.value) == ExitCode.SERVICE


# --- the rate limiter against the service's limit --------------------------------------------------


def hammer(api: ApiClient, threads: int, calls: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(calls):
            try:
                api.get_error_group("7d1e2f3a-2222-4b5c-9d6e-000000000001")
            except Exception as exc:  # collected and asserted on by the test
                errors.append(exc)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return errors


def test_shared_rate_limiter_keeps_threads_under_the_service_limit(emulator: Emulator) -> None:
    emulator.backend.update_settings(limit=10, window_seconds=0.25)
    # The limiter stamps a request when it is sent; arrival jitter is covered by a small margin.
    limiter = RateLimiter(10, 0.3)
    with ApiClient(
        emulator.url, emulator.api_key, emulator.account_id, rate_limiter=limiter, max_retries=0
    ) as api:
        errors = hammer(api, threads=5, calls=6)
        assert errors == []
        assert api.request_count == 30
    counted = emulator_stats(emulator, 30)
    assert counted["rateLimited"] == 0
    assert counted["requests"]["get_error_group"] == {"200": 30}


def test_without_the_limiter_the_same_load_meets_429(emulator: Emulator) -> None:
    # The control for the test above: the emulator's limit does bite at this load.
    emulator.backend.update_settings(limit=10, window_seconds=0.25)
    unlimited = RateLimiter(10_000, 1.0)
    with ApiClient(
        emulator.url, emulator.api_key, emulator.account_id, rate_limiter=unlimited, max_retries=0
    ) as api:
        errors = hammer(api, threads=5, calls=6)
    assert errors and all(isinstance(e, RateLimitedError) for e in errors)
