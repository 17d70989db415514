"""What a run reports while it works. The job emits these values; front ends render them.

Worker threads put events on the run's queue; the main thread hands them to the observers one at a
time, so an observer never sees two events at once and needs no lock of its own. Every text in an
event is raw (service text included): each front end sanitises for its own output.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union

from runner.job.outcome import ErrorGroupOutcome, ResultOutcome

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from runner.job.digest import Digest


@dataclass(frozen=True)
class Where:
    """Which session of the run an event is about (index: its place in the spec)."""

    name: str
    location: str
    index: int = 0


@dataclass(frozen=True)
class Triggered:
    where: Where
    session_id: str
    link: str | None
    followed: bool = False  # `testsession wait ID`: triggered earlier, now followed


@dataclass(frozen=True)
class NoMatch:
    where: Where
    message: str


@dataclass(frozen=True)
class ResultFinished:
    """A check's final result appeared (with its error message, when it failed)."""

    where: Where
    result: ResultOutcome
    since: datetime | None = None  # the session's start (service clock): what a known error's age counts from


@dataclass(frozen=True)
class Progress:
    """After each read of a running session: how far it is and what still runs."""

    where: Where
    elapsed: float
    results: tuple[ResultOutcome, ...]  # every check of the session so far, finished or not

    @property
    def total(self) -> int:
        return len(self.results)


@dataclass(frozen=True)
class Tick:
    """About once a second while the run waits, so a live line can show the time."""

    elapsed: float


@dataclass(frozen=True)
class SessionFinished:
    where: Where
    status: str
    elapsed: float


@dataclass(frozen=True)
class DeadlinePassed:
    where: Where
    timeout: float
    finished: tuple[ResultOutcome, ...]
    unfinished: tuple[ResultOutcome, ...]


@dataclass(frozen=True)
class SessionFailed:
    """The session could not be run to its end: a service error, a usage error from the service, an
    internal error of the local executor (with its `traceback`, which the console prints)."""

    where: Where
    problem: str
    traceback: str | None = None


@dataclass(frozen=True)
class Stopping:
    """A signal arrived: sessions are being cancelled (`hurry`: a second signal, stop at once)."""

    reason: str
    hurry: bool = False


@dataclass(frozen=True)
class Cancelled:
    where: Where
    session_id: str
    problem: str | None = None  # why it could not be cancelled


@dataclass(frozen=True)
class AnalysesWaiting:
    where: Where
    count: int
    timeout: float


@dataclass(frozen=True)
class AnalysisReady:
    where: Where
    checks: tuple[str, ...]  # the checks whose failure this error group explains
    group: ErrorGroupOutcome


@dataclass(frozen=True)
class Retrying:
    """The client will send a request again: what happened (the service's answer, or no answer:
    "could not connect ... (nothing was sent)"), and when."""

    method: str
    path: str
    answer: str
    delay: float
    attempt: int


@dataclass(frozen=True)
class Note:
    text: str
    verbose: bool = False
    always: bool = False  # shown under -q too: what no reader may miss (a DEMO run's scripted results)


@dataclass(frozen=True)
class Finished:
    """The end: reports written, the digest every front end renders."""

    digest: Digest
    written: dict[str, Path]


Event = Union[  # noqa: UP007 - a runtime alias: `X | Y` of classes needs 3.10 at import
    Triggered,
    NoMatch,
    ResultFinished,
    Progress,
    Tick,
    SessionFinished,
    DeadlinePassed,
    SessionFailed,
    Stopping,
    Cancelled,
    AnalysesWaiting,
    AnalysisReady,
    Retrying,
    Note,
    Finished,
]


class EventQueue(queue.Queue[Union[Event, None]]):  # noqa: UP007 - see Event
    """Where a run's threads put their events (None only wakes the main thread)."""

    def retrying(self, method: str, path: str, answer: str, attempt: int, delay: float) -> None:
        """The client's retry callback (ApiClient(on_retry=...))."""
        self.put(Retrying(method, path, answer, delay, attempt))


class Observer(Protocol):
    def notify(self, event: Event) -> None: ...


class Observers:
    """Several observers as one, in order; one that fails never stops the others or the run."""

    def __init__(self, observers: list[Observer]) -> None:
        self.observers = list(observers)

    def notify(self, event: Event) -> None:
        for observer in self.observers:
            try:
                observer.notify(event)
            except Exception:  # a broken front end must never change the verdict
                continue
