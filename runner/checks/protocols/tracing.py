"""A traceroute, bounded and stoppable: probes with a growing TTL, ICMP replies read on a raw socket.

Production's rules (traceroute-monitors/overview.mdx and configuration.mdx), and ours where silent:
- Probes per protocol, and how the destination is known to be reached:
  TCP (default, port 443): a connect with the TTL set; a SYN-ACK or RST from the destination (the
  connect succeeds or is refused). UDP (port 33434): a datagram; an ICMP Destination Unreachable
  from the target. ICMP: an echo request; the echo reply. SCTP: not sent here (it needs SCTP packets
  crafted on a raw socket): the check fails closed saying so.
- Every router on the way answers a probe whose TTL ends there with ICMP Time Exceeded; those are read
  on one raw ICMP socket (icmplib's), which needs CAP_NET_RAW whatever the probe protocol (production
  says the same of its agent). The ICMP error quotes the probe's first bytes: for TCP and UDP the
  ports (icmplib reads them where an echo's id and sequence are), for ICMP the id and sequence.
- 3 probes per hop (ours, as production's hop example: "sent": 3), sent together; a hop waits up to
  1 s for its replies (ours). A hop without a reply is recorded (no address, 100 % loss); after
  maxUnknownHops of them in a row the trace stops, and at maxHops, and at `timeout` seconds for the
  whole trace: truncationReason `destinationReached`, `maxHops`, `maxUnknownHops` or `timeout`.
- ptrLookup: each hop's address through the system resolver (so /etc/hosts names loopback), all at
  once on daemon threads, at most 1 s and never past the deadline; a name not found is left out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from icmplib import ICMPLibError, ICMPRequest
from icmplib.utils import unique_identifier

import runner.checks.protocols.sockets as sockets
from runner.checks.protocols.icmp_sockets import NoSocket, SocketMode, open_socket, read_waiting
from runner.checks.protocols.pinging import rtt_statistics

PROBES_PER_HOP = 3
HOP_WAIT_S = 1.0
PTR_WAIT_S = 1.0
QUEUED_MAX = 64  # ICMP messages read at one wake of a hop's wait
TIME_EXCEEDED: dict[int, Any] = {socket.AF_INET: 11, socket.AF_INET6: 3}
UNREACHABLE: dict[int, Any] = {socket.AF_INET: 3, socket.AF_INET6: 1}
ECHO_REPLY: dict[int, Any] = {socket.AF_INET: 0, socket.AF_INET6: 129}


class CannotProbe(Exception):
    """The probes of this protocol cannot be sent from here; the message says why."""


@dataclass(frozen=True)
class Hop:
    number: int
    sent: int
    rtts: tuple[float, ...] = ()
    address: str | None = None  # None: no reply at this TTL
    host: str | None = None  # PTR name

    @property
    def received(self) -> int:
        return len(self.rtts)

    @property
    def loss(self) -> float:
        return round((self.sent - self.received) * 100 / self.sent, 3) if self.sent else 100.0

    def latency(self) -> dict[str, float] | None:
        """Production's finalHopLatency keys: avg, min, max, stdDev (ms)."""
        if not self.rtts:
            return None
        return rtt_statistics(self.rtts)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hop_number": self.number, "main_ip": self.address, "sent": self.sent,
                               "received": self.received, "loss_percentage": self.loss}  # fmt: skip
        if self.host:
            out["main_host"] = self.host
        lat = self.latency()
        if lat:
            out["rtt"] = {"last_ms": self.rtts[-1], "avg_ms": lat["avg"], "best_ms": lat["min"],
                          "worst_ms": lat["max"], "stddev_ms": lat["stdDev"]}  # fmt: skip
        return out


@dataclass(frozen=True)
class Trace:
    hostname: str
    protocol: str
    port: int
    ip_family: str
    max_hops: int
    resolved_ip: str | None = None
    hops: tuple[Hop, ...] = ()
    reached: bool = False
    truncation: str | None = None  # destinationReached, maxHops, maxUnknownHops, timeout
    lookup_failed: bool = False
    cannot_probe: str | None = None  # NoSocket's or CannotProbe's message
    send_error: str | None = None
    cancelled: bool = False
    elapsed_ms: float = 0.0

    @property
    def final_hop(self) -> Hop | None:
        """The last hop that answered (production: final-hop latency is the destination's)."""
        return next((h for h in reversed(self.hops) if h.address), None)

    @property
    def last_hop_loss(self) -> float | None:
        """Packet loss at the last recorded hop (production's PACKET_LOSS)."""
        return self.hops[-1].loss if self.hops else None

    def final_latency(self) -> dict[str, float] | None:
        hop = self.final_hop
        return hop.latency() if (self.reached and hop) else None

    def as_json(self) -> dict[str, Any]:
        """Production's traceroute response (traceroute-monitors/configuration.mdx)."""
        out: dict[str, Any] = {
            "hostname": self.hostname, "resolvedIp": self.resolved_ip, "port": self.port,
            "ipFamily": self.ip_family, "maxHops": self.max_hops, "totalHops": len(self.hops),
            "destinationReached": self.reached, "truncationReason": self.truncation,
            "probeProtocol": self.protocol, "hops": [h.as_json() for h in self.hops],
        }  # fmt: skip
        latency = self.final_latency()
        if latency:
            out["finalHopLatency"] = latency
        return out


@dataclass
class _Probe:
    sent_at: float  # monotonic
    wall: float  # time.time() at send (icmplib stamps replies with the wall clock)
    key: tuple[int, int]  # what the ICMP error quotes: (src port, dst port) or (id, sequence)
    sock: socket.socket | None = None  # TCP: its own connecting socket
    settled: bool = False  # TCP: its connect ended (SO_ERROR is read once: the kernel clears it)
    rtt_ms: float | None = None
    source: str | None = None
    reached: bool = False


@dataclass
class _State:
    hops: list[Hop] = field(default_factory=list)
    reached: bool = False


def trace(
    hostname: str,
    *,
    protocol: str,
    port: int,
    ip_family: str,
    max_hops: int,
    max_unknown_hops: int,
    ptr_lookup: bool,
    deadline: float,
    stop: threading.Event | None = None,
    hop_wait: float = HOP_WAIT_S,
) -> Trace:
    """Traces the route to `hostname` (see the module's docstring); never raises for the network."""
    start = time.monotonic()

    def done(**fields: Any) -> Trace:
        elapsed = round((time.monotonic() - start) * 1000, 3)
        return Trace(hostname, protocol, port, ip_family, max_hops, **fields, elapsed_ms=elapsed)

    if protocol == "SCTP":
        why = "SCTP probes are not sent by this runner (they need SCTP packets crafted on a raw socket)"
        return done(cannot_probe=f"{why}; use protocol TCP, UDP or ICMP")
    state = _State()
    resolved: str | None = None
    try:
        try:
            family = sockets.family_of(ip_family)
            target = sockets.resolve(hostname, port, family, socket.SOCK_DGRAM, deadline, stop)
        except OSError:
            return done(lookup_failed=True)
        resolved = str(target.address[0])
        try:
            listener, _ = open_socket(target.family, (SocketMode.RAW,))
        except NoSocket as exc:
            return done(resolved_ip=resolved, cannot_probe=str(exc))
        with listener:
            truncation = _walk(listener, target, protocol, state, max_hops, max_unknown_hops, deadline, stop,
                               hop_wait)  # fmt: skip
        hops = tuple(state.hops)
        result = done(resolved_ip=resolved, hops=hops, reached=state.reached, truncation=truncation)
        return with_names(result, deadline, stop) if ptr_lookup else result
    except sockets.Stopped:
        return done(resolved_ip=resolved, hops=tuple(state.hops), cancelled=True)
    except OSError as exc:  # the kernel refused to send (no route to the network ...)
        reason = (exc.strerror or str(exc)).lower()
        return done(resolved_ip=resolved, hops=tuple(state.hops), send_error=reason)


def _walk(
    listener: Any,
    target: sockets.Target,
    protocol: str,
    state: _State,
    max_hops: int,
    max_unknown: int,
    deadline: float,
    stop: threading.Event | None,
    hop_wait: float,
) -> str:
    unknown = 0
    ident = unique_identifier()
    for ttl in range(1, max_hops + 1):
        if time.monotonic() >= deadline:
            return "timeout"
        probes = [_send(listener, target, protocol, ttl, ident, i) for i in range(PROBES_PER_HOP)]
        try:
            _collect(listener, target, protocol, probes, min(deadline, time.monotonic() + hop_wait), stop)
        finally:
            for probe in probes:
                if probe.sock is not None:
                    probe.sock.close()
        answered = [p for p in probes if p.source]
        rtts = tuple(p.rtt_ms for p in answered if p.rtt_ms is not None)
        address = answered[0].source if answered else None
        state.hops.append(Hop(ttl, len(probes), rtts, address))
        if any(p.reached for p in probes):
            state.reached = True
            return "destinationReached"
        unknown = 0 if answered else unknown + 1
        if unknown >= max_unknown:
            return "maxUnknownHops"
        if time.monotonic() >= deadline:
            return "timeout"
    return "maxHops"


def _send(listener: Any, target: sockets.Target, protocol: str, ttl: int, ident: int, index: int) -> _Probe:
    """One probe with this TTL; OSError when the kernel refuses to send it."""
    six = target.family == socket.AF_INET6
    if protocol == "ICMP":
        sequence = ttl * PROBES_PER_HOP + index
        request = ICMPRequest(target.address[0], ident, sequence, ttl=ttl)
        probe = _Probe(time.monotonic(), time.time(), (ident, sequence))
        try:
            listener.send(request)
        except ICMPLibError as exc:
            raise OSError(errno.EIO, str(exc)) from exc
        return probe
    kind = socket.SOCK_STREAM if protocol == "TCP" else socket.SOCK_DGRAM
    sock = socket.socket(target.family, kind)
    try:
        level, option = (
            (socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS) if six else (socket.IPPROTO_IP, socket.IP_TTL)
        )
        sock.setsockopt(level, option, ttl)
        sock.setblocking(False)
        sock.bind(("::", 0, 0, 0) if six else ("0.0.0.0", 0))
        key = (sock.getsockname()[1], target.address[1])
        probe = _Probe(time.monotonic(), time.time(), key, sock)
        if kind == socket.SOCK_STREAM:
            code = sock.connect_ex(target.address)
            if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.ECONNREFUSED):
                raise OSError(code, errno.errorcode.get(code, str(code)).lower())
        else:
            sock.sendto(b"\0" * 32, target.address)
        return probe
    except BaseException:
        sock.close()
        raise


def _collect(
    listener: Any,
    target: sockets.Target,
    protocol: str,
    probes: list[_Probe],
    until: float,
    stop: threading.Event | None,
) -> None:
    """Reads replies for `probes` until each has one or `until`."""
    family, destination = target.family, target.address[0]
    while any(p.source is None for p in probes):
        if stop is not None and stop.is_set():
            raise sockets.Stopped
        now = time.monotonic()
        # Once `until` has passed, one last look without waiting: what is queued came in time, and a
        # loaded machine can hold this thread past `until` while it waits (a loopback trace lost 2
        # of its 3 answered probes so in a busy test run).
        last = now >= until
        # TCP: a probe's own socket says SYN-ACK (connected) or RST (refused); a UDP one says nothing.
        tcp = protocol == "TCP"
        connecting = [
            p.sock for p in probes if tcp and p.sock is not None and not p.settled and p.source is None
        ]
        wait = 0.0 if last else min(sockets.SLICE, until - now)
        ready_r, ready_w, _ = select.select([listener.sock], connecting, [], wait)
        for probe in probes:
            if probe.sock is not None and probe.sock in ready_w and not probe.settled:
                probe.settled = True
                code = probe.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                # SYN-ACK or RST: the destination answered. Any other error (EHOSTUNREACH for a
                # router's Time Exceeded) is read from the ICMP message itself, on the raw socket.
                if code in (0, errno.ECONNREFUSED) and probe.source is None:
                    _answered(probe, destination, time.monotonic(), reached=True)
        if ready_r:
            _read_queued(listener, family, destination, protocol, probes)
        if last:
            return


def _read_queued(listener: Any, family: int, destination: str, protocol: str, probes: list[_Probe]) -> None:
    """Reads the ICMP messages queued on the listener, at most QUEUED_MAX: other processes' ICMP
    reaches a raw socket too, and it must not keep this loop from its stop and its deadline."""
    for _ in range(QUEUED_MAX):
        _read(listener, family, destination, protocol, probes)
        if all(p.source is not None for p in probes) or not select.select([listener.sock], [], [], 0)[0]:
            return


def _answered(probe: _Probe, source: str, now: float, *, reached: bool) -> None:
    probe.source, probe.reached = source, reached
    probe.rtt_ms = round((now - probe.sent_at) * 1000, 3)


def _read(listener: Any, family: int, destination: str, protocol: str, probes: list[_Probe]) -> None:
    if protocol == "ICMP":
        reply = read_waiting(listener)
        if reply is None:
            return
        kind, key, source, at = reply.type, (reply.id, reply.sequence), reply.source, reply.time
    else:
        # icmplib reads an error's quoted echo id and sequence (bytes 4-8 of the quoted header); a TCP
        # or UDP probe is known by its ports (bytes 0-4): read the packet here.
        try:
            packet, address = listener.sock.recvfrom(2048, socket.MSG_DONTWAIT)
        except OSError:
            return
        parsed = quoted_ports(packet, family)
        if parsed is None:
            return
        kind, key, source, at = parsed[0], parsed[1], str(address[0]), time.time()
    probe = next((p for p in probes if p.key == key and p.source is None), None)
    if probe is None:
        return
    if kind == TIME_EXCEEDED[family]:
        reached = False
    elif kind == ECHO_REPLY[family] and protocol == "ICMP":
        reached = True
    elif kind == UNREACHABLE[family]:
        reached = source == destination  # UDP: the target's port unreachable; else a router's
    else:
        return
    probe.source, probe.reached = source, reached
    probe.rtt_ms = round((at - probe.wall) * 1000, 3)


def quoted_ports(packet: bytes, family: int) -> tuple[int, tuple[int, int]] | None:
    """(ICMP type, (source port, destination port) of the TCP or UDP header it quotes), or None.

    IPv4 raw sockets hand over the IP header; IPv6 ones start at the ICMPv6 header."""
    try:
        if family == socket.AF_INET6:
            start, inner = 0, 8 + 40  # ICMPv6 header, then the quoted IPv6 header (no extension headers)
        else:
            start = (packet[0] & 0x0F) * 4
            inner = start + 8 + (packet[start + 8] & 0x0F) * 4
        if len(packet) < inner + 4:
            return None
        source_port = int.from_bytes(packet[inner : inner + 2], "big")
        return packet[start], (source_port, int.from_bytes(packet[inner + 2 : inner + 4], "big"))
    except IndexError:
        return None


def with_names(result: Trace, deadline: float, stop: threading.Event | None) -> Trace:
    """The trace with each hop's PTR name where the system resolver gives one within the wait
    (PTR_WAIT_S, never past `deadline`); sockets.Stopped when `stop` is set meanwhile."""
    hops = result.hops
    names: dict[str, str] = {}
    addresses = {h.address for h in hops if h.address}
    threads = [threading.Thread(target=_lookup(a, names), daemon=True, name="ptr-lookup") for a in addresses]
    for thread in threads:
        thread.start()
    until = min(deadline, time.monotonic() + PTR_WAIT_S)
    for thread in threads:
        while thread.is_alive() and time.monotonic() < until:
            if stop is not None and stop.is_set():
                raise sockets.Stopped
            thread.join(sockets.SLICE)
    found = dict(names)  # a lookup finishing late is not read
    named = tuple(Hop(h.number, h.sent, h.rtts, h.address, found.get(h.address or "")) for h in hops)
    return dataclasses.replace(result, hops=named)


def _lookup(address: str, names: dict[str, str]) -> Callable[[], None]:
    def run() -> None:
        with contextlib.suppress(OSError):
            names[address] = socket.gethostbyaddr(address)[0]

    return run
