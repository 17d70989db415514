"""Simulated time: runs `speed` times real time and can be advanced, so slow checks finish fast in tests."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone


class SimClock:
    """Seconds of simulated time since the clock was created, plus the matching wall-clock date."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be greater than 0")
        self._lock = threading.Lock()
        self._speed = speed
        self._wall_origin = time.time()
        self._anchor_real = time.monotonic()
        self._anchor_sim = 0.0

    @property
    def speed(self) -> float:
        return self._speed

    def now(self) -> float:
        with self._lock:
            return self._anchor_sim + (time.monotonic() - self._anchor_real) * self._speed

    def set_speed(self, speed: float) -> None:
        if speed <= 0:
            raise ValueError("speed must be greater than 0")
        with self._lock:
            # Re-anchor so the simulated time does not jump when the rate changes.
            real = time.monotonic()
            self._anchor_sim += (real - self._anchor_real) * self._speed
            self._anchor_real = real
            self._speed = speed

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        with self._lock:
            self._anchor_sim += seconds

    def real_seconds_until(self, sim_time: float) -> float:
        """Real seconds until the simulated clock reaches `sim_time` (0 when already past)."""
        return max(0.0, (sim_time - self.now()) / self._speed)

    def to_datetime(self, sim_time: float) -> datetime:
        return datetime.fromtimestamp(self._wall_origin + sim_time, tz=timezone.utc)

    def from_datetime(self, moment: datetime) -> float:
        """The simulated time of a wall-clock date (negative before the clock was created)."""
        return moment.timestamp() - self._wall_origin

    def to_epoch(self, sim_time: float) -> float:
        """The wall-clock time of `sim_time`, in seconds since the epoch (as a state file stores it)."""
        return self._wall_origin + sim_time

    def from_epoch(self, epoch: float) -> float:
        return self.from_datetime(datetime.fromtimestamp(epoch, tz=timezone.utc))

    def moment(self, sim_time: float) -> datetime:
        """The date `iso` writes (milliseconds, cut as isoformat cuts them), as a datetime."""
        moment = self.to_datetime(sim_time)
        return moment.replace(microsecond=moment.microsecond - moment.microsecond % 1000)

    def iso(self, sim_time: float) -> str:
        return self.to_datetime(sim_time).isoformat(timespec="milliseconds").replace("+00:00", "Z")
