"""Echo requests and their replies over an icmplib socket, bounded and stoppable (ICMP checks).

`ping()` resolves the host (bounded, sockets.resolve), then sends `count` echo requests, one every
`interval` seconds (production: 500 ms), and takes each reply that comes within `reply_timeout` of
its request (ours: 2 s). The socket is read in slices of sockets.SLICE, so a set stop event ends the
run within ~50 ms, and nothing runs past `deadline`. An ICMP error that answers a request (Destination
Unreachable from a router) is recorded for it, with its type, code and source.

What it returns is production's ICMP response (icmp-monitors/configuration.mdx, "JSON Response
Schema"): packets sent and received, loss in percent, latency avg/min/max/stdDev in ms over the
received replies (stdDev of the sample, n-1: the docs' own example, 6.6/49.8/6.6 ms -> 24.96), one
entry per request. Not measured here: the reply's TTL (icmplib does not return it): null.
"""

from __future__ import annotations

import select
import socket
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from icmplib import ICMPLibError, ICMPRequest
from icmplib.utils import unique_identifier

import runner.checks.protocols.sockets as sockets
from runner.checks.protocols.icmp_sockets import NoSocket, SocketMode, open_socket, read_waiting

PAYLOAD_BYTES = 56  # ping's default: 64 bytes with the ICMP header (production's packetSize)
ECHO_REPLY: dict[int, Any] = {socket.AF_INET: 0, socket.AF_INET6: 129}
ERROR_NAMES: dict[int, Any] = {
    socket.AF_INET: {3: "destination unreachable", 11: "time exceeded", 12: "parameter problem"},
    socket.AF_INET6: {1: "destination unreachable", 3: "time exceeded", 4: "parameter problem"},
}
UNREACHABLE_CODES: dict[int, Any] = {
    socket.AF_INET: {0: "network unreachable", 1: "host unreachable", 3: "port unreachable",
                     9: "network prohibited", 10: "host prohibited", 13: "administratively prohibited"},
    socket.AF_INET6: {0: "no route", 1: "administratively prohibited", 3: "address unreachable"},
}  # fmt: skip


@dataclass(frozen=True)
class Reply:
    """One echo request's fate (production's pingResults entry)."""

    sequence: int
    success: bool
    rtt_ms: float | None = None
    type: int | None = None
    code: int | None = None
    source: str | None = None  # who answered (a router for an ICMP error)

    @property
    def error(self) -> str | None:
        """`destination unreachable (host unreachable) from 10.0.0.1` for an ICMP error; else None."""
        if self.success or self.type is None:
            return None
        family = socket.AF_INET6 if self.source and ":" in self.source else socket.AF_INET
        name = ERROR_NAMES[family].get(self.type, f"ICMP type {self.type}")
        detail = UNREACHABLE_CODES[family].get(self.code or 0) if "unreachable" in name else None
        return f"{name} ({detail}) from {self.source}" if detail else f"{name} from {self.source}"


@dataclass(frozen=True)
class PingRun:
    hostname: str
    ip_family: str
    ping_count: int
    resolved_ip: str | None = None
    dns_ms: float | None = None
    mode: SocketMode | None = None
    replies: tuple[Reply, ...] = ()
    packets_sent: int = 0
    send_error: str | None = None  # why the kernel refused to send (no route ...)
    lookup_failed: bool = False
    no_socket: str | None = None  # NoSocket's message
    cancelled: bool = False
    timed_out: bool = False  # the deadline cut the run
    elapsed_ms: float = 0.0

    @property
    def packets_received(self) -> int:
        return sum(1 for r in self.replies if r.success)

    @property
    def packet_loss(self) -> float:
        """Percent of the requests sent that got no echo reply (100 when none could be sent)."""
        if not self.packets_sent:
            return 100.0
        return round((self.packets_sent - self.packets_received) * 100 / self.packets_sent, 3)

    def latency(self) -> dict[str, float] | None:
        rtts = [r.rtt_ms for r in self.replies if r.success and r.rtt_ms is not None]
        if not rtts:
            return None
        return rtt_statistics(rtts)

    def errors(self) -> list[str]:
        """The distinct ICMP errors that answered requests, in order."""
        return list(dict.fromkeys(e for r in self.replies if (e := r.error)))

    def as_json(self) -> dict[str, Any]:
        """Production's ICMP response (JSON_RESPONSE assertions read it)."""
        return {
            "hostname": self.hostname,
            "resolvedIp": self.resolved_ip,
            "ipFamily": self.ip_family,
            "pingCount": self.ping_count,
            "packetsSent": self.packets_sent,
            "packetsReceived": self.packets_received,
            "packetSize": PAYLOAD_BYTES + 8,
            "packetLoss": self.packet_loss,
            "dnsResolutionTime": self.dns_ms,
            "latency": self.latency(),
            "pingResults": [_result(r) for r in self.replies],
        }


def rtt_statistics(rtts: list[float] | tuple[float, ...]) -> dict[str, float]:
    """avg, min, max, stdDev (of the sample, n-1) in ms, to the microsecond."""
    stats = {"avg": statistics.fmean(rtts), "min": min(rtts), "max": max(rtts),
             "stdDev": statistics.stdev(rtts) if len(rtts) > 1 else 0.0}  # fmt: skip
    return {name: round(value, 3) for name, value in stats.items()}


def _result(r: Reply) -> dict[str, Any]:
    return {"sequence": r.sequence, "type": r.type, "code": r.code, "success": r.success, "rtt": r.rtt_ms,
            "ttl": None}  # fmt: skip


def ping(
    hostname: str,
    ip_family: str,
    count: int,
    *,
    deadline: float,
    stop: threading.Event | None = None,
    interval: float = 0.5,
    reply_timeout: float = 2.0,
    modes: tuple[SocketMode, ...] = (SocketMode.PING, SocketMode.RAW),
) -> PingRun:
    """Pings `hostname` `count` times (see the module's docstring); never raises for the network."""
    start = time.monotonic()
    run = _Run(hostname, ip_family, count, start)
    try:
        try:
            target = sockets.resolve(hostname, 0, sockets.family_of(ip_family), socket.SOCK_DGRAM,
                                     deadline, stop)  # fmt: skip
        except OSError:
            return run.done(lookup_failed=True)
        run.dns_ms = round((time.monotonic() - start) * 1000, 3)
        run.resolved_ip = str(target.address[0])
        try:
            sock, run.mode = open_socket(target.family, modes)
        except NoSocket as exc:
            return run.done(no_socket=str(exc))
        with sock:
            _exchange(sock, run, target.family, deadline, stop, interval, reply_timeout)
        return run.done()
    except sockets.Stopped:
        return run.done(cancelled=True)
    except sockets.DeadlineReached:
        return run.done(timed_out=True)


class _Run:
    """The run's state while it goes on (PingRun is its frozen result)."""

    def __init__(self, hostname: str, ip_family: str, count: int, start: float) -> None:
        self.hostname, self.ip_family, self.count, self.start = hostname, ip_family, count, start
        self.resolved_ip: str | None = None
        self.dns_ms: float | None = None
        self.mode: SocketMode | None = None
        self.replies: dict[int, Reply] = {}
        self.sent: dict[int, ICMPRequest] = {}
        self.sent_at: dict[int, float] = {}  # monotonic (icmplib stamps requests with the wall clock)
        self.send_error: str | None = None

    def done(self, **flags: Any) -> PingRun:
        sequences = sorted(self.sent)
        replies = tuple(self.replies.get(s, Reply(sequence=s, success=False)) for s in sequences)
        return PingRun(
            hostname=self.hostname, ip_family=self.ip_family, ping_count=self.count,
            resolved_ip=self.resolved_ip, dns_ms=self.dns_ms, mode=self.mode, replies=replies,
            packets_sent=len(self.sent), send_error=self.send_error,
            elapsed_ms=round((time.monotonic() - self.start) * 1000, 3), **flags,
        )  # fmt: skip


def _exchange(
    sock: Any,
    run: _Run,
    family: int,
    deadline: float,
    stop: threading.Event | None,
    interval: float,
    reply_timeout: float,
) -> None:
    ident = unique_identifier()
    next_send = time.monotonic()
    sequence = 0
    while True:
        now = time.monotonic()
        if sequence < run.count and now >= next_send:
            request = ICMPRequest(run.resolved_ip, ident, sequence, payload_size=PAYLOAD_BYTES)
            try:
                run.sent_at[sequence] = time.monotonic()
                sock.send(request)
                run.sent[sequence] = request
            except ICMPLibError as exc:
                run.send_error = run.send_error or str(exc).lower()
            sequence += 1
            next_send += interval
        waiting = [s for s in run.sent if s not in run.replies and now - run.sent_at[s] < reply_timeout]
        if sequence >= run.count and not waiting:
            # A reply that arrived while this thread was not running (a loaded machine, the GIL)
            # is in the socket already: taken, not counted lost for our own lateness.
            for _ in range(2 * run.count):  # bounded: a raw socket also sees others' traffic
                if len(run.replies) == len(run.sent) or not select.select([sock.sock], [], [], 0)[0]:
                    break
                _read(sock, run, family)
            return
        if stop is not None and stop.is_set():
            raise sockets.Stopped
        if now >= deadline:
            raise sockets.DeadlineReached
        wake = min([deadline, now + sockets.SLICE]
                   + ([next_send] if sequence < run.count else [])
                   + [run.sent_at[s] + reply_timeout for s in waiting])  # fmt: skip
        readable, _, _ = select.select([sock.sock], [], [], max(0.0, wake - now))
        if readable:
            _read(sock, run, family)


def _read(sock: Any, run: _Run, family: int) -> None:
    """Takes what the socket holds now: an echo reply or an ICMP error for one of our requests."""
    reply = read_waiting(sock)
    if reply is None:
        return  # nothing parseable: read again on the next turn
    request = run.sent.get(reply.sequence)
    if request is None or reply.id != request.id or reply.sequence in run.replies:
        return  # another process's ping (a raw socket sees them all), or a duplicate
    if reply.type == ECHO_REPLY[family]:
        rtt = round((reply.time - request.time) * 1000, 3)
        run.replies[reply.sequence] = Reply(reply.sequence, True, rtt, reply.type, reply.code, reply.source)
    elif reply.type in ERROR_NAMES[family]:
        run.replies[reply.sequence] = Reply(reply.sequence, False, None, reply.type, reply.code, reply.source)
    # else: our own echo request seen on loopback by a raw socket (type 8 / 128): not a reply
