"""TCP checks: connect, send the check's data, read the answer (RESPONSE_DATA, RESPONSE_TIME).

Decisions (production: constructs/tcp-monitor.mdx, uptime-monitoring/tcp-monitors/configuration.mdx):
- `data` (or production's alternative field `body`) is sent as UTF-8 once connected.
- The answer is read only when an assertion looks at RESPONSE_DATA (a check of "the port is open"
  just connects). It is complete when the peer closes, when nothing more arrives for
  `Limits.tcp_quiet_seconds` after the first bytes, or at `Limits.body_cap_bytes`. No byte before
  the time bound is a timeout.
- RESPONSE_TIME is from the start (name lookup included) to the last byte read, or to the data sent
  when nothing is read; the quiet wait after the last byte is not counted.
- ipFamily IPv4 (default) or IPv6 picks the address of a host name; an IP literal is used as written.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import runner.checks.protocols.sockets as sockets
from runner.checks.limits import Limits
from runner.checks.outcome import (
    NETWORK_ERROR,
    TIMEOUT,
    Cut,
    Failure,
    RequestSummary,
    TimingPhases,
    plain_cut,
)
from runner.models.check_definitions import TcpCheckDefinition


@dataclass(frozen=True)
class TcpResponse:
    data: bytes
    truncated: bool
    timing: TimingPhases
    remote_address: str
    failure: Failure | None
    cancelled: bool = False

    @property
    def response_time_ms(self) -> float:
        return self.timing.total_ms


def summary(
    check: TcpCheckDefinition, limits: Limits, remote: str | None = None, cut: Cut = plain_cut
) -> RequestSummary:
    r = check.request
    host = f"[{r.hostname}]" if ":" in r.hostname else r.hostname
    excerpt = cut(r.payload, limits.excerpt_chars) or None
    return RequestSummary(
        kind="TCP", method="CONNECT", target=f"{host}:{r.port}", body_excerpt=excerpt, remote_address=remote
    )


def perform(
    check: TcpCheckDefinition,
    *,
    read_reply: bool,
    bound_seconds: float,
    limits: Limits,
    stop: threading.Event | None = None,
    timeout_text: str = "",
) -> TcpResponse:
    r = check.request
    port = r.port_number
    assert port is not None  # problems() refused a definition without one
    start = time.monotonic()
    deadline = start + bound_seconds
    marks: dict[str, float] = {}
    data = bytearray()
    truncated = False
    where = f"[{r.hostname}]:{port}" if ":" in r.hostname else f"{r.hostname}:{port}"

    def timing(end: float | None = None) -> TimingPhases:
        def span(a: str | None, b: str) -> float | None:
            if b not in marks:
                return None
            return round((marks[b] - (marks[a] if a else start)) * 1000, 3)

        last = end if end is not None else time.monotonic()
        return TimingPhases(
            dns_ms=span(None, "resolved"),
            connect_ms=span("resolved", "connected"),
            tls_ms=None,
            first_byte_ms=span("sent", "first_byte"),
            download_ms=span("first_byte", "last_byte"),
            total_ms=round((last - start) * 1000, 3),
        )

    def result(
        failure: Failure | None = None, cancelled: bool = False, end: float | None = None
    ) -> TcpResponse:
        return TcpResponse(bytes(data), truncated, timing(end), where, failure, cancelled)

    sock: socket.socket | None = None
    try:
        try:
            target = sockets.resolve(
                r.hostname, port, sockets.family_of(r.ipFamily), socket.SOCK_STREAM, deadline, stop
            )
        except OSError:
            return result(Failure(NETWORK_ERROR, "dns_lookup", f"DNS lookup failed: {r.hostname}"))
        marks["resolved"] = time.monotonic()
        where = target.shown
        try:
            sock = sockets.connect(target, socket.SOCK_STREAM, deadline, stop)
        except OSError as exc:
            return result(_connect_failure(exc, where))
        marks["connected"] = time.monotonic()
        payload = r.payload.encode()
        if payload:
            try:
                sockets.send_all(sock, payload, deadline, stop)
            except OSError as exc:
                return result(_io_failure(exc, where, got_data=False))
        marks["sent"] = time.monotonic()
        if not read_reply:
            return result(end=marks["sent"])
        while len(data) < limits.body_cap_bytes:
            quiet = marks["last_byte"] + limits.tcp_quiet_seconds if "last_byte" in marks else deadline
            try:
                sockets.wait_readable(sock, min(quiet, deadline), stop)
            except sockets.DeadlineReached:
                if "last_byte" in marks and quiet <= deadline:
                    break  # quiet after the answer: complete
                raise
            try:
                chunk = sock.recv(min(65536, limits.body_cap_bytes - len(data)))
            except OSError as exc:
                return result(_io_failure(exc, where, got_data=bool(data)))
            if not chunk:
                break  # the peer closed: complete
            marks.setdefault("first_byte", time.monotonic())
            marks["last_byte"] = time.monotonic()
            data += chunk
        else:
            truncated = True
        return result(end=marks.get("last_byte", time.monotonic()))
    except sockets.Stopped:
        return result(Failure(NETWORK_ERROR, "cancelled", f"cancelled: {where}"), cancelled=True)
    except sockets.DeadlineReached:
        limit = timeout_text or "the time limit"
        if data:  # the answer began and never ended (the server kept sending): not a silent one
            message = f"timeout: data kept arriving, the answer did not end within {limit}: {where}"
        else:
            what = "no response data" if "connected" in marks else "no connection"
            message = f"timeout: {what} within {limit}: {where}"
        return result(Failure(TIMEOUT, "timeout", message, network=not data))
    finally:
        if sock is not None:
            sock.close()


def _connect_failure(exc: OSError, where: str) -> Failure:
    if exc.errno in sockets.REFUSED:
        return Failure(NETWORK_ERROR, "connection_refused", f"connection refused: {where}")
    reason = (exc.strerror or str(exc)).lower()
    return Failure(NETWORK_ERROR, "connection_failed", f"connection failed ({reason}): {where}")


def _io_failure(exc: OSError, where: str, got_data: bool) -> Failure:
    if exc.errno in sockets.RESET:
        return Failure(NETWORK_ERROR, "connection_reset", f"connection reset: {where}", network=not got_data)
    reason = (exc.strerror or str(exc)).lower()
    return Failure(NETWORK_ERROR, "network", f"connection error ({reason}): {where}", network=not got_data)
