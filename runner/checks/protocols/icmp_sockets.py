"""ICMP sockets for ICMP and TRACEROUTE checks (icmplib's), and why one cannot be had.

Linux gives two kinds:
- a ping socket (SOCK_DGRAM, IPPROTO_ICMP), open to any process whose group is inside
  net.ipv4.ping_group_range (that sysctl governs IPv6 ping sockets too); the kernel writes the ICMP
  header and fills in the identifier, and hands back only the replies to this socket;
- a raw socket (SOCK_RAW), which needs CAP_NET_RAW (root has it, containers drop it by default),
  and sees every ICMP message: Time Exceeded and Destination Unreachable too, which a traceroute needs.

An ICMP check takes a ping socket where the kernel allows one, else a raw socket; a traceroute takes
a raw socket only. Neither: `NoSocket`, whose message says which sysctl or capability would allow it
(production's docs name the same fix for private locations: NET_RAW).
"""

from __future__ import annotations

import os
import socket
from enum import Enum
from typing import Any

from icmplib import ICMPLibError, ICMPv4Socket, ICMPv6Socket, SocketPermissionError

PING_GROUP_RANGE = "/proc/sys/net/ipv4/ping_group_range"
READ_TIMEOUT = 1.0  # seconds; see read_waiting


class SocketMode(str, Enum):
    PING = "ping socket"  # unprivileged (SOCK_DGRAM)
    RAW = "raw socket"  # CAP_NET_RAW (SOCK_RAW)


class NoSocket(Exception):
    """Neither kind of ICMP socket may be opened by this process; the message says what allows one."""


def open_socket(family: int, modes: tuple[SocketMode, ...]) -> tuple[Any, SocketMode]:
    """An icmplib socket of the first of `modes` the kernel allows, and which it is; NoSocket when none."""
    kind = ICMPv6Socket if family == socket.AF_INET6 else ICMPv4Socket
    for mode in modes:
        try:
            return kind(privileged=mode is SocketMode.RAW), mode
        except SocketPermissionError:
            continue
    raise NoSocket(permission_message(modes))


def read_waiting(sock: Any) -> Any | None:
    """The ICMP message select() said is waiting on `sock` (icmplib's ICMPReply), or None if unreadable.

    The message is there, so recvfrom returns at once. The timeout is generous on purpose: icmplib
    drops a packet it read after its own time limit, and on a loaded machine this thread can wait for
    the GIL between recvfrom and that check; a reply would be read, then counted lost."""
    try:
        return sock.receive(None, timeout=READ_TIMEOUT)
    except ICMPLibError:
        return None


def ping_group_range(path: str = PING_GROUP_RANGE) -> tuple[int, int] | None:
    """The sysctl's (low, high) group ids; None where it cannot be read (not Linux)."""
    try:
        with open(path, encoding="ascii") as file:
            low, high = file.read().split()[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def permission_message(modes: tuple[SocketMode, ...], group_range: tuple[int, int] | None = None) -> str:
    """Why no socket of `modes` could be opened, and the sysctl or capability that would allow it."""
    group_range = group_range if group_range is not None else ping_group_range()
    gid = os.getegid()
    raw = (
        "raw sockets need CAP_NET_RAW (run as root, `docker run --cap-add=NET_RAW`, or "
        "`setcap cap_net_raw+ep` on the Python interpreter)"
    )
    if modes == (SocketMode.RAW,):
        return (
            "this check needs a raw ICMP socket (hop discovery listens for ICMP Time Exceeded replies, "
            f"which ping sockets do not see) and this process may not open one: {raw}"
        )
    shown = f"{group_range[0]} {group_range[1]}" if group_range else "not readable here"
    ping = (
        f"ping sockets are off for this process's group (gid {gid} is outside net.ipv4.ping_group_range"
        f' = {shown}; allow it with `sysctl -w net.ipv4.ping_group_range="0 2147483647"`)'
    )
    if modes == (SocketMode.PING,):
        return f"this process may not open an ICMP ping socket: {ping}"
    return f"this process may open neither kind of ICMP socket: {ping}, and {raw}"
