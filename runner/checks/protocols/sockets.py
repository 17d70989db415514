"""What TCP and DNS checks share: bounded, stoppable socket steps (resolve, connect, wait for data),
the stopwatch of their timing phases, and the failure an OSError is.

Each step ends by a deadline (time.monotonic) and looks at the stop event every SLICE seconds, so a
cancelled session ends a run within that time (`Stopped`; the protocol's observation is then
`cancelled`). A name lookup runs on a daemon thread: getaddrinfo has no timeout of its own.
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

from runner.checks.failures import Failure, FailureKind

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
    """Returns once `sock` has data (or EOF) to read; DeadlineReached or Stopped otherwise. The
    socket is looked at once more when the deadline has passed: an answer already there counts (a
    thread the machine ran late must not call an answered query a timeout)."""
    while True:
        if stop is not None and stop.is_set():
            raise Stopped
        readable, _, _ = select.select([sock], [], [], _slice(deadline))
        if readable:
            return
        _check(deadline, stop)


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


class Stopwatch:
    """Named moments of one attempt (`resolved`, `connected`, `sent` ...), in monotonic time."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.marks: dict[str, float] = {}

    def mark(self, name: str) -> float:
        self.marks[name] = now = time.monotonic()
        return now

    def span(self, since: str | None, until: str) -> float | None:
        """Milliseconds from `since` (None: the start) to `until`; None when `until` never happened."""
        if until not in self.marks:
            return None
        return round((self.marks[until] - (self.marks[since] if since else self.start)) * 1000, 3)

    def ms(self, since: str | None = None, end: float | None = None) -> float:
        """Milliseconds from `since` (the start when None or not marked) to `end` (now when None)."""
        begin = self.marks.get(since, self.start) if since else self.start
        return round(((end if end is not None else time.monotonic()) - begin) * 1000, 3)


def os_failure(
    exc: OSError,
    where: str,
    *,
    otherwise: tuple[FailureKind, str],
    refused: bool = True,
    reset: bool = True,
    network: bool = True,
) -> Failure:
    """The failure an OSError is: refused, reset (when the step can see them), or `otherwise`'s kind
    with its words and the system's reason (`connection failed (no route to host): 10.0.0.1:80`)."""
    if refused and exc.errno in REFUSED:
        return Failure(FailureKind.CONNECTION_REFUSED, f"connection refused: {where}", network=network)
    if reset and exc.errno in RESET:
        return Failure(FailureKind.CONNECTION_RESET, f"connection reset: {where}", network=network)
    kind, words = otherwise
    reason = (exc.strerror or str(exc)).lower()
    return Failure(kind, f"{words} ({reason}): {where}", network=network)
