"""What a run reports while it works. The job emits these values; front ends render them.

Worker threads put events on the run's queue; the main thread hands them to the observers one at a
time, so an observer never sees two events at once and needs no lock of its own. Every text in an
event is raw (service text included): each front end sanitises for its own output.
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Any, Final, Protocol, Union

from runner.job.outcome import ErrorGroupOutcome, ResultOutcome

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from runner.job.digest import Digest


class _Value:
    """An event's base: a __slots__ class, immutable by its `Final` attributes (mypy), equal and hashed
    by its fields. Not a frozen dataclass: those 16 classes cost ~7 ms to create at every start (and
    pull dataclasses' inspect in), these ~0.1 ms; an instance is created as fast."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((type(self), self._fields()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Where(_Value):
    """Which session of the run an event is about (index: its place in the spec)."""

    __slots__ = ("index", "location", "name")

    def __init__(self, name: str, location: str, index: int = 0) -> None:
        self.name: Final = name
        self.location: Final = location
        self.index: Final = index

    # Its own, not _Value's generic pair: a Where keys the front ends' dicts at every event.
    def __eq__(self, other: object) -> bool:
        return other is self or (
            type(other) is Where
            and (self.name, self.location, self.index) == (other.name, other.location, other.index)
        )

    def __hash__(self) -> int:
        return hash((self.name, self.location, self.index))


class Triggered(_Value):
    __slots__ = ("followed", "link", "session_id", "where")

    def __init__(self, where: Where, session_id: str, link: str | None, followed: bool = False) -> None:
        self.where: Final = where
        self.session_id: Final = session_id
        self.link: Final = link
        self.followed: Final = followed  # `testsession wait ID`: triggered earlier, now followed


class NoMatch(_Value):
    __slots__ = ("message", "where")

    def __init__(self, where: Where, message: str) -> None:
        self.where: Final = where
        self.message: Final = message


class ResultFinished(_Value):
    """A check's final result appeared (with its error message, when it failed)."""

    __slots__ = ("result", "since", "where")

    def __init__(self, where: Where, result: ResultOutcome, since: datetime | None = None) -> None:
        self.where: Final = where
        self.result: Final = result
        self.since: Final = since  # the session's start (service clock): what a known error's age counts from


class Progress(_Value):
    """While a session runs (after a read of the service, or attempts of local checks): how far it
    is, by its counts, and the unfinished checks it names. Its size does not grow with the session
    (a local run names at most RUNNING_SHOWN of its running checks; a service session, the
    unfinished results of its read): each check's final result comes once, in its own
    ResultFinished, so a front end or the partial reports never walk every result at every event."""

    __slots__ = ("done", "elapsed", "running", "total", "where")

    def __init__(
        self, where: Where, elapsed: float, running: tuple[ResultOutcome, ...], total: int, done: int
    ) -> None:
        self.where: Final = where
        self.elapsed: Final = elapsed
        self.running: Final = running  # unfinished checks, in the order they run (not all of them)
        self.total: Final = total  # checks of the session
        self.done: Final = done  # of them finished


class Tick(_Value):
    """About once a second while the run waits, so a live line can show the time."""

    __slots__ = ("elapsed",)

    def __init__(self, elapsed: float) -> None:
        self.elapsed: Final = elapsed


class Drained(_Value):
    """The main thread handed the observers every event that was queued: a front end that holds
    lines for a while (the console's result lines in a CI log) writes them now."""

    __slots__ = ()


class SessionFinished(_Value):
    __slots__ = ("elapsed", "status", "where")

    def __init__(self, where: Where, status: str, elapsed: float) -> None:
        self.where: Final = where
        self.status: Final = status
        self.elapsed: Final = elapsed


class DeadlinePassed(_Value):
    __slots__ = ("finished", "timeout", "unfinished", "where")

    def __init__(
        self,
        where: Where,
        timeout: float,
        finished: tuple[ResultOutcome, ...],
        unfinished: tuple[ResultOutcome, ...],
    ) -> None:
        self.where: Final = where
        self.timeout: Final = timeout
        self.finished: Final = finished
        self.unfinished: Final = unfinished


class SessionFailed(_Value):
    """The session could not be run to its end: a service error, a usage error from the service, an
    internal error of the local executor (with its `traceback`, which the console prints)."""

    __slots__ = ("problem", "traceback", "where")

    def __init__(self, where: Where, problem: str, traceback: str | None = None) -> None:
        self.where: Final = where
        self.problem: Final = problem
        self.traceback: Final = traceback


class Stopping(_Value):
    """A signal arrived: sessions are being cancelled (`hurry`: a second signal, stop at once)."""

    __slots__ = ("hurry", "reason")

    def __init__(self, reason: str, hurry: bool = False) -> None:
        self.reason: Final = reason
        self.hurry: Final = hurry


class Cancelled(_Value):
    __slots__ = ("problem", "session_id", "where")

    def __init__(self, where: Where, session_id: str, problem: str | None = None) -> None:
        self.where: Final = where
        self.session_id: Final = session_id
        self.problem: Final = problem  # why it could not be cancelled


class AnalysesWaiting(_Value):
    __slots__ = ("count", "timeout", "where")

    def __init__(self, where: Where, count: int, timeout: float) -> None:
        self.where: Final = where
        self.count: Final = count
        self.timeout: Final = timeout


class AnalysisReady(_Value):
    __slots__ = ("checks", "group", "where")

    def __init__(self, where: Where, checks: tuple[str, ...], group: ErrorGroupOutcome) -> None:
        self.where: Final = where
        self.checks: Final = checks  # the checks whose failure this error group explains
        self.group: Final = group


class Retrying(_Value):
    """The client will send a request again: what happened (the service's answer, or no answer:
    "could not connect ... (nothing was sent)"), and when."""

    __slots__ = ("answer", "attempt", "delay", "method", "path")

    def __init__(self, method: str, path: str, answer: str, delay: float, attempt: int) -> None:
        self.method: Final = method
        self.path: Final = path
        self.answer: Final = answer
        self.delay: Final = delay
        self.attempt: Final = attempt


class Note(_Value):
    __slots__ = ("always", "text", "verbose")

    def __init__(self, text: str, verbose: bool = False, always: bool = False) -> None:
        self.text: Final = text
        self.verbose: Final = verbose
        self.always: Final = always  # shown under -q too: what no reader may miss (a DEMO run's results)


class Finished(_Value):
    """The end: reports written, the digest every front end renders."""

    __slots__ = ("digest", "written")

    def __init__(self, digest: Digest, written: dict[str, Path]) -> None:
        self.digest: Final = digest
        self.written: Final = written


Event = Union[  # noqa: UP007 - a runtime alias: `X | Y` of classes needs 3.10 at import
    Triggered,
    NoMatch,
    ResultFinished,
    Progress,
    Tick,
    Drained,
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


class EventQueue(queue.SimpleQueue[Union[Event, None]]):  # noqa: UP007 - see Event
    """Where a run's threads put their events (None only wakes the main thread). A SimpleQueue (C,
    unbounded): a put and a get cost ~0.14 µs against queue.Queue's ~2.6 µs and its Python-level
    condition, once per result of the run."""

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
