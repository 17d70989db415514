"""The one thread pool (runner/core/threads.py), used by the job and the emulator: a fixed limit,
reached by tasks that wait whatever else the process does; values and exceptions handed back in
futures; idle threads end; a thread waiting for its next task holds nothing of its last one."""

from __future__ import annotations

import gc
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from runner.core.threads import DaemonPool

WAIT = 5.0  # the bound of every wait below: reached only when the pool is broken


class Gate:
    """Tasks that wait at a gate (an Event): how many run at once, and the most there ever were."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self._changed = threading.Condition()
        self.running = 0
        self.most = 0

    def task(self) -> None:
        with self._changed:
            self.running += 1
            self.most = max(self.most, self.running)
            self._changed.notify_all()
        assert self.open.wait(WAIT)
        with self._changed:
            self.running -= 1
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[], bool]) -> bool:
        with self._changed:
            return self._changed.wait_for(predicate, WAIT)


@contextmanager
def busy_thread() -> Iterator[None]:
    """Another thread that keeps the interpreter busy (a CPU-bound check, a report being written)."""
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(WAIT)


@pytest.mark.parametrize("beside_a_busy_thread", [False, True], ids=["idle", "busy"])
def test_tasks_that_wait_reach_the_limit_whatever_else_the_process_does(beside_a_busy_thread: bool) -> None:
    """A pool that grew only while the process had CPU to spare stayed at 3 threads beside one busy
    thread (48 tasks of 0.3 s at limit 16: 4.9 s instead of 0.9 s)."""
    limit, tasks = 16, 48
    pool, gate = DaemonPool(limit, "test"), Gate()
    with busy_thread() if beside_a_busy_thread else _nothing():
        futures = [pool.submit(gate.task) for _ in range(tasks)]
        assert gate.wait_for(lambda: gate.running == limit), gate.running
        assert pool.workers == limit  # and no more: the other tasks wait for a thread
        gate.open.set()
        for future in futures:
            future.result(WAIT)
    assert gate.most == limit
    pool.shutdown()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_values_and_exceptions_come_back_in_the_futures() -> None:
    pool = DaemonPool(2, "test")

    def fail() -> None:
        raise ValueError("the task's own error")

    assert pool.submit(lambda a, b: a + b, 2, 3).result(WAIT) == 5
    with pytest.raises(ValueError, match="the task's own error"):
        pool.submit(fail).result(WAIT)
    pool.shutdown()


def test_a_posted_task_hands_back_its_own_value_and_one_that_raises_costs_no_thread(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `post`: no future (a local run's checks hand their attempts back on a queue); a task's escaped
    # error is printed and its thread serves the next task, so the pool keeps its one thread.
    pool, done = DaemonPool(1, "test"), threading.Event()

    def fail() -> None:
        raise ValueError("the task's own error")

    pool.post(fail)
    pool.post(done.set)
    assert done.wait(WAIT) and pool.workers == 1
    assert "the task's own error" in capsys.readouterr().err
    pool.shutdown()


def test_shutdown_cancels_the_tasks_not_started() -> None:
    pool, gate = DaemonPool(1, "test"), Gate()
    running = pool.submit(gate.task)
    queued = pool.submit(gate.task)
    assert gate.wait_for(lambda: gate.running == 1)
    pool.shutdown()
    assert queued.cancelled() and pool.submit(gate.task).cancelled()
    gate.open.set()
    running.result(WAIT)  # the running one ends on its own


def test_a_lower_limit_is_reached_as_tasks_end_and_a_free_thread_is_reused() -> None:
    pool, gate = DaemonPool(4, "test"), Gate()
    futures = [pool.submit(gate.task) for _ in range(4)]
    assert gate.wait_for(lambda: gate.running == 4)
    pool.set_limit(1)
    gate.open.set()
    for future in futures:
        future.result(WAIT)
    deadline = time.monotonic() + WAIT
    while pool.workers > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.workers == 1
    for _ in range(3):  # one after another: the thread that waits takes each, no new one starts
        pool.submit(lambda: None).result(WAIT)
    assert pool.workers == 1
    pool.shutdown()


def test_idle_threads_end_and_a_new_task_still_finds_one() -> None:
    pool = DaemonPool(2, "test", idle_seconds=0.05)
    assert pool.submit(lambda: 1).result(WAIT) == 1
    deadline = time.monotonic() + WAIT
    while pool.workers and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.workers == 0
    assert pool.submit(lambda: 2).result(WAIT) == 2


def test_a_thread_waiting_for_its_next_task_no_longer_holds_the_last_one() -> None:
    """A task reaches its session and the whole backend: a thread idle until its idle time ends must
    not keep it (a local run's world and backend were held through the reports, ~40 MiB at 10,000)."""

    class Backend:  # what a task's closure reaches
        pass

    pool = DaemonPool(1, "test", idle_seconds=30)
    backend = Backend()
    freed = weakref.finalize(backend, lambda: None)
    future = pool.submit(lambda backend=backend: None)
    del backend
    future.result(WAIT)
    del future
    deadline = time.monotonic() + WAIT
    while freed.alive and time.monotonic() < deadline:  # the thread lets go right after the task
        gc.collect()
        time.sleep(0.01)
    assert not freed.alive and pool.workers == 1  # while the thread still waits
    pool.shutdown()


def test_a_posted_task_that_exits_its_thread_leaves_the_pool_its_count() -> None:
    # A SystemExit escaping a posted task ends its thread (as in any thread). Before, the pool still
    # counted that thread: at its limit it started none for the next task, which never ran.
    pool, done = DaemonPool(1, "test"), threading.Event()
    pool.post(sys.exit, 3)
    pool.post(done.set)
    assert done.wait(WAIT)
    deadline = time.monotonic() + WAIT
    while pool.workers != 1 and time.monotonic() < deadline:  # the exited thread's count is gone
        time.sleep(0.01)
    assert pool.workers == 1
    pool.shutdown()
