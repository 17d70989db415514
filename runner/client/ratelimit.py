"""A client-side rate limiter, so a run never meets the service's 429 in the first place."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from runner.models.operations import RATE_LIMIT


class RateLimiter:
    """Sliding-window log: at most `limit` acquisitions in any window of `period` seconds.

    One instance is shared by every thread (and every client) of a run that uses the same key.
    `acquire()` blocks until a slot is free. A sliding window (rather than a token bucket with a
    burst) is used because it gives the same guarantee the service enforces: no window of
    `period` seconds ever holds more than `limit` requests.
    """

    def __init__(
        self,
        limit: int = RATE_LIMIT.limit,
        period: float = RATE_LIMIT.window_seconds,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if period <= 0:
            raise ValueError("period must be positive")
        self.limit = limit
        self.period = period
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._stamps: deque[float] = deque()

    def _forget_old(self, now: float) -> None:
        while self._stamps and self._stamps[0] <= now - self.period:
            self._stamps.popleft()

    def _try_take(self) -> tuple[float, float | None]:
        """(0.0, the slot's stamp) or (seconds to wait, None)."""
        with self._lock:
            now = self._clock()
            self._forget_old(now)
            if len(self._stamps) < self.limit:
                self._stamps.append(now)
                return 0.0, now
            return max(self._stamps[0] + self.period - now, 1e-4), None

    def _take(self) -> tuple[float, float]:
        waited = 0.0
        while True:
            wait, stamp = self._try_take()
            if stamp is not None:
                return waited, stamp
            # Sleep outside the lock so other threads can check (and time can pass for them too).
            self._sleep(wait)
            waited += wait

    def acquire(self) -> float:
        """Blocks until a slot is free and takes it; returns the seconds spent waiting."""
        return self._take()[0]

    @contextmanager
    def slot(self) -> Iterator[float]:
        """acquire() for one request sent inside the block; when the block ends (the answer is in),
        the slot is stamped again with that moment.

        Why: the service counts a request when it arrives, which is after we took the slot and
        before its answer is complete. Counted from the answer's end, our window never ends before
        the service's, so a delay between taking the slot and the request's arrival (thread
        scheduling, connection set-up, network jitter) cannot turn into a 429 at the limit.
        """
        waited, stamp = self._take()
        try:
            yield waited
        finally:
            with self._lock:
                # Still sorted: every stamp is read from the clock under the lock.
                with suppress(ValueError):  # already forgotten: the request took over a period
                    self._stamps.remove(stamp)
                self._stamps.append(self._clock())

    @property
    def in_window(self) -> int:
        """Acquisitions within the current window (for tests and diagnostics)."""
        with self._lock:
            self._forget_old(self._clock())
            return len(self._stamps)
