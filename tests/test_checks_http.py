"""API and URL checks run for real against HTTP and HTTPS servers on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from checks_servers import HttpServer, Tls, free_port, make_tls, start_http

from runner.checks import Attempt, Limits, run_check
from runner.models.check_definitions import parse_check_definition


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def secure(tls: Tls) -> Iterator[HttpServer]:
    server = start_http(tls.server_context)
    yield server
    server.stop()


def api(url: str, assertions: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    request = {"method": "GET", "url": url, "assertions": assertions or [], **fields.pop("request", {})}
    return {"id": "c1", "name": "API check", "checkType": "API", "request": request, **fields}


def run(definition: dict[str, Any], **kwargs: Any) -> Attempt:
    kwargs.setdefault("max_run_seconds", 30)
    return run_check(parse_check_definition(definition), **kwargs).final


def status(comparison: str, target: str) -> dict[str, str]:
    return {"source": "STATUS_CODE", "comparison": comparison, "target": target}


def test_a_passing_api_check_has_status_timings_and_evidence(web: HttpServer) -> None:
    attempt = run(api(web.url("/json"), [status("EQUALS", "200")]))
    assert attempt.passed and not attempt.degraded and attempt.error_class is None
    assert attempt.status_code == 200
    assert attempt.body_excerpt is not None and json.loads(attempt.body_excerpt)["data"]["id"] == 42
    timing = attempt.timing
    assert timing is not None and timing.tls_ms is None  # plain http: no TLS phase
    assert timing.connect_ms is not None and timing.first_byte_ms is not None and timing.total_ms > 0
    assert attempt.request is not None and attempt.request.method == "GET"
    assert attempt.request.remote_address == f"127.0.0.1:{web.port}"
    assert [a.passed for a in attempt.assertions] == [True]


def test_a_failed_status_assertion_says_what_was_expected_and_received(web: HttpServer) -> None:
    attempt = run(api(web.url("/status/503"), [status("EQUALS", "200")]))
    assert not attempt.passed and attempt.error_class == "ASSERTION_FAILURE"
    assert attempt.message == "STATUS_CODE EQUALS 200: received 503"
    assert attempt.failed_assertion is not None and attempt.failed_assertion.actual == "503"
    assert not attempt.network_failure


def test_a_5xx_fails_without_assertions_unless_should_fail(web: HttpServer) -> None:
    attempt = run(api(web.url("/status/503")))
    assert not attempt.passed and attempt.error_kind == "http_status"
    assert attempt.message is not None and attempt.message.startswith(
        "received HTTP 503 from GET http://127.0.0.1"
    )
    assert run(api(web.url("/status/503"), shouldFail=True)).passed


def test_should_fail_is_production_s_not_an_inversion(web: HttpServer) -> None:
    """shouldFail: a 4xx passes, a 2xx still passes, a failed assertion still fails."""
    expects_401 = [status("EQUALS", "401")]
    assert run(api(web.url("/status/401"), expects_401, shouldFail=True)).passed
    assert run(api(web.url("/json"), shouldFail=True)).passed
    wrong = run(api(web.url("/json"), expects_401, shouldFail=True))
    assert not wrong.passed and wrong.message == "STATUS_CODE EQUALS 401: received 200"


def test_redirects_are_followed_unless_switched_off(web: HttpServer) -> None:
    followed = run(api(web.url("/redirect"), [status("EQUALS", "200")]))
    assert followed.passed and followed.status_code == 200
    kept = run(api(web.url("/redirect"), [status("EQUALS", "302")], request={"followRedirects": False}))
    assert kept.passed and kept.status_code == 302
    looping = run(api(web.url("/redirect-loop")), limits=Limits(max_redirects=3))
    assert looping.error_kind == "too_many_redirects" and "more than 3 redirects" in (looping.message or "")


def test_url_check_is_a_get_with_status_assertions(web: HttpServer) -> None:
    definition = {"name": "URL", "checkType": "URL", "request": {"url": web.url("/status/404")}}
    attempt = run(definition)
    assert not attempt.passed and attempt.status_code == 404 and attempt.request is not None
    assert attempt.request.method == "GET"
    definition["request"]["assertions"] = [status("EQUALS", "404")]  # type: ignore[index]
    definition["shouldFail"] = True
    assert run(definition).passed


def test_slower_than_degraded_is_degraded_and_slower_than_max_is_timed_out(web: HttpServer) -> None:
    degraded = run(api(web.url("/slow?ms=150"), degradedResponseTime=50, maxResponseTime=3000))
    assert degraded.passed and degraded.degraded and degraded.response_time_ms is not None
    assert degraded.response_time_ms >= 150
    timed_out = run(api(web.url("/slow?ms=1500"), maxResponseTime=300))
    assert not timed_out.passed and timed_out.error_class == "TIMEOUT"
    assert (
        timed_out.message
        == f"timeout: no complete response within the maxResponseTime of 300 ms: 127.0.0.1:{web.port}"
    )
    assert timed_out.network_failure  # no status arrived: onlyOn NETWORK_ERROR retries it
    assert 250 <= timed_out.duration_ms < 1200


def test_the_check_type_maximum_run_time_bounds_a_longer_max_response_time(web: HttpServer) -> None:
    attempt = run(api(web.url("/slow?ms=1500"), maxResponseTime=20000), max_run_seconds=0.3)
    assert attempt.error_class == "TIMEOUT" and attempt.duration_ms < 1200
    assert "the maximum run time of 0.3 s for API checks" in (attempt.message or "")


def test_a_trickling_body_times_out_with_its_status_known(web: HttpServer) -> None:
    attempt = run(api(web.url("/trickle"), maxResponseTime=400))
    assert attempt.error_class == "TIMEOUT" and attempt.status_code == 200
    assert not attempt.network_failure  # a status arrived: not a network error
    assert attempt.body_excerpt and set(attempt.body_excerpt) == {"x"}


def test_connection_errors_name_their_kind_and_address(web: HttpServer) -> None:
    port = free_port()
    refused = run(api(f"http://127.0.0.1:{port}/"))
    assert (refused.error_class, refused.error_kind) == ("NETWORK_ERROR", "connection_refused")
    assert refused.message == f"connection refused: 127.0.0.1:{port}" and refused.network_failure
    reset = run(api(web.url("/reset")))
    assert reset.error_kind in ("connection_reset", "empty_reply") and reset.network_failure
    assert reset.message is not None and reset.message.endswith(f"127.0.0.1:{web.port}")
    empty = run(api(web.url("/empty")))
    assert (
        empty.error_kind == "empty_reply"
        and empty.message == f"empty reply (connection closed without an answer): 127.0.0.1:{web.port}"
    )
    lookup = run(api("http://no-such-host.invalid/health"))
    assert lookup.error_kind == "dns_lookup" and lookup.message == "DNS lookup failed: no-such-host.invalid"


def test_https_with_a_trusted_certificate_has_a_tls_phase(secure: HttpServer, tls: Tls) -> None:
    attempt = run(api(secure.url("/json"), [status("EQUALS", "200")]), limits=Limits(ca_file=tls.ca_file))
    assert attempt.passed and attempt.timing is not None and attempt.timing.tls_ms is not None


def test_an_untrusted_certificate_is_a_tls_error_unless_skip_ssl(secure: HttpServer) -> None:
    attempt = run(api(secure.url("/json")))
    assert (attempt.error_class, attempt.error_kind) == ("NETWORK_ERROR", "tls")
    assert attempt.message is not None and attempt.message.startswith("TLS error (")
    assert attempt.message.endswith(f"127.0.0.1:{secure.port}")
    assert run(api(secure.url("/json"), request={"skipSSL": True})).passed


def test_only_http_and_https_are_requested(tmp_path: Path) -> None:
    definition = api("file:///etc/passwd")
    attempt = run(definition)
    assert attempt.error_class == "CONFIGURATION_ERROR" and "http:// or https://" in (attempt.message or "")
    assert attempt.body_excerpt is None


def test_request_parts_reach_the_server(web: HttpServer) -> None:
    request = {
        "method": "POST",
        "headers": [{"key": "X-Trace", "value": "abc"}],
        "queryParameters": [{"key": "q", "value": "a b"}, {"key": "page", "value": "2"}],
        "body": '{"name": "Ada"}',
        "bodyType": "JSON",
        "basicAuth": {"username": "user", "password": "pw-123"},
    }
    attempt = run(api(web.url("/echo?x=1"), request=request))
    assert attempt.passed and attempt.body_excerpt is not None
    echo = json.loads(attempt.body_excerpt)
    assert echo["method"] == "POST" and echo["query"] == {"x": ["1"], "q": ["a b"], "page": ["2"]}
    assert echo["headers"]["x-trace"] == "abc" and echo["headers"]["content-type"] == "application/json"
    assert echo["headers"]["authorization"].startswith("Basic ") and echo["body"] == '{"name": "Ada"}'
    # The evidence never holds the password.
    assert attempt.request is not None and ("Authorization", "Basic ***") in attempt.request.headers


@pytest.mark.parametrize(
    ("body_type", "body", "content_type", "sent"),
    [
        ("FORM", "a=1&b=2", "application/x-www-form-urlencoded", "a=1&b=2"),
        ("RAW", "plain text", None, "plain text"),
        ("NONE", "sent anyway", None, "sent anyway"),
        ("GRAPHQL", "query { me { id } }", "application/json", '{"query": "query { me { id } }"}'),
    ],
)
def test_body_types_set_the_content_type(
    web: HttpServer, body_type: str, body: str, content_type: str | None, sent: str
) -> None:
    attempt = run(api(web.url("/echo"), request={"method": "PUT", "body": body, "bodyType": body_type}))
    assert attempt.body_excerpt is not None
    echo = json.loads(attempt.body_excerpt)
    assert echo["headers"].get("content-type") == content_type and echo["body"] == sent


def test_head_and_delete_and_an_empty_post(web: HttpServer) -> None:
    head = run(api(web.url("/json"), request={"method": "HEAD"}))
    assert head.passed and head.status_code == 200 and head.body_excerpt is None
    delete = run(api(web.url("/echo"), request={"method": "DELETE"}))
    assert delete.body_excerpt is not None and json.loads(delete.body_excerpt)["method"] == "DELETE"
    post = run(api(web.url("/echo"), request={"method": "POST"}))
    assert post.body_excerpt is not None and json.loads(post.body_excerpt)["headers"]["content-length"] == "0"


def test_the_body_is_read_up_to_the_cap(web: HttpServer) -> None:
    limits = Limits(body_cap_bytes=1000, excerpt_chars=100)
    status = {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}
    attempt = run(api(web.url("/big?bytes=50000"), [status]), limits=limits)
    assert attempt.passed and attempt.body_truncated and attempt.body_excerpt == "b" * 100
    assert attempt.truncation == "body truncated at 1000 bytes"
    # An assertion on the body cannot be judged on its first 1000 bytes: it fails closed (run.py).
    text = {"source": "TEXT_BODY", "comparison": "CONTAINS", "target": "bbbb"}
    cut = run(api(web.url("/big?bytes=50000"), [status, text]), limits=limits)
    assert not cut.passed and cut.error_kind == "body_truncated"
    assert (cut.message or "").startswith("TEXT_BODY CONTAINS bbbb: body truncated at 1000 bytes")


class _KeepAlive(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive: a client could send its next request on this connection. Records
    each request's client port and whether its TLS session was resumed."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[int, bool]]] = []

    def do_GET(self) -> None:
        resumed = bool(getattr(self.connection, "session_reused", False))
        self.seen.append((self.client_address[1], resumed))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_checks_one_after_another_each_connect_and_shake_hands_anew(tls: Tls, scheme: str) -> None:
    # A worker thread keeps its libcurl multi handle from one check to the next: no connection,
    # and no TLS session, of one check is used by the next, whose timing phases are its own.
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    server.daemon_threads = True
    if scheme == "https":
        server.socket = tls.server_context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    _KeepAlive.seen = []
    try:
        url = f"{scheme}://127.0.0.1:{server.server_address[1]}/"
        limits = Limits(ca_file=tls.ca_file)
        attempts = [run(api(url, [status("EQUALS", "200")]), limits=limits) for _ in range(3)]
    finally:
        server.shutdown()
        server.server_close()
    assert [a.passed for a in attempts] == [True] * 3
    assert all(a.timing is not None and a.timing.connect_ms is not None for a in attempts)
    ports = [port for port, _resumed in _KeepAlive.seen]
    assert len(set(ports)) == 3, ports  # three connections
    assert not any(resumed for _port, resumed in _KeepAlive.seen)
    if scheme == "https":
        assert all(a.timing is not None and a.timing.tls_ms is not None for a in attempts)


def test_the_headers_are_the_last_responses_after_a_redirect(web: HttpServer) -> None:
    # The header lines are read once, after the transfer: a redirect's own headers are not the answer's.
    from runner.checks.protocols.http import HttpRequest, perform

    request = HttpRequest("GET", web.url("/redirect"), (), None, None, True, False, "IPv4")
    response = perform(request, bound_seconds=10, limits=Limits())
    names = [key.lower() for key, _value in response.headers]
    assert response.status_code == 200 and "location" not in names
    assert response.content_type == "application/json; charset=utf-8"
