"""The executor's pool: at most `limit` jobs at once on daemon threads, first come first served.

Threads beyond what the process can feed only cost: a real check is a little Python between waits
(a request, a retry's backoff), and Python runs one thread at a time. 10,000 checks against a
local server took 25 s of CPU on 16 threads and 19 s on 4, for the same requests, the difference
spent handing the interpreter's lock from thread to thread (850,000 futex calls); on 3 threads,
in pairs of runs, 1-2 s less again than on 4. So the pool starts EAGER threads at once and adds
one more, up to its limit, only while jobs wait *and* the process has CPU to spare (under SPARE
of one core over QUIET_TICKS ticks in a row): checks that wait on slow servers, on backoffs or on
child processes reach the limit within a few ticks; checks that keep the interpreter busy stay on few
threads, which is as fast and cheaper.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable

EAGER = 3  # threads started without looking at the CPU (10,000 local checks, 2 cores: 3 beat 2 and 4)
TICK = 0.01  # seconds between two looks at the process's CPU while jobs wait
SPARE = 0.6  # below this share of one core used over a tick, another thread is worth it
# Ticks in a row under SPARE before threads are added: the threads wait, not just a moment. A quiet
# tick happens by chance (three checks waiting on the same slow answer, a pause of the server):
# reacting to one took 1,000 local checks to 9-16 threads in half the runs, where 3 keep the CPU
# busy; 5 in a row still took 10,000 to 6 threads in 1 of 4 runs (1.5 s slower), 10 in none of 6.
# Checks that wait on slow servers still reach the limit within a few tenths of a second.
QUIET_TICKS = 10


class Pool:
    """Threads start as jobs arrive and end after `idle_seconds` without one (a process may exit
    while they wait)."""

    def __init__(self, limit: int, idle_seconds: float = 30.0) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()  # every put, and every worker's decision to start or end, under it
        self._limit = limit
        self._idle = idle_seconds
        self._workers = 0
        self._governed = False  # a governor thread is watching the backlog

    @property
    def workers(self) -> int:
        """Threads alive (busy or waiting for a job)."""
        with self._lock:
            return self._workers

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self._limit = limit

    def submit(self, work: Callable[[], None]) -> None:
        with self._lock:
            self._jobs.put(work)
            if self._workers >= self._limit:
                return  # a worker takes it when it is free
            if self._workers >= EAGER:
                self._govern()
                return
            self._workers += 1
        self._start_worker()

    def _start_worker(self) -> None:
        threading.Thread(target=self._work, name="real-check", daemon=True).start()

    def _govern(self) -> None:
        """Under the lock: a governor adds threads while jobs wait and the CPU has room."""
        if not self._governed:
            self._governed = True
            threading.Thread(target=self._governor, name="real-check-pool", daemon=True).start()

    def _governor(self) -> None:
        cpu, at = time.process_time(), time.monotonic()
        quiet = QuietTicks()
        while True:
            time.sleep(TICK)
            now_cpu, now = time.process_time(), time.monotonic()
            used = (now_cpu - cpu) / max(now - at, 1e-6)
            cpu, at = now_cpu, now
            with self._lock:
                if self._jobs.empty() or self._workers >= self._limit:
                    self._governed = False
                    return
                add = quiet.after(used, self._workers, self._limit)
                if not add:
                    continue
                self._workers += add
            for _ in range(add):
                self._start_worker()

    def _work(self) -> None:
        while True:
            try:
                work = self._jobs.get(timeout=self._idle)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():  # nothing was put since: no job is left without a worker
                        self._workers -= 1
                        return
                continue
            with contextlib.suppress(Exception):  # `execute` never raises; a worker outlives a bug anyway
                work()
            # Not kept while this thread waits for the next job: a job reaches its session and the
            # whole backend, which would outlive the run by the idle time (~40 MiB at 10,000 checks).
            del work
            with self._lock:
                if self._workers > self._limit:  # the limit went down
                    self._workers -= 1
                    return


class QuietTicks:
    """The governor's memory: the CPU used in each of the last ticks in a row under SPARE."""

    def __init__(self) -> None:
        self.ticks: list[float] = []

    def after(self, used: float, workers: int, limit: int) -> int:
        """Threads to add after a tick that used `used` of a core (threads_to_add). A busy tick
        starts the count again, and so do added threads: they get QUIET_TICKS of their own."""
        self.ticks = [*self.ticks, used] if used < SPARE else []
        add = threads_to_add(workers, limit, self.ticks)
        if add:
            self.ticks = []
        return add


def threads_to_add(workers: int, limit: int, quiet: list[float]) -> int:
    """Threads to add after `quiet`, the CPU used (share of one core) in each of the last ticks in a
    row under SPARE: none before QUIET_TICKS of them; then, when the threads mostly waited (under
    half of SPARE on average), as many again (up to `limit`), else one."""
    if len(quiet) < QUIET_TICKS:
        return 0
    idle = sum(quiet) / len(quiet) < SPARE / 2
    return min(limit - workers, max(1, workers if idle else 1))
