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
import time

import runner.checks.protocols.sockets as sockets
from runner.checks.failures import Failure, FailureKind
from runner.checks.limits import Limits
from runner.checks.outcome import Cut, RequestSummary, TimingPhases, plain_cut
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.socket_fields import rendered
from runner.checks.variables import Substitution
from runner.models.check_definitions import TcpCheckDefinition


def summary(
    check: TcpCheckDefinition, limits: Limits, remote: str | None = None, cut: Cut = plain_cut
) -> RequestSummary:
    r = check.request
    host = f"[{r.hostname}]" if ":" in r.hostname else r.hostname
    excerpt = cut(r.payload, limits.excerpt_chars) or None
    return RequestSummary(
        kind="TCP", method="CONNECT", target=f"{host}:{r.port}", body_excerpt=excerpt, remote_address=remote
    )


class TcpProtocol(CheckProtocol[TcpCheckDefinition]):
    """Connect, send the check's data, read the answer when an assertion looks at it."""

    def fill(self, check: TcpCheckDefinition, subst: Substitution) -> TcpCheckDefinition:
        return rendered(check, subst)

    def perform(self, check: TcpCheckDefinition, job: Job) -> Observation:
        read = any(a.source == "RESPONSE_DATA" for a in check.request.assertions)
        exchange = _Exchange(check, job)
        failure, cancelled, end = exchange.run(read)
        text = exchange.data.decode("utf-8", "replace")
        timing = exchange.timing(end)
        return Observation(
            request=summary(check, job.limits, exchange.where, job.cut),
            timing=timing,
            failure=failure,
            cancelled=cancelled,
            excerpt=job.cut(text, job.limits.excerpt_chars) if text else None,
            truncated=exchange.truncated,
            body_bytes=len(exchange.data) if read else None,
            values={"RESPONSE_DATA": text, "RESPONSE_TIME": round(timing.total_ms)},
            connection_failure_passes=check.shouldFail,
        )


PROTOCOL = TcpProtocol()


class _Exchange:
    """One connection of one attempt: what it read, where it went, when each step happened."""

    def __init__(self, check: TcpCheckDefinition, job: Job) -> None:
        self.check, self.job = check, job
        self.clock = sockets.Stopwatch()
        self.data = bytearray()
        self.truncated = False
        r = check.request
        self.where = (
            f"[{r.hostname}]:{r.port_number}" if ":" in r.hostname else f"{r.hostname}:{r.port_number}"
        )

    def timing(self, end: float | None) -> TimingPhases:
        span = self.clock.span
        return TimingPhases(
            dns_ms=span(None, "resolved"),
            connect_ms=span("resolved", "connected"),
            tls_ms=None,
            first_byte_ms=span("sent", "first_byte"),
            download_ms=span("first_byte", "last_byte"),
            total_ms=self.clock.ms(end=end),
        )

    def run(self, read_reply: bool) -> tuple[Failure | None, bool, float | None]:
        """(failure, cancelled, end): end is when RESPONSE_TIME stops (None: now)."""
        r, limits, stop = self.check.request, self.job.limits, self.job.stop
        port = r.port_number
        assert port is not None  # problems() refused a definition without one
        deadline, marks = self.job.bounds.deadline, self.clock.marks
        sock: socket.socket | None = None
        try:
            try:
                target = sockets.resolve(
                    r.hostname, port, sockets.family_of(r.ipFamily), socket.SOCK_STREAM, deadline, stop
                )
            except OSError:
                return Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: {r.hostname}"), False, None
            self.clock.mark("resolved")
            self.where = target.shown
            try:
                sock = sockets.connect(target, socket.SOCK_STREAM, deadline, stop)
            except OSError as exc:
                connect = (FailureKind.CONNECTION_FAILED, "connection failed")
                return sockets.os_failure(exc, self.where, otherwise=connect, reset=False), False, None
            self.clock.mark("connected")
            payload = r.payload.encode()
            if payload:
                try:
                    sockets.send_all(sock, payload, deadline, stop)
                except OSError as exc:
                    return self._io_failure(exc), False, None
            sent = self.clock.mark("sent")
            if not read_reply:
                return None, False, sent
            while len(self.data) < limits.body_cap_bytes:
                quiet = marks["last_byte"] + limits.tcp_quiet_seconds if "last_byte" in marks else deadline
                try:
                    sockets.wait_readable(sock, min(quiet, deadline), stop)
                except sockets.DeadlineReached:
                    if "last_byte" in marks and quiet <= deadline:
                        break  # quiet after the answer: complete
                    raise
                try:
                    chunk = sock.recv(min(65536, limits.body_cap_bytes - len(self.data)))
                except OSError as exc:
                    return self._io_failure(exc), False, None
                if not chunk:
                    break  # the peer closed: complete
                marks.setdefault("first_byte", time.monotonic())
                self.clock.mark("last_byte")
                self.data += chunk
            else:
                self.truncated = True
            return None, False, marks.get("last_byte")
        except sockets.Stopped:
            return None, True, None
        except sockets.DeadlineReached:
            limit = self.job.bounds.text or "the time limit"
            if self.data:  # the answer began and never ended (the server kept sending): not a silent one
                message = f"timeout: data kept arriving, the answer did not end within {limit}: {self.where}"
            else:
                what = "no response data" if "connected" in marks else "no connection"
                message = f"timeout: {what} within {limit}: {self.where}"
            return Failure(FailureKind.TIMEOUT, message, network=not self.data), False, None
        finally:
            if sock is not None:
                sock.close()

    def _io_failure(self, exc: OSError) -> Failure:
        io = (FailureKind.NETWORK, "connection error")
        return sockets.os_failure(exc, self.where, otherwise=io, refused=False, network=not self.data)
