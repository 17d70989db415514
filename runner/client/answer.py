"""Reading one answer with bounds: size, wall-clock time and decompressed size.

requests' read timeout bounds each socket read, not the answer: a status line and headers, or a body,
that arrive a byte a second, or a body that never ends, keep a run alive without limit, and `.json()`
on a gzip bomb inflates it whole. An alarm shuts the call's socket down at its deadline, while the
headers are awaited (`headers_by`, with `BoundedAdapter`) and while the body is read (`load_answer`,
from the raw stream, decompressed here, in steps).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from runner.client.transport import MAX_ANSWER_BYTES, AnswerTooLarge

READ_CHUNK = 64 * 1024


class AnswerTooSlow(Exception):
    """The answer did not complete by its deadline."""


class UnknownEncoding(Exception):
    pass


class _Decoder:
    """Content-Encoding undone incrementally, never producing more than the budget allows."""

    def __init__(self, encoding: str) -> None:
        encoding = encoding.strip().lower()
        self._wbits: int | None
        if encoding in ("", "identity"):
            self._wbits = None
        elif encoding in ("gzip", "x-gzip"):
            self._wbits = 16 + zlib.MAX_WBITS
        elif encoding == "deflate":
            self._wbits = zlib.MAX_WBITS  # zlib-wrapped, as the RFC says; raw deflate tried on failure
        else:
            raise UnknownEncoding(encoding)
        self._raw_fallback = encoding == "deflate"
        self._z = zlib.decompressobj(self._wbits) if self._wbits is not None else None

    @property
    def identity(self) -> bool:
        return self._z is None

    def feed(self, data: bytes, room: int) -> bytes:
        """Decoded bytes of `data`: at most room + 1, so the caller can tell the limit was passed."""
        if self._z is None:
            return data
        out = bytearray()
        pending = data
        while pending and len(out) <= room:
            try:
                out += self._z.decompress(pending, room + 1 - len(out))
            except zlib.error:
                if not self._raw_fallback:
                    raise
                self._raw_fallback = False
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._raw_fallback = False
            pending = self._z.unconsumed_tail
            if self._z.eof and self._z.unused_data:  # a second gzip member
                pending = self._z.unused_data
                self._z = zlib.decompressobj(self._wbits or zlib.MAX_WBITS)
        return bytes(out)


def _socket_of(response: requests.Response) -> socket.socket | None:
    """The answer's socket (urllib3 2: the connection's; else via http.client), or None."""
    raw = response.raw
    sock = getattr(getattr(raw, "_connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


class _Alarm:
    """At `deadline` (a time of `clock`), shuts down the socket `target()` names: a read blocked on
    a trickling server returns at once rather than at its next byte."""

    def __init__(
        self, deadline: float, clock: Callable[[], float], target: Callable[[], socket.socket | None]
    ) -> None:
        self.expired = threading.Event()
        self._target = target
        self._timer = threading.Timer(max(0.0, deadline - clock()), self._ring)
        self._timer.daemon = True
        self._timer.start()

    def _ring(self) -> None:
        self.expired.set()
        sock = self._target()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class _Watch:
    """The connection one request went out on, as its pool handed it out."""

    connection: Any = None


_current = threading.local()  # .watch: the _Watch of this thread's bounded request, if any


class _WatchedPool(HTTPConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> Any:
        connection = super()._get_conn(timeout)
        watch = getattr(_current, "watch", None)
        if watch is not None:
            watch.connection = connection
        return connection


class _WatchedHTTPSPool(_WatchedPool, HTTPSConnectionPool):
    pass


_POOLS = {"http": _WatchedPool, "https": _WatchedHTTPSPool}


class BoundedAdapter(HTTPAdapter):
    """requests' adapter whose pools tell `headers_by` which connection a request uses (through a
    proxy too; a SOCKS proxy's pools are urllib3's own, bounded by the read timeout alone)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _POOLS
        return manager


@contextlib.contextmanager
def headers_by(deadline: float, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Bounds a request sent through a `BoundedAdapter` until its status line and headers are in:
    past `deadline`, its socket is shut down and AnswerTooSlow raised."""
    watch = _current.watch = _Watch()
    alarm = _Alarm(deadline, clock, lambda: getattr(watch.connection, "sock", None))
    try:
        yield
    except Exception:
        if alarm.expired.is_set():
            raise AnswerTooSlow from None
        raise
    finally:
        alarm.cancel()
        _current.watch = None


def load_answer(
    response: requests.Response,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Reads the whole body of a `stream=True` response into it (`.content`, `.json()` then work as
    usual), decoded; or raises AnswerTooLarge / AnswerTooSlow / UnknownEncoding / zlib.error / a
    requests or urllib3 error, and the connection is closed rather than reused.

    `deadline` is a time of `clock` (monotonic seconds); an alarm shuts the socket down when it passes.
    """
    done = False
    alarm: _Alarm | None = None
    try:
        declared = response.headers.get("Content-Length", "")
        decoder = _Decoder(response.headers.get("Content-Encoding", ""))
        if decoder.identity and declared.isdigit() and int(declared) > max_bytes:
            raise AnswerTooLarge(max_bytes)
        alarm = _Alarm(deadline, clock, lambda: _socket_of(response))
        expired = alarm.expired
        body = bytearray()
        while True:
            if expired.is_set() or clock() >= deadline:
                raise AnswerTooSlow
            try:
                chunk = response.raw.read(READ_CHUNK, decode_content=False)
            except Exception:
                if expired.is_set():
                    raise AnswerTooSlow from None
                raise
            if expired.is_set():
                raise AnswerTooSlow
            if not chunk:
                break
            body += decoder.feed(chunk, max_bytes - len(body))
            if len(body) > max_bytes:
                raise AnswerTooLarge(max_bytes)
        response._content = bytes(body)
        # requests' own flag: the body is in, so close() hands the connection back to the pool.
        setattr(response, "_content_consumed", True)  # noqa: B010
        done = True
    finally:
        if alarm is not None:
            alarm.cancel()
        if not done:
            # A half-read connection must never go back to the pool.
            with contextlib.suppress(Exception):
                response.raw.close()
        response.close()
