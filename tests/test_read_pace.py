"""The reads of a running session are paced by what they cost: a read that took 0.65 s (a session of
thousands of results) is followed by a wait of ten times that, within the pace's most; cheap reads
keep the pace's own intervals (runner/client/polling.py `wait_for_session`)."""

from __future__ import annotations

from typing import cast

from runner.client import ApiClient
from runner.client.polling import Pace, wait_for_session
from runner.models import TestSession


class _Service:
    """Answers a session that ends at the fifth read; each read takes `read_seconds` of the clock."""

    def __init__(self, read_seconds: float) -> None:
        self.now = 0.0
        self.read_seconds = read_seconds
        self.waits: list[int] = []
        self.reads = 0

    def clock(self) -> float:
        return self.now

    def await_completion(self, session_id: str, max_wait_seconds: int) -> TestSession | None:
        self.waits.append(max_wait_seconds)
        self.now += max_wait_seconds
        return None

    def get_session(self, session_id: str) -> TestSession:
        self.reads += 1
        self.now += self.read_seconds
        status = "PASSED" if self.reads == 5 else "RUNNING"
        return TestSession(testSessionId=session_id, status=status)


def _waits(read_seconds: float) -> list[int]:
    service = _Service(read_seconds)
    final = wait_for_session(
        cast(ApiClient, service),
        "s1",
        deadline=1000.0,
        watch=lambda _session: True,  # something changed at every read: the pace starts again
        pace=Pace(first=2.0, most=10.0),
        clock=service.clock,
    )
    assert final is not None and final.status == "PASSED"
    return service.waits


def test_cheap_reads_keep_the_pace() -> None:
    assert _waits(0.01) == [2, 2, 2, 2, 2]


def test_a_costly_read_stretches_the_next_wait_within_the_most() -> None:
    assert _waits(0.65) == [2, 6, 6, 6, 6]  # 6.5 s: long polls take whole seconds
    assert _waits(3.0) == [2, 10, 10, 10, 10]


def test_each_read_is_let_go_before_the_next_one_is_made() -> None:
    """A read of 10,000 results is ~11 MiB: the wait must not hold one while the next is parsed. (A
    session holds no reference cycle: it goes when its last reference does, no collection needed.)"""
    import weakref

    service = _Service(0.01)
    alive: list[weakref.finalize] = []  # type: ignore[type-arg]
    held_at_read: list[int] = []
    answer = service.get_session

    def get_session(session_id: str) -> TestSession:
        held_at_read.append(sum(1 for f in alive if f.alive))
        read = answer(session_id)
        alive.append(weakref.finalize(read, lambda: None))
        return read

    service.get_session = get_session  # type: ignore[method-assign]
    final = wait_for_session(
        cast(ApiClient, service), "s1", deadline=1000.0, watch=lambda _session: False,
        pace=Pace(first=2.0, most=10.0), clock=service.clock,
    )  # fmt: skip
    assert final is not None and final.status == "PASSED"
    assert held_at_read == [0, 0, 0, 0, 0]
