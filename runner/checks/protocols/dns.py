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
from dataclasses import dataclass
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.resolver

import runner.checks.protocols.sockets as sockets
from runner.checks.failures import Failure, FailureKind
from runner.checks.outcome import RequestSummary, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.socket_fields import rendered
from runner.checks.variables import Substitution
from runner.models.check_definitions import DnsCheckDefinition

MAX_ANSWER = 65535
_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:]+))(?::(?P<port>\d{1,5}))?$")


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


class DnsProtocol(CheckProtocol[DnsCheckDefinition]):
    """One query; an rcode other than NOERROR fails the check unless an assertion looks at it."""

    def fill(self, check: DnsCheckDefinition, subst: Substitution) -> DnsCheckDefinition:
        return rendered(check, subst)

    def perform(self, check: DnsCheckDefinition, job: Job) -> Observation:
        r = check.request
        protocol = r.protocol.upper()
        clock = sockets.Stopwatch()
        asked = _query(check, job, clock)
        server, answer = asked.server, asked.answer
        total = clock.ms("sent")
        rcode = dns.rcode.to_text(answer.rcode()) if answer is not None else None
        text = answer.to_text() if answer is not None else ""
        implicit = None
        asserts_code = any(a.source == "RESPONSE_CODE" for a in r.assertions)
        if rcode not in (None, "NOERROR") and not asserts_code and not check.shouldFail:
            message = f"DNS answer {rcode} for {r.query} {r.recordType}: {server}/{protocol}"
            implicit = Failure(FailureKind.DNS_RESPONSE_CODE, message, network=False)
        return Observation(
            request=summary(check, server, protocol),
            timing=TimingPhases(None, None, None, total if answer is not None else None, None, total),
            failure=asked.failure,
            cancelled=asked.cancelled,
            excerpt=job.cut(text, job.limits.excerpt_chars) or None,
            response_code=rcode,
            values={
                "RESPONSE_CODE": rcode,
                "TEXT_ANSWER": text,
                "JSON_ANSWER": answer_json(answer) if answer is not None else None,
                "RESPONSE_TIME": round(total),
            },
            implicit=implicit,
        )


PROTOCOL = DnsProtocol()


@dataclass(frozen=True)
class _Asked:
    server: str  # as shown (`127.0.0.1:53`); "?" before it was resolved
    failure: Failure | None = None
    cancelled: bool = False
    answer: dns.message.Message | None = None


def _query(check: DnsCheckDefinition, job: Job, clock: sockets.Stopwatch) -> _Asked:
    r = check.request
    protocol = r.protocol.upper()
    deadline, stop, bound = job.bounds.deadline, job.stop, job.bounds.text
    try:
        host, port = name_server(check)
        query = dns.message.make_query(r.query, dns.rdatatype.from_text(r.recordType))
    except (ValueError, dns.exception.DNSException) as exc:
        return _Asked("?", Failure(FailureKind.INVALID_DEFINITION, str(exc), network=False))
    kind = socket.SOCK_DGRAM if protocol == "UDP" else socket.SOCK_STREAM
    try:
        target = sockets.resolve(host, port, socket.AF_UNSPEC, kind, deadline, stop)
    except OSError:
        return _Asked("?", Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: name server {host}"))
    except sockets.Stopped:
        return _Asked("?", cancelled=True)
    except sockets.DeadlineReached:
        return _Asked(
            "?", Failure(FailureKind.TIMEOUT, f"timeout: name server {host} not found within {bound}")
        )
    server = target.shown
    where = f"{server}/{protocol}"
    sock: socket.socket | None = None
    try:
        sock = sockets.connect(target, kind, deadline, stop)
        wire = query.to_wire()
        clock.mark("sent")
        if kind == socket.SOCK_DGRAM:
            sock.send(wire)
            answer = _read_udp(sock, query, deadline, stop)
        else:
            sockets.send_all(sock, struct.pack("!H", len(wire)) + wire, deadline, stop)
            answer = _read_tcp(sock, deadline, stop)
        if not query.is_response(answer):
            return _Asked(
                server, Failure(FailureKind.BAD_ANSWER, f"the answer does not match the query: {where}")
            )
        return _Asked(server, answer=answer)
    except sockets.Stopped:
        return _Asked(server, cancelled=True)
    except sockets.DeadlineReached:
        return _Asked(server, Failure(FailureKind.TIMEOUT, f"timeout: no DNS answer within {bound}: {where}"))
    except OSError as exc:
        return _Asked(
            server, sockets.os_failure(exc, where, otherwise=(FailureKind.NETWORK, "DNS query failed"))
        )
    except (dns.exception.DNSException, EOFError, ValueError) as exc:
        message = f"malformed DNS answer ({type(exc).__name__}): {where}"
        return _Asked(server, Failure(FailureKind.BAD_ANSWER, message))
    finally:
        if sock is not None:
            sock.close()


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
