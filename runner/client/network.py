"""The client's requests over the network: one HTTP exchange with a bounded answer, and every way
it can fail as one of the core errors (runner.core.errors).

Shared by the service's client (`HttpTransport`) and the pull-request comment (`ci/comment.py`), so
that both tell "never sent" (a create may be sent again) from "sent, no answer" (it may not) the
same way. Imported only when a request goes over the network: requests and urllib3 (with
charset_normalizer, http.cookiejar and email under them) are most of a local run's start-up
otherwise, and a local run never sends one (client/transport.py's LocalTransport).
"""

from __future__ import annotations

import http.client
import time
import zlib
from collections.abc import Iterator
from typing import Any

import requests
import urllib3

from runner.client.answer import AnswerTooSlow, BoundedAdapter, UnknownEncoding, headers_by, load_answer
from runner.client.transport import AnswerTooLarge, Outgoing
from runner.core.errors import (
    AnswerTooLargeError,
    ApiError,
    BadResponseError,
    ConnectionFailedError,
    ConnectionRefusedByPeerError,
    ReadTimeoutError,
)


class HttpTransport:
    """Over the network: a pooled requests session, no retries inside urllib3 (every resend is the
    client's policy)."""

    def __init__(self, pool_size: int = 32) -> None:
        self._session = requests.Session()
        adapter = BoundedAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def send(self, out: Outgoing) -> requests.Response:
        return exchange(
            self._session,
            out.method,
            out.url,
            where=out.where,
            path=out.path,
            timeout=out.timeout,
            answer_seconds=out.answer_seconds,
            max_bytes=out.max_bytes,
            headers=dict(out.headers),
            params=out.params,
            json=out.json,
        )

    def close(self) -> None:
        self._session.close()


def exchange(
    session: requests.Session,
    method: str,
    url: str,
    *,
    where: str,
    path: str,
    timeout: tuple[float, float],
    answer_seconds: float,
    max_bytes: int,
    **kwargs: Any,
) -> requests.Response:
    """Sends one request and reads its whole answer within `answer_seconds` of wall-clock time (from
    the moment it is sent) and `max_bytes` of decoded body. `where` (host[:port]) and `path` name
    the call in messages; a failure is a TransportError subclass, never a requests exception."""
    answer_deadline = time.monotonic() + answer_seconds
    try:
        # A status line and headers trickled byte by byte end at the deadline too (with a session
        # mounted on answer.BoundedAdapter; any other adapter is bounded per read only).
        with headers_by(answer_deadline):
            response = session.request(
                method, url, timeout=timeout, allow_redirects=False, stream=True, **kwargs
            )
        load_answer(response, max_bytes=max_bytes, deadline=answer_deadline)
        return response
    except AnswerTooSlow:
        message = f"answer from {where} not complete within {answer_seconds:.3g} s"
        raise ReadTimeoutError(message, method=method, path=path) from None
    except AnswerTooLarge as exc:
        raise AnswerTooLargeError(f"{exc} from {where}", method=method, path=path) from None
    except UnknownEncoding as exc:
        message = f"answer from {where} in an encoding the client did not ask for ({exc})"
        raise BadResponseError(message, method=method, path=path) from None
    except zlib.error:
        raise BadResponseError(f"undecodable answer from {where}", method=method, path=path) from None
    except requests.RequestException as exc:
        raise transport_error(exc, where, method, path) from None
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
        raise body_error(exc, where, method, path) from None


def causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it wraps (requests wraps urllib3, which wraps socket errors)."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for inner in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(inner, BaseException):
                stack.append(inner)
        stack.extend(arg for arg in current.args if isinstance(arg, BaseException))


def never_sent(exc: BaseException) -> bool:
    """True when the connection was never established, so the request cannot have reached the server."""
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    if isinstance(exc, requests.ConnectTimeout):
        return True
    return any(
        isinstance(c, (ConnectionRefusedError, NewConnectionError, ConnectTimeoutError)) for c in causes(exc)
    )


def cause_name(exc: BaseException) -> str:
    """The innermost low-level reason, e.g. ConnectionResetError, RemoteDisconnected, IncompleteRead."""
    names = [type(c).__name__ for c in causes(exc)]
    for name in reversed(names):
        if name not in ("MaxRetryError", "ProtocolError", "ConnectionError", "ChunkedEncodingError"):
            return name
    return names[-1] if names else type(exc).__name__


def transport_error(exc: requests.RequestException, where: str, method: str, path: str) -> ApiError:
    """A requests failure (no status) as the error class the retry policy decides on."""
    cls: type[ApiError]
    if never_sent(exc):
        cls, message = ConnectionRefusedByPeerError, f"could not connect to {where} (nothing was sent)"
    elif isinstance(exc, requests.Timeout):
        cls, message = ReadTimeoutError, f"no answer from {where} within the read timeout"
    elif isinstance(exc, requests.exceptions.ContentDecodingError):
        cls, message = BadResponseError, f"undecodable answer from {where}"
    elif isinstance(exc, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        cls, message = ConnectionFailedError, f"connection to {where} broken ({cause_name(exc)})"
    else:
        cls, message = ConnectionFailedError, f"request to {where} failed ({type(exc).__name__})"
    return cls(message, method=method, path=path)


def body_error(exc: BaseException, where: str, method: str, path: str) -> ApiError:
    """A failure while the body was read from the raw stream (urllib3's errors, not requests')."""
    if any(isinstance(c, (urllib3.exceptions.ReadTimeoutError, TimeoutError)) for c in causes(exc)):
        return ReadTimeoutError(f"no answer from {where} within the read timeout", method=method, path=path)
    message = f"connection to {where} broken ({cause_name(exc)})"
    return ConnectionFailedError(message, method=method, path=path)
