"""The one way to wait for something on the service: a session to end, an analysis to complete.

Both waits have a deadline (monotonic seconds) and stop early when `stop` is set. Sessions are waited
for on the completion long poll, so the end is seen at once; analyses have no long poll and are read
with a growing interval.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.core.errors import BadResponseError

if TYPE_CHECKING:
    # The pace of reads is part of every run's plan (job/session.py); the client and the models
    # only of one that waits on the service.
    from runner.client.http import ApiClient
    from runner.models import RootCauseAnalysis, TestSession


@dataclass(frozen=True)
class Pace:
    """Intervals that start at `first` and grow by `factor` up to `most`."""

    first: float
    most: float
    factor: float = 1.5

    def next(self, interval: float) -> float:
        return min(self.most, interval * self.factor)


SESSION_READS = Pace(first=2.0, most=10.0)  # reads of a running session between long polls
# A read of a big running session costs both sides (rendered, sent, parsed, judged: ~0.5 s at 10,000
# results on a busy machine); the next read waits at least this many times as long as the last took
# (within the pace's most), so reading stays about a tenth of the run however big the session.
READ_COST_FACTOR = 10.0
ANALYSIS_READS = Pace(first=0.25, most=2.0, factor=1.6)


def _same_session(session: TestSession, session_id: str) -> TestSession:
    # A proxy or a confused service answering for another session must not decide this one.
    if session.testSessionId != session_id:
        raise BadResponseError(
            f"the service answered with test session {session.testSessionId!r} when asked for {session_id!r}"
        )
    return session


def wait_for_session(
    client: ApiClient,
    session_id: str,
    deadline: float,
    *,
    stop: threading.Event | None = None,
    watch: Callable[[TestSession], bool] | None = None,
    pace: Pace = SESSION_READS,
    clock: Callable[[], float] = time.monotonic,
    read_cost: float = 0.0,
) -> TestSession | None:
    """The final session, or None when the deadline passed or `stop` was set first.

    Without `watch` each long poll waits as long as the API allows. With `watch`, the long polls
    are as short as the current read interval and, after each one that ends without the session
    ending, the session is read and handed to `watch`; when it returns True (something changed)
    the interval starts again at `pace.first`, else it grows; never shorter than READ_COST_FACTOR
    times what the last read took (within `pace.most`). `read_cost`: what the caller's own read of
    the session took (the trigger's answer, watched): the first read waits by it too.
    """
    from runner.client.http import MAX_WAIT_SECONDS

    interval = max(pace.first, min(pace.most, READ_COST_FACTOR * read_cost))
    while True:
        if stop is not None and stop.is_set():
            return None
        remaining = deadline - clock()
        if remaining <= 0:
            return None
        wait = min(remaining, interval if watch is not None else MAX_WAIT_SECONDS)
        final = client.await_completion(session_id, max_wait_seconds=max(1, math.floor(wait)))
        if final is not None:
            final = _same_session(final, session_id)
            if final.is_final:
                return final
            # Let go of each read before the next one starts: a read of 10,000 rows is ~11 MiB, and
            # this frame would hold it while the next one is parsed.
            del final
        if watch is None:
            continue
        if stop is not None and stop.is_set():
            return None
        read_at = clock()
        session = _same_session(client.get_session(session_id), session_id)
        if session.is_final:
            return session
        changed = watch(session)
        del session  # as above
        interval = pace.first if changed else pace.next(interval)
        interval = max(interval, min(pace.most, READ_COST_FACTOR * (clock() - read_at)))


def wait_for_analysis(
    client: ApiClient,
    analysis_id: str,
    deadline: float,
    *,
    stop: threading.Event | None = None,
    pace: Pace = ANALYSIS_READS,
    clock: Callable[[], float] = time.monotonic,
) -> RootCauseAnalysis:
    """The analysis once completed, or as it last was when the deadline passed or `stop` was set."""
    waiter = stop or threading.Event()
    interval = pace.first
    while True:
        analysis = client.get_analysis(analysis_id)
        remaining = deadline - clock()
        if analysis.is_completed or remaining <= 0 or waiter.is_set():
            return analysis
        if waiter.wait(min(interval, remaining)):
            return analysis
        interval = pace.next(interval)
