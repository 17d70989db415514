"""Bounded, stoppable socket steps for TCP and DNS checks: resolve, connect, wait for data.

Each step ends by a deadline (time.monotonic) and looks at the stop event every SLICE seconds, so a
cancelled session ends a run within that time. A name lookup runs on a daemon thread: getaddrinfo
has no timeout of its own.
"""

from __future__ import annotations

import errno
import ipaddress
import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

SLICE = 0.05
REFUSED = frozenset({errno.ECONNREFUSED})
RESET = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})

Address = tuple[Any, ...]


class Stopped(Exception):
    """The stop event was set."""


class DeadlineReached(Exception):
    """The step did not finish before its deadline."""


@dataclass(frozen=True)
class Target:
    family: int
    address: Address  # what socket.connect takes

    @property
    def shown(self) -> str:
        host, port = self.address[0], self.address[1]
        return f"[{host}]:{port}" if self.family == socket.AF_INET6 else f"{host}:{port}"


def family_of(ip_family: str) -> int:
    return socket.AF_INET6 if ip_family == "IPv6" else socket.AF_INET


def resolve(
    host: str, port: int, family: int, kind: int, deadline: float, stop: threading.Event | None
) -> Target:
    """The first address of `host` in `family`; OSError (socket.gaierror) when there is none."""
    host = host.strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        literal = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        address: Address = (host, port, 0, 0) if literal == socket.AF_INET6 else (host, port)
        return Target(literal, address)
    box: dict[str, Any] = {}
    done = threading.Event()

    def lookup() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, family, kind)
        except OSError as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=lookup, name="check-lookup", daemon=True).start()
    while not done.wait(SLICE):
        _check(deadline, stop)
    if "error" in box:
        raise box["error"]
    info = box["infos"][0]
    return Target(info[0], info[4])


def _check(deadline: float, stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Stopped
    if time.monotonic() >= deadline:
        raise DeadlineReached


def connect(target: Target, kind: int, deadline: float, stop: threading.Event | None) -> socket.socket:
    """A connected socket (non-blocking); OSError with the connect's errno when it fails."""
    sock = socket.socket(target.family, kind)
    try:
        sock.setblocking(False)
        code = sock.connect_ex(target.address)
        if kind == socket.SOCK_DGRAM or code == 0:
            return sock
        if code not in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            raise OSError(code, f"connect: {errno.errorcode.get(code, code)}")
        while True:
            _check(deadline, stop)
            _, writable, _ = select.select([], [sock], [], _slice(deadline))
            if writable:
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    raise OSError(code, f"connect: {errno.errorcode.get(code, code)}")
                return sock
    except BaseException:
        sock.close()
        raise


def wait_readable(sock: socket.socket, deadline: float, stop: threading.Event | None) -> None:
    """Returns once `sock` has data (or EOF) to read; DeadlineReached or Stopped otherwise."""
    while True:
        _check(deadline, stop)
        readable, _, _ = select.select([sock], [], [], _slice(deadline))
        if readable:
            return


def send_all(sock: socket.socket, data: bytes, deadline: float, stop: threading.Event | None) -> None:
    view = memoryview(data)
    while view:
        _check(deadline, stop)
        _, writable, _ = select.select([], [sock], [], _slice(deadline))
        if writable:
            sent = sock.send(view)
            view = view[sent:]


def _slice(deadline: float) -> float:
    return max(0.0, min(SLICE, deadline - time.monotonic()))
