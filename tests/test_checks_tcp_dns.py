"""TCP and DNS checks run for real against a TCP server and a small DNS server (UDP and TCP) on loopback."""

from __future__ import annotations

from typing import Any

import pytest
from checks_servers import DnsServer, free_port

from runner.checks import Attempt, Variable, VariableSources, run_check
from runner.checks.limits import Limits
from runner.models.check_definitions import parse_check_definition


def run(definition: dict[str, Any], limits: Limits | None = None) -> Attempt:
    return run_check(parse_check_definition(definition), max_run_seconds=30, limits=limits or Limits()).final


def tcp(
    port: int, data: str | None = None, assertions: list[dict[str, Any]] | None = None, **fields: Any
) -> Attempt:
    request = {"hostname": "127.0.0.1", "port": port, "data": data, "assertions": assertions or []}
    return run({"name": "TCP", "checkType": "TCP", "request": request, **fields})


def data_(comparison: str, target: str, regex: str | None = None) -> dict[str, Any]:
    return {"source": "RESPONSE_DATA", "comparison": comparison, "target": target, "regex": regex}


def test_tcp_ping_pong_reads_until_the_line_goes_quiet(tcp_port: int) -> None:
    attempt = tcp(tcp_port, "PING\n", [data_("CONTAINS", "PONG"), data_("EQUALS", "PONG", "\\+(\\w+)")])
    assert attempt.passed, attempt.message
    assert attempt.body_excerpt == "+PONG\r\n" and attempt.request is not None
    assert attempt.request.target == f"127.0.0.1:{tcp_port}" and attempt.request.body_excerpt == "PING\n"
    # The server keeps the line open until the client closes (30 s): the answer ended when nothing more
    # came, before the check's 30 s bound, and the quiet wait after the last byte is not response time.
    assert attempt.duration_ms < 15_000
    assert attempt.response_time_ms is not None
    assert attempt.response_time_ms + Limits().tcp_quiet_seconds * 1000 <= attempt.duration_ms + 1
    assert (
        attempt.timing is not None
        and attempt.timing.connect_ms is not None
        and attempt.timing.first_byte_ms is not None
    )


def test_tcp_assertions_fail_with_what_came_back(tcp_port: int) -> None:
    attempt = tcp(tcp_port, "HELLO\n", [data_("NOT_CONTAINS", "hello")])
    assert attempt.error_class == "ASSERTION_FAILURE"
    assert attempt.message == "RESPONSE_DATA NOT_CONTAINS hello: received hello there"
    timing = tcp(tcp_port, "HELLO\n", [{"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "0"}])
    assert timing.message is not None and timing.message.startswith("RESPONSE_TIME LESS_THAN 0: received ")


def test_a_port_check_without_data_only_connects(tcp_port: int) -> None:
    attempt = tcp(tcp_port)
    assert (
        attempt.passed
        and attempt.body_excerpt is None
        and attempt.timing is not None
        and attempt.timing.first_byte_ms is None
    )


def test_tcp_degraded_timed_out_refused_and_reset(tcp_port: int) -> None:
    late = [data_("CONTAINS", "late")]
    degraded = tcp(tcp_port, "SLOW\n", late, degradedResponseTime=200, maxResponseTime=3000)
    assert degraded.passed and degraded.degraded
    timed_out = tcp(tcp_port, "SLOW\n", late, maxResponseTime=300)
    assert timed_out.error_class == "TIMEOUT" and timed_out.network_failure
    assert (
        timed_out.message
        == f"timeout: no response data within the maxResponseTime of 300 ms: 127.0.0.1:{tcp_port}"
    )
    # Data that keeps coming is not a silent server: the message says the answer did not end.
    # The line is quiet when no byte came for tcp_quiet_seconds (0.1 s): a 20 ms trickle from a server
    # thread starved for longer under load read as an answer that ended (ASSERTION_FAILURE). With a quiet
    # wait longer than any such stall, only the 300 ms bound can end this read.
    request = {"hostname": "127.0.0.1", "port": tcp_port, "data": "TRICKLE\n", "assertions": late}
    check = {"name": "TCP", "checkType": "TCP", "request": request, "maxResponseTime": 300}
    trickle = run(check, Limits(tcp_quiet_seconds=5.0))
    assert trickle.error_class == "TIMEOUT" and not trickle.network_failure
    assert trickle.message == (
        "timeout: data kept arriving, the answer did not end within the maxResponseTime of 300 ms: "
        f"127.0.0.1:{tcp_port}"
    )
    port = free_port()
    refused = tcp(port)
    assert (
        refused.error_kind == "connection_refused"
        and refused.message == f"connection refused: 127.0.0.1:{port}"
    )
    reset = tcp(tcp_port, "RESET\n", late)
    assert (
        reset.error_kind == "connection_reset" and reset.message == f"connection reset: 127.0.0.1:{tcp_port}"
    )


def test_tcp_should_fail_passes_a_failed_connection(tcp_port: int) -> None:
    assert tcp(free_port(), shouldFail=True).passed
    wrong = tcp(tcp_port, "HELLO\n", [data_("CONTAINS", "bye")], shouldFail=True)
    assert not wrong.passed  # a connection that worked: only its assertions decide


def dns_check(server: DnsServer, query: str, record_type: str, assertions: list[dict[str, Any]] | None = None,
              **request: Any) -> Attempt:  # fmt: skip
    body = {"query": query, "recordType": record_type, "nameServer": "127.0.0.1", "port": server.port,
            "assertions": assertions or [], **request}  # fmt: skip
    return run(
        {"name": "DNS", "checkType": "DNS", "request": body, "maxResponseTime": request.pop("max_ms", 1000)}
    )


def answer(prop: str, comparison: str, target: str) -> dict[str, Any]:
    return {"source": "JSON_ANSWER", "property": prop, "comparison": comparison, "target": target}


@pytest.mark.parametrize("protocol", ["UDP", "TCP"])
def test_dns_a_record_over_udp_and_tcp(dns_server: DnsServer, protocol: str) -> None:
    assertions = [
        {"source": "RESPONSE_CODE", "comparison": "EQUALS", "target": "NOERROR"},
        answer("$.Answer[*].data", "HAS_VALUE", "10.1.2.3"),  # a record set has no order
        answer("$.Answer.length", "EQUALS", "2"),
        answer("$.Answer[0].TTL", "GREATER_THAN", "299"),
        answer("$.Question[0].type", "EQUALS", "A"),
        {"source": "TEXT_ANSWER", "comparison": "CONTAINS", "target": "10.1.2.4"},
        {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "1000"},
    ]
    attempt = dns_check(dns_server, "app.test", "A", assertions, protocol=protocol)
    assert attempt.passed, attempt.message
    assert attempt.response_code == "NOERROR" and attempt.request is not None
    assert attempt.request.target == f"app.test @ 127.0.0.1:{dns_server.port}/{protocol}"


@pytest.mark.parametrize(
    ("query", "record_type", "data"),
    [
        ("app.test", "AAAA", "2001:db8::1"),
        ("www.app.test", "CNAME", "app.test."),
        ("app.test", "MX", "20 mail2.app.test."),
        ("app.test", "TXT", "v=spf1 include:_spf.app.test ~all"),  # without quotes, as production shows
        ("app.test", "NS", "ns1.app.test."),
        ("app.test", "SOA", "ns1.app.test. admin.app.test. 2024010100 7200 3600 1209600 3600"),
    ],
)
def test_dns_record_types(dns_server: DnsServer, query: str, record_type: str, data: str) -> None:
    attempt = dns_check(dns_server, query, record_type, [answer("$.Answer[*].data", "HAS_VALUE", data)])
    assert attempt.passed, attempt.message


def test_dns_error_codes_fail_unless_asserted(dns_server: DnsServer) -> None:
    missing = dns_check(dns_server, "nothing.app.test", "A")
    assert missing.error_kind == "dns_response_code" and missing.response_code == "NXDOMAIN"
    assert missing.message == f"DNS answer NXDOMAIN for nothing.app.test A: 127.0.0.1:{dns_server.port}/UDP"
    expected = dns_check(
        dns_server,
        "nothing.app.test",
        "A",
        [{"source": "RESPONSE_CODE", "comparison": "EQUALS", "target": "NXDOMAIN"}],
    )
    assert expected.passed
    servfail = dns_check(dns_server, "servfail.app.test", "A", [answer("$.Status", "EQUALS", "NOERROR")])
    assert servfail.message == "JSON_ANSWER $.Status EQUALS NOERROR: received SERVFAIL"
    assert servfail.body_excerpt is not None and "rcode SERVFAIL" in servfail.body_excerpt


def test_dns_timeouts_degraded_and_no_server(dns_server: DnsServer) -> None:
    slow = dns_check(dns_server, "slow.app.test", "A", max_ms=200)
    assert slow.error_class == "TIMEOUT" and slow.network_failure
    assert (
        slow.message
        == f"timeout: no DNS answer within the maxResponseTime of 200 ms: 127.0.0.1:{dns_server.port}/UDP"
    )
    request = {"query": "slow.app.test", "recordType": "A", "nameServer": f"127.0.0.1:{dns_server.port}"}
    degraded = run(
        {
            "name": "DNS",
            "checkType": "DNS",
            "degradedResponseTime": 100,
            "maxResponseTime": 2000,
            "request": request,
        }
    )
    assert degraded.passed and degraded.degraded
    port = free_port()
    nobody = dns_check(dns_server, "app.test", "A", protocol="TCP", port=port)
    assert (
        nobody.error_kind == "connection_refused"
        and nobody.message == f"connection refused: 127.0.0.1:{port}/TCP"
    )


def test_dns_json_answer_has_production_s_shape(dns_server: DnsServer) -> None:
    keys = [
        answer("$", "HAS_KEY", key) for key in ("Status", "TC", "RD", "RA", "AD", "CD", "Question", "Answer")
    ]
    flags = [
        answer("$.TC", "EQUALS", "false"),
        answer("$.RD", "EQUALS", "true"),
        answer("$.RA", "EQUALS", "true"),
    ]
    second = [
        answer("$.Answer[*].data", "HAS_VALUE", "20 mail2.app.test."),
        answer("$.Answer[*].type", "EQUALS", "MX"),  # every record
    ]
    attempt = dns_check(dns_server, "app.test", "MX", keys + flags + second)
    assert attempt.passed, attempt.message
    assert len(attempt.assertions) == 13


# --- {{VARIABLES}} in TCP and DNS fields (ours: docs/checks.md) ---------------------------------------


def with_vars(definition: dict[str, Any], sources: VariableSources) -> Attempt:
    return run_check(parse_check_definition(definition), max_run_seconds=30, variables=sources).final


def test_tcp_hostname_port_and_data_take_variables_from_session_account_and_check(tcp_port: int) -> None:
    request = {"hostname": "{{HOST}}", "port": "{{TCP_PORT}}", "data": "{{COMMAND}}\n",
               "assertions": [data_("CONTAINS", "hello")]}  # fmt: skip
    sources = VariableSources(
        session=(Variable("HOST", "127.0.0.1"),),
        account=(Variable("TCP_PORT", str(tcp_port)), Variable("HOST", "10.255.255.1")),
        check=(Variable("COMMAND", "HELLO"),),
    )
    attempt = with_vars({"name": "TCP", "checkType": "TCP", "request": request}, sources)
    assert attempt.passed, attempt.message
    assert attempt.request is not None and attempt.request.target == f"127.0.0.1:{tcp_port}"
    assert attempt.request.body_excerpt == "HELLO\n"  # {{X}} is not URI-encoded in these fields


def test_an_unknown_or_bad_variable_in_a_tcp_check_fails_it_naming_the_field(tcp_port: int) -> None:
    request = {"hostname": "127.0.0.1", "port": "{{TCP_PORT}}", "data": "PING\n"}
    unknown = with_vars({"name": "TCP", "checkType": "TCP", "request": request}, VariableSources())
    assert unknown.error_class == "CONFIGURATION_ERROR" and unknown.error_kind == "unknown_variable"
    assert unknown.message is not None
    assert unknown.message.startswith("unknown variable TCP_PORT in request.port")
    word = VariableSources(session=(Variable("TCP_PORT", "not-a-port", secret=True),))
    bad = with_vars({"name": "TCP", "checkType": "TCP", "request": request}, word)
    assert bad.error_kind == "invalid_definition" and bad.message is not None
    assert bad.message.startswith("request.port: expected a port number") and "not-a-port" not in bad.message


def test_a_secret_in_tcp_fields_is_masked_in_the_attempt() -> None:
    closed = free_port()
    request = {"hostname": "{{HOST}}", "port": closed, "data": "{{TOKEN}}\n"}
    sources = VariableSources(
        account=(Variable("HOST", "127.0.0.1", secret=True), Variable("TOKEN", "tcp-token-123", secret=True))
    )
    attempt = with_vars({"name": "TCP", "checkType": "TCP", "request": request}, sources)
    assert attempt.error_kind == "connection_refused", attempt.message
    shown = repr(attempt)
    assert "tcp-token-123" not in shown and "127.0.0.1" not in shown
    assert attempt.message == f"connection refused: ***:{closed}"


def test_dns_query_name_server_and_port_take_variables(dns_server: DnsServer) -> None:
    answer = {"source": "TEXT_ANSWER", "comparison": "CONTAINS", "target": "10.1.2.3"}
    request = {"query": "{{NAME}}", "recordType": "A", "nameServer": "{{NS}}", "port": "{{DNS_PORT}}",
               "assertions": [answer]}  # fmt: skip
    sources = VariableSources(
        session=(Variable("NAME", "app.test"),),
        account=(Variable("NS", "127.0.0.1"), Variable("DNS_PORT", str(dns_server.port))),
    )
    attempt = with_vars({"name": "DNS", "checkType": "DNS", "request": request}, sources)
    assert attempt.passed, attempt.message
    assert attempt.request is not None
    assert attempt.request.target == f"app.test @ 127.0.0.1:{dns_server.port}/UDP"
    missing = with_vars({"name": "DNS", "checkType": "DNS", "request": request}, VariableSources())
    assert missing.error_kind == "unknown_variable" and missing.message is not None
    assert missing.message.startswith("unknown variable NAME in request.query")


def test_an_answer_already_there_when_the_deadline_has_passed_is_read_not_a_timeout() -> None:
    """A thread the machine ran late (a loaded CI runner) finds the answer waiting: it counts. Only a
    socket still silent at the deadline is a timeout."""
    import socket
    import time

    import pytest

    from runner.checks.protocols import sockets

    ours, theirs = socket.socketpair()
    with ours, theirs:
        passed = time.monotonic() - 1.0
        with pytest.raises(sockets.DeadlineReached):
            sockets.wait_readable(ours, passed, None)  # nothing there: a timeout
        theirs.send(b"answer")
        sockets.wait_readable(ours, passed, None)  # there: read, although the deadline passed
        assert ours.recv(16) == b"answer"
