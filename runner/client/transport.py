"""How the client's requests reach the service: one transport contract, two transports (as httpx's
`_transports/base.py`).

- `HttpTransport` (client/network.py): over the network, one exchange with a bounded answer, and
  every way it can fail as one of the core errors. Imported only when it is used: requests and what
  it loads are most of a local run's start-up otherwise.
- `LocalTransport`: a service in this process (the embedded emulator of a local run) answers through
  a function; its answer is a `LocalReply`, read by the client exactly as one from the network
  (the same `Reply` contract, the same size bound). Nothing here imports requests.
"""

from __future__ import annotations

import json as json_module
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from runner.core.errors import AnswerTooLargeError

MAX_ANSWER_BYTES = 10 * 1024 * 1024  # the largest answer body, after decompression


class AnswerTooLarge(Exception):
    """An answer's body (decoded) is larger than the client reads."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"answer larger than {_size(limit)} (the client's limit)")


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):g} MiB" if count >= 1024 * 1024 else f"{count} bytes"


class SentRequest(Protocol):
    """What an answer says of the request it answers (requests' PreparedRequest has these)."""

    @property
    def method(self) -> str | None: ...

    @property
    def url(self) -> str | None: ...


class Reply(Protocol):
    """One whole answer as the client reads it: requests' Response over the network, `LocalReply`
    in this process."""

    @property
    def status_code(self) -> int: ...

    @property
    def reason(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...  # case-insensitive names

    @property
    def request(self) -> SentRequest: ...

    @property
    def content(self) -> bytes: ...  # the whole body, decoded

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...  # ValueError when the body is not JSON


@dataclass(frozen=True)
class Outgoing:
    """One request of the client, as every transport takes it: read within `answer_seconds` of
    wall-clock time and `max_bytes` of decoded body; `where` (host[:port]) and `path` name the call in
    messages."""

    method: str
    url: str
    where: str
    path: str
    headers: Mapping[str, str]
    params: dict[str, Any] | None
    json: dict[str, Any] | None
    timeout: tuple[float, float]  # (connect, read) seconds
    answer_seconds: float
    max_bytes: int


class Transport(Protocol):
    """Sends one request of the client and reads its whole answer, within its `answer_seconds` of
    wall-clock time and `max_bytes` of decoded body; a failure is a TransportError subclass of
    runner.core.errors, never a requests exception."""

    def send(self, out: Outgoing) -> Reply: ...

    def close(self) -> None: ...


# (method, path with its prefix, query, JSON body, headers) -> (status, headers, body bytes)
LocalServe = Callable[
    [str, str, "dict[str, Any] | None", "dict[str, Any] | None", Mapping[str, str]],
    "tuple[int, Mapping[str, str], bytes]",
]


class Headers(Mapping[str, str]):
    """Answer headers whose names match in any case, as HTTP's (and requests') do."""

    def __init__(self, *sources: Mapping[str, str]) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        for source in sources:  # a later source wins, whatever the case of its names
            for name, value in source.items():
                self._items[name.lower()] = (name, value)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class LocalRequest:
    method: str
    url: str  # as it would be sent, with its query


@dataclass(frozen=True)
class LocalReply:
    """An answer of the service in this process: JSON in UTF-8, as the emulator writes it."""

    status_code: int
    reason: str
    headers: Headers
    request: LocalRequest
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json_module.loads(self.text)


class LocalTransport:
    """A service in this process answers through `serve`; nothing crosses a socket. The answer is
    bounded as one from the network: larger than `max_bytes`, it is the same AnswerTooLargeError."""

    def __init__(self, serve: LocalServe) -> None:
        self._serve = serve

    def send(self, out: Outgoing) -> LocalReply:
        status, answer_headers, body = self._serve(
            out.method, urlsplit(out.url).path, out.params, out.json, out.headers
        )
        if len(body) > out.max_bytes:
            message = f"{AnswerTooLarge(out.max_bytes)} from {out.where}"
            raise AnswerTooLargeError(message, method=out.method, path=out.path)
        return LocalReply(
            status_code=status,
            reason=_phrase(status),
            headers=Headers({"Content-Type": "application/json"}, answer_headers),
            request=LocalRequest(out.method, _with_query(out.url, out.params)),
            content=body,
        )

    def close(self) -> None:
        return None


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _with_query(url: str, params: dict[str, Any] | None) -> str:
    """The URL with its query as requests encodes one (a list repeats its key, None is left out)."""
    pairs = [
        (name, item)
        for name, value in (params or {}).items()
        for item in (value if isinstance(value, (list, tuple)) else [value])
        if item is not None
    ]
    return f"{url}?{urlencode(pairs)}" if pairs else url
