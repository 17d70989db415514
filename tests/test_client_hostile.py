"""The client against a hostile service: answers that never end, trickle, inflate, or are another
session's. Every answer is bounded in time and size, and a wrong answer is never taken as the right one.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Ran, child_env, run_here
from hostile import (
    SESSION_A,
    SESSION_B,
    HostileServer,
    Route,
    endless_chunked,
    gzip_bomb,
    json_answer,
    no_content,
    session_json,
    trickle,
    trickle_headers,
)

from runner.client import ApiClient
from runner.core import errors
from runner.core.errors import exit_code_for
from runner.core.exitcodes import ExitCode

REPO = Path(__file__).resolve().parent.parent
KEY = "tsk_hostile_0123456789"
ACCOUNT = "0c0ffee0-0000-4000-8000-00000000a11c"
CHECK = "0b9a3c4d-1111-4a5b-8c6d-000000000003"


def session_routes(completion: Route, session: Route | None = None) -> dict[tuple[str, str], Route]:
    """A service that triggers SESSION_A fine and answers its completion with `completion`."""
    base = f"/v1/test-sessions/{SESSION_A}"
    return {
        ("POST", "/v1/test-sessions/trigger"): json_answer(
            session_json(SESSION_A, "RUNNING", "RUNNING"), 201
        ),
        ("GET", f"{base}/completion"): completion,
        ("POST", f"{base}/cancel"): no_content,
        ("GET", base): session or json_answer(session_json(SESSION_A, "CANCELLED", "CANCELLED")),
    }


def run_cli(url: str, tmp_path: Path, *extra: str) -> tuple[Ran, float]:
    """`testsession run` against `url`, in this process (helpers.run_here): what is tested is what the
    run does with the answers, not the process (test_interrupts and test_closed_stdout test that)."""
    env = child_env(TESTSESSION_API_KEY=KEY, TESTSESSION_ACCOUNT_ID=ACCOUNT, TESTSESSION_BASE_URL=url)
    argv = ["run", "--location", "eu-west-1", "--check-id", CHECK]
    argv += ["--no-rca", "--json", str(tmp_path / "results.json"), "--junit", "", "--markdown", ""]
    started = time.monotonic()
    done = run_here(argv + list(extra), env, tmp_path)
    return done, time.monotonic() - started


# --- item 5: an answer for another session ---------------------------------------------------------


@pytest.mark.parametrize("call", ["await_completion", "get_session"])
def test_answer_for_another_session_is_rejected(call: str) -> None:
    other = json_answer(session_json(SESSION_B))
    routes = {
        ("GET", f"/v1/test-sessions/{SESSION_A}/completion"): other,
        ("GET", f"/v1/test-sessions/{SESSION_A}"): other,
    }
    with HostileServer(routes) as server, ApiClient(server.url, KEY, ACCOUNT, read_timeout=5) as client:
        with pytest.raises(errors.MismatchedAnswerError) as caught:
            getattr(client, call)(SESSION_A)
        assert SESSION_B in str(caught.value) and SESSION_A in str(caught.value)
        assert exit_code_for(caught.value) == ExitCode.SERVICE
        assert len(server.requests) == 1  # a resend cannot cure it: not retried


def test_run_does_not_pass_on_another_sessions_result(tmp_path: Path) -> None:
    routes = session_routes(json_answer(session_json(SESSION_B, "PASSED", "PASSED")))
    with HostileServer(routes) as server:
        done, _ = run_cli(server.url, tmp_path, "--timeout", "20")
    assert done.returncode == ExitCode.SERVICE, done.stderr + done.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["verdict"] == "service-error"
    assert SESSION_B not in json.dumps(results["sessions"][0].get("results", []))


# --- item 9: base URLs that must not be used -------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "words"),
    [
        ("http://ci-user:s3cretPassw0rd@{host}", "credentials"),
        ("http://only-a-token-s3cretPassw0rd@{host}", "credentials"),
        ("ftp://{host}", "https://"),
        ("file:///etc/passwd", "https://"),
        ("{host}", "https://"),
    ],
)
def test_unusable_base_url_is_a_usage_error_and_nothing_is_sent(
    tmp_path: Path, spelling: str, words: str
) -> None:
    with HostileServer(session_routes(no_content)) as server:
        url = spelling.format(host=server.url.removeprefix("http://"))
        done, _ = run_cli(url, tmp_path, "--timeout", "5")
        assert server.requests == []
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "base URL" in done.stderr and words in done.stderr
    assert "s3cretPassw0rd" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


# --- item 1: every answer bounded in time, size and inflation --------------------------------------

MiB = 1024 * 1024
SESSION_PATH = f"/v1/test-sessions/{SESSION_A}"


def measure(call: Callable[[], object]) -> tuple[BaseException, float, int]:
    """(what `call` raised, seconds it took, peak bytes allocated meanwhile)."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        raised: BaseException = exc
    else:
        raise AssertionError("the hostile answer was accepted")
    finally:
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return raised, elapsed, peak


@pytest.mark.timeout(60)
def test_endless_body_ends_at_the_size_cap_with_bounded_memory() -> None:
    with (
        HostileServer({("GET", SESSION_PATH): endless_chunked}) as server,
        ApiClient(server.url, KEY, ACCOUNT, read_timeout=10, max_retries=0) as client,
    ):
        raised, elapsed, peak = measure(lambda: client.get_session(SESSION_A))
    assert isinstance(raised, errors.AnswerTooLargeError), raised
    assert "larger than 10 MiB" in str(raised)
    assert elapsed < 10
    assert peak < 3 * 10 * MiB, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.timeout(60)
def test_gzip_bomb_is_not_inflated_past_the_cap() -> None:
    """100 KiB on the wire, 100 MiB inflated: stops after 1 MiB (the limit set here) of output."""
    with (
        HostileServer({("GET", SESSION_PATH): gzip_bomb(100 * MiB)}) as server,
        ApiClient(server.url, KEY, ACCOUNT, max_retries=0, max_answer_bytes=1 * MiB) as client,
    ):
        raised, elapsed, peak = measure(lambda: client.get_session(SESSION_A))
    assert isinstance(raised, errors.AnswerTooLargeError), raised
    assert "larger than 1 MiB" in str(raised)
    assert peak < 4 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert elapsed < 5


@pytest.mark.timeout(60)
def test_gzip_answer_within_the_cap_is_read() -> None:
    """The bound does not cost honest compressed answers."""
    import gzip

    body = gzip.compress(json.dumps(session_json(SESSION_A)).encode())

    def route(h: object) -> None:
        from http.server import BaseHTTPRequestHandler

        assert isinstance(h, BaseHTTPRequestHandler)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    with (
        HostileServer({("GET", SESSION_PATH): route}) as server,
        ApiClient(server.url, KEY, ACCOUNT, max_retries=0) as client,
    ):
        assert client.get_session(SESSION_A).testSessionId == SESSION_A
        assert client.get_session(SESSION_A).testSessionId == SESSION_A  # the connection was reused


@pytest.mark.timeout(60)
@pytest.mark.parametrize("drip", [trickle, trickle_headers], ids=["body", "headers"])
def test_trickling_answer_ends_at_the_request_timeout(drip: Callable[[float], Route]) -> None:
    """A byte every 0.1 s, of the body or of the status line and headers (for which requests has no
    bound of its own): every socket read succeeds, the answer as a whole is cut at 1 s."""
    with (
        HostileServer({("GET", SESSION_PATH): drip(0.1)}) as server,
        ApiClient(server.url, KEY, ACCOUNT, read_timeout=1, max_retries=0) as client,
    ):
        raised, elapsed, _ = measure(lambda: client.get_session(SESSION_A))
    assert isinstance(raised, errors.ReadTimeoutError), raised
    assert "not complete within 1 s" in str(raised)
    # Cut at the 1 s bound: not before it, and not at the answer's own pace (391 bytes of body take
    # 39 s, ~70 of headers 7 s); a margin for a loaded machine (a 1.6 s window failed under load).
    assert 0.9 < elapsed < 4, elapsed


@pytest.mark.timeout(60)
def test_slow_headers_within_the_request_timeout_are_read() -> None:
    """The bound is the deadline, not the pace: headers trickled over about 0.5 s of 3 s are read, and
    the client's next call on the pool is bounded too."""
    with (
        HostileServer({("GET", SESSION_PATH): trickle_headers(0.007)}) as server,
        ApiClient(server.url, KEY, ACCOUNT, read_timeout=3, max_retries=0) as client,
    ):
        assert client.get_session(SESSION_A).testSessionId == SESSION_A
        server.routes[("GET", SESSION_PATH)] = trickle_headers(0.25)  # ~70 bytes: 17 s
        raised, elapsed, _ = measure(lambda: client.get_session(SESSION_A))
    assert isinstance(raised, errors.ReadTimeoutError), raised
    assert 2.9 < elapsed < 8, elapsed  # the 3 s bound, not the 17 s the headers take


@pytest.mark.timeout(60)
def test_trickling_long_poll_with_retries_ends_at_wait_plus_request_timeout() -> None:
    """Retries of the long poll do not restart its clock: the call ends by maxWait + read timeout."""
    with (
        HostileServer({("GET", f"{SESSION_PATH}/completion"): trickle(0.1)}) as server,
        ApiClient(server.url, KEY, ACCOUNT, read_timeout=1, backoff_base=0.01) as client,
    ):
        raised, elapsed, _ = measure(lambda: client.await_completion(SESSION_A, max_wait_seconds=1))
        polls = [r for r in server.requests if r == ("GET", f"{SESSION_PATH}/completion")]
    assert isinstance(raised, errors.ReadTimeoutError), raised
    # Each read is cut at 1 s: the first at the read timeout, its retry at the call's 2 s deadline. A
    # clock restarted by each retry would poll 5 times (max_retries 4), for 5 s or more.
    assert len(polls) <= 2, polls
    assert elapsed < 4.5, elapsed


@pytest.mark.timeout(90)
@pytest.mark.parametrize("hostile", ["trickle", "endless"])
def test_run_against_a_hostile_completion_ends_near_its_deadline(tmp_path: Path, hostile: str) -> None:
    """`--timeout 2 --request-timeout 1`: the run ends within the wait plus one request timeout
    (and a margin for start-up and the cancel), with a service error, never minutes later (the
    trickle's ~390 bytes take 2 minutes)."""
    completion = trickle(0.3) if hostile == "trickle" else endless_chunked
    with HostileServer(session_routes(completion)) as server:
        done, elapsed = run_cli(server.url, tmp_path, "--timeout", "2", "--request-timeout", "1")
        cancelled = ("POST", f"{SESSION_PATH}/cancel") in server.requests
        # From the trigger to the last request (the cancel's check): the service's view, free of
        # the interpreter's start-up time on a busy machine.
        served = server.arrivals[-1] - server.arrivals[0]
    assert done.returncode == ExitCode.SERVICE, done.stdout + done.stderr
    assert served < 2 + 1 + 1, f"{served:.1f} s"
    assert elapsed < 2 + 1 + 6, f"{elapsed:.1f} s"
    results = json.loads((tmp_path / "results.json").read_text())
    problem = json.dumps(results)
    assert "not complete within" in problem or "larger than" in problem
    assert cancelled  # nothing left running on the service
