"""A small pool of daemon threads that hand back futures.

concurrent.futures' ThreadPoolExecutor joins its threads when the interpreter exits, so a worker
blocked in a slow HTTP answer would hold the process after the reports are written: a run told to
stop by a second signal must exit at once. These threads are daemons; what they were doing is
abandoned at exit, and every request they make is bounded anyway.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_Task = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...]]


class DaemonPool:
    def __init__(self, max_workers: int, name: str) -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._max = max(1, max_workers)
        self._name = name
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                future.cancel()
                return future
            self._tasks.put((future, fn, args))
            if len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, fn, args = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed back to whoever reads the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Tasks not started are cancelled; running ones finish on their own (or die at exit)."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
        for _ in range(count):
            self._tasks.put(None)
