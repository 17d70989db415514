"""The session's retry strategy applied to real checks, and a stop that ends a run promptly."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from checks_servers import HttpServer, free_port, start_tcp

from runner.checks import Attempt, CheckRun, backoff_seconds, next_retry_delay, run_check
from runner.models import RetryStrategy
from runner.models.check_definitions import parse_check_definition


class Recorder:
    """The injected sleep (waits recorded, none taken) and the attempt callback."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.seen: list[tuple[int, bool, bool]] = []  # (number, passed, final)

    def sleep(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return False

    def on_attempt(self, attempt: Attempt, final: bool) -> None:
        self.seen.append((attempt.number, attempt.passed, final))


def run(url: str, retry: dict[str, Any] | None, recorder: Recorder, **fields: Any) -> CheckRun:
    definition = {"name": "Retried", "checkType": "API", "request": {"url": url}, **fields}
    strategy = RetryStrategy(**retry) if retry else None
    return run_check(
        parse_check_definition(definition),
        max_run_seconds=30,
        retry=strategy,
        sleep=recorder.sleep,
        on_attempt=recorder.on_attempt,
    )


def test_a_check_that_fails_then_passes_is_flaky_with_its_attempts(web: HttpServer) -> None:
    recorder = Recorder()
    result = run(
        web.url("/flaky?key=flaky-1&fail=2"),
        {"type": "FIXED", "baseBackoffSeconds": 60, "maxRetries": 3},
        recorder,
    )
    assert result.passed and result.flaky and not result.cancelled
    assert [a.passed for a in result.attempts] == [False, False, True]
    assert result.attempts[0].message is not None and result.attempts[0].message.startswith(
        "received HTTP 503"
    )
    assert recorder.seen == [(1, False, False), (2, False, False), (3, True, True)]
    assert recorder.waits == [60, 60]


def test_only_on_network_error_retries_only_failures_without_an_answer(web: HttpServer) -> None:
    retry = {"type": "FIXED", "baseBackoffSeconds": 1, "maxRetries": 3, "onlyOn": ["NETWORK_ERROR"]}
    status = run(web.url("/flaky?key=status-1&fail=1"), retry, Recorder())
    assert len(status.attempts) == 1 and not status.passed  # a 503 is an answer: not retried
    reset = run(web.url("/flaky?key=reset-1&fail=1&how=reset"), retry, Recorder())
    assert [a.passed for a in reset.attempts] == [False, True] and reset.flaky
    assert reset.attempts[0].network_failure and reset.attempts[0].error_class == "NETWORK_ERROR"


@pytest.mark.parametrize(
    ("retry", "waits"),
    [
        ({"type": "FIXED", "baseBackoffSeconds": 5, "maxRetries": 3}, [5, 5, 5]),
        ({"type": "LINEAR", "baseBackoffSeconds": 5, "maxRetries": 3}, [5, 10, 15]),
        ({"type": "EXPONENTIAL", "baseBackoffSeconds": 5, "maxRetries": 3}, [5, 25, 125]),
        ({"type": "SINGLE_RETRY", "baseBackoffSeconds": 7}, [7]),
        # The third retry would start after 5 + 25 + 125 s, beyond maxDurationSeconds.
        (
            {"type": "EXPONENTIAL", "baseBackoffSeconds": 5, "maxRetries": 3, "maxDurationSeconds": 100},
            [5, 25],
        ),
    ],
)
def test_backoff_and_bounds_of_each_strategy(retry: dict[str, Any], waits: list[float]) -> None:
    recorder = Recorder()
    result = run(f"http://127.0.0.1:{free_port()}/", retry, recorder)
    assert recorder.waits == waits and len(result.attempts) == len(waits) + 1
    assert not result.passed and [final for _, _, final in recorder.seen] == [False] * len(waits) + [True]


def test_configuration_errors_are_not_retried() -> None:
    recorder = Recorder()
    result = run("http://127.0.0.1/{{MISSING}}", {"type": "FIXED", "baseBackoffSeconds": 1}, recorder)
    assert (
        len(result.attempts) == 1 and result.final.error_class == "CONFIGURATION_ERROR" and not recorder.waits
    )


def test_the_rule_itself() -> None:
    exponential = RetryStrategy(type="EXPONENTIAL", baseBackoffSeconds=1e200, maxRetries=3)
    assert backoff_seconds(exponential, 2) == float("inf")  # no overflow error, and no retry
    assert (
        next_retry_delay(exponential, retries_done=1, network_failure=True, elapsed=0, expected_duration=0)
        is None
    )
    assert (
        next_retry_delay(None, retries_done=0, network_failure=True, elapsed=0, expected_duration=0) is None
    )


def test_a_stop_during_the_wait_ends_the_run_at_once(web: HttpServer) -> None:
    stop = threading.Event()
    definition = parse_check_definition(
        {"name": "x", "checkType": "API", "request": {"url": web.url("/status/500")}}
    )
    started = time.monotonic()
    result = run_check(
        definition,
        max_run_seconds=30,
        retry=RetryStrategy(type="FIXED", baseBackoffSeconds=60, maxRetries=2),
        stop=stop,
        on_attempt=lambda attempt, final: stop.set(),
    )
    # Not the 60 s backoff: a bound far from it, for a loaded machine (the order says the stop ended it).
    assert result.cancelled and len(result.attempts) == 1 and time.monotonic() - started < 10


def _stopped_after(definition: dict[str, Any], seconds: float) -> tuple[CheckRun, float]:
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    started = time.monotonic()
    result = run_check(parse_check_definition(definition), max_run_seconds=30, stop=stop)
    return result, time.monotonic() - started


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_a_stop_during_a_request_ends_it_promptly(web: HttpServer) -> None:
    slow = {
        "name": "x",
        "checkType": "API",
        "maxResponseTime": 20000,
        "request": {"url": web.url("/slow?ms=5000")},
    }
    result, took = _stopped_after(slow, 0.2)
    assert result.cancelled and result.final.cancelled and took < 1.0  # the server answers after 5 s
    server, port = start_tcp()
    try:
        silent = {
            "name": "t",
            "checkType": "TCP",
            "maxResponseTime": 5000,
            "request": {
                "hostname": "127.0.0.1",
                "port": port,
                "data": "SILENT\n",
                "assertions": [{"source": "RESPONSE_DATA", "comparison": "CONTAINS", "target": "x"}],
            },
        }
        result, took = _stopped_after(silent, 0.2)
        assert result.cancelled and took < 1.0  # the server stays silent for 2 s
    finally:
        server.shutdown()
        server.server_close()
