"""DNS checks: one query with dnspython's messages over a bounded socket (UDP or TCP).

Decisions (production: constructs/dns-monitor.mdx, uptime-monitoring/dns-monitors/configuration.mdx):
- nameServer: an IP address or a host name, optionally with a port (`1.1.1.1:53`, `[::1]:53`,
  `dns.google:53`); the `port` field wins over a port written there; 53 by default. With no
  nameServer, this machine's first configured resolver (production uses 8.8.8.8 with failover;
  locally the machine's own resolver is the one that knows a build's names, e.g. compose services).
- protocol UDP (default) or TCP; one query, recursion desired, no retry inside an attempt (the
  session's retry strategy is the retry). A truncated UDP answer is kept as it is (TC: true).
- RESPONSE_CODE: the rcode as text. Without a RESPONSE_CODE assertion, an rcode other than NOERROR
  fails the check (production: "pass when the return code is NOERROR and fail on error codes ...
  You can override this behavior by defining a custom return code assertion").
- JSON_ANSWER: production's documented shape: {Status, TC, RD, RA, AD, CD, Question: [{name, type}],
  Answer: [{name, type, TTL, data}]} (+ Authority when the answer has one); `data` is the record in
  presentation format (TXT: its strings joined, without quotes, as production shows them).
- TEXT_ANSWER: the whole answer as dnspython writes it (id, opcode, rcode, flags and the sections in
  zone-file lines), the "raw DNS response as plain text".
- RESPONSE_TIME: from sending the query to the answer read (name server lookup excluded).
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.resolver

import runner.checks.protocols.sockets as sockets
from runner.checks.outcome import (
    CONFIGURATION_ERROR,
    NETWORK_ERROR,
    TIMEOUT,
    Failure,
    RequestSummary,
    TimingPhases,
)
from runner.models.check_definitions import DnsCheckDefinition

MAX_ANSWER = 65535
_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:]+))(?::(?P<port>\d{1,5}))?$")


@dataclass(frozen=True)
class DnsResponse:
    rcode: str | None
    text: str
    json: dict[str, Any] | None
    timing: TimingPhases
    server: str
    failure: Failure | None
    cancelled: bool = False

    @property
    def response_time_ms(self) -> float:
        return self.timing.total_ms


def name_server(check: DnsCheckDefinition) -> tuple[str, int]:
    """(host, port) to ask; ValueError with a one-line reason."""
    r = check.request
    written = (r.nameServer or "").strip()
    if not written:
        try:
            host = dns.resolver.Resolver(configure=True).nameservers[0]
        except (dns.resolver.NoResolverConfiguration, IndexError, OSError):
            raise ValueError(
                "request.nameServer: none given and this machine has no resolver configured"
            ) from None
        return str(host), r.port_number or 53
    match = _HOST_PORT.match(written)
    if match is None:
        # A bare IPv6 address (::1) has colons but no brackets.
        return written, r.port_number or 53
    host = match.group("v6") or match.group("host")
    port = r.port_number or (int(match.group("port")) if match.group("port") else 53)
    return host, port


def summary(check: DnsCheckDefinition, server: str, protocol: str) -> RequestSummary:
    r = check.request
    return RequestSummary(
        kind="DNS", method=r.recordType, target=f"{r.query} @ {server}/{protocol}", remote_address=server
    )


def answer_json(message: dns.message.Message) -> dict[str, Any]:
    flags = message.flags

    def records(section: list[Any]) -> list[dict[str, Any]]:
        out = []
        for rrset in section:
            for rdata in rrset:
                data = (
                    b"".join(rdata.strings).decode("utf-8", "replace")
                    if rrset.rdtype == dns.rdatatype.TXT
                    else rdata.to_text()
                )
                name = rrset.name.to_text()
                kind = dns.rdatatype.to_text(rrset.rdtype)
                out.append({"name": name, "type": kind, "TTL": rrset.ttl, "data": data})
        return out

    doc: dict[str, Any] = {
        "Status": dns.rcode.to_text(message.rcode()),
        "TC": bool(flags & dns.flags.TC),
        "RD": bool(flags & dns.flags.RD),
        "RA": bool(flags & dns.flags.RA),
        "AD": bool(flags & dns.flags.AD),
        "CD": bool(flags & dns.flags.CD),
        "Question": [
            {"name": q.name.to_text(), "type": dns.rdatatype.to_text(q.rdtype)} for q in message.question
        ],
        "Answer": records(message.answer),
    }
    if message.authority:
        doc["Authority"] = records(message.authority)
    return doc


def perform(
    check: DnsCheckDefinition,
    *,
    bound_seconds: float,
    stop: threading.Event | None = None,
    timeout_text: str = "",
) -> DnsResponse:
    r = check.request
    protocol = r.protocol.upper()
    start = time.monotonic()
    deadline = start + bound_seconds
    server = "?"

    def result(
        failure: Failure | None, sent: float | None = None, message: dns.message.Message | None = None
    ) -> DnsResponse:
        now = time.monotonic()
        total = round((now - (sent if sent is not None else start)) * 1000, 3)
        timing = TimingPhases(None, None, None, total if message else None, None, total)
        if message is None:
            return DnsResponse(
                None, "", None, timing, server, failure, cancelled=failure_kind(failure) == "cancelled"
            )
        return DnsResponse(
            dns.rcode.to_text(message.rcode()),
            message.to_text(),
            answer_json(message),
            timing,
            server,
            failure,
        )

    try:
        host, port = name_server(check)
        query = dns.message.make_query(r.query, dns.rdatatype.from_text(r.recordType))
    except (ValueError, dns.exception.DNSException) as exc:
        return result(Failure(CONFIGURATION_ERROR, "invalid_definition", str(exc), network=False))
    kind = socket.SOCK_DGRAM if protocol == "UDP" else socket.SOCK_STREAM
    try:
        target = sockets.resolve(host, port, socket.AF_UNSPEC, kind, deadline, stop)
        server = target.shown
    except OSError:
        return result(Failure(NETWORK_ERROR, "dns_lookup", f"DNS lookup failed: name server {host}"))
    except sockets.Stopped:
        return result(Failure(NETWORK_ERROR, "cancelled", f"cancelled: {host}"))
    except sockets.DeadlineReached:
        return result(
            Failure(TIMEOUT, "timeout", f"timeout: name server {host} not found within {timeout_text}")
        )
    sock: socket.socket | None = None
    sent: float | None = None
    try:
        sock = sockets.connect(target, kind, deadline, stop)
        wire = query.to_wire()
        sent = time.monotonic()
        if kind == socket.SOCK_DGRAM:
            sock.send(wire)
            answer = _read_udp(sock, query, deadline, stop)
        else:
            sockets.send_all(sock, struct.pack("!H", len(wire)) + wire, deadline, stop)
            answer = _read_tcp(sock, deadline, stop)
        if not query.is_response(answer):
            return result(
                Failure(
                    NETWORK_ERROR, "bad_answer", f"the answer does not match the query: {server}/{protocol}"
                ),
                sent,
            )
        return result(None, sent, answer)
    except sockets.Stopped:
        return result(Failure(NETWORK_ERROR, "cancelled", f"cancelled: {server}/{protocol}"), sent)
    except sockets.DeadlineReached:
        return result(
            Failure(TIMEOUT, "timeout", f"timeout: no DNS answer within {timeout_text}: {server}/{protocol}"),
            sent,
        )
    except OSError as exc:
        if exc.errno in sockets.REFUSED:
            return result(
                Failure(NETWORK_ERROR, "connection_refused", f"connection refused: {server}/{protocol}"), sent
            )
        if exc.errno in sockets.RESET:
            return result(
                Failure(NETWORK_ERROR, "connection_reset", f"connection reset: {server}/{protocol}"), sent
            )
        reason = (exc.strerror or str(exc)).lower()
        return result(
            Failure(NETWORK_ERROR, "network", f"DNS query failed ({reason}): {server}/{protocol}"), sent
        )
    except (dns.exception.DNSException, EOFError, ValueError) as exc:
        return result(
            Failure(
                NETWORK_ERROR,
                "bad_answer",
                f"malformed DNS answer ({type(exc).__name__}): {server}/{protocol}",
            ),
            sent,
        )
    finally:
        if sock is not None:
            sock.close()


def failure_kind(failure: Failure | None) -> str | None:
    return failure.kind if failure else None


def _read_udp(
    sock: socket.socket, query: dns.message.Message, deadline: float, stop: threading.Event | None
) -> dns.message.Message:
    while True:
        sockets.wait_readable(sock, deadline, stop)
        data = sock.recv(MAX_ANSWER)
        try:
            answer = dns.message.from_wire(data, ignore_trailing=True, raise_on_truncation=False)
        except dns.exception.DNSException:
            continue  # not an answer to us: keep waiting for one until the deadline
        if query.is_response(answer):
            return answer


def _read_tcp(sock: socket.socket, deadline: float, stop: threading.Event | None) -> dns.message.Message:
    length = struct.unpack("!H", _read_exact(sock, 2, deadline, stop))[0]
    return dns.message.from_wire(_read_exact(sock, length, deadline, stop), ignore_trailing=True)


def _read_exact(sock: socket.socket, size: int, deadline: float, stop: threading.Event | None) -> bytes:
    data = bytearray()
    while len(data) < size:
        sockets.wait_readable(sock, deadline, stop)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the name server closed the connection")
        data += chunk
    return bytes(data)
