"""The one thread pool: at most `limit` tasks at once on daemon threads, first come first served, each
task's value or exception handed back in a future.

Used by the job (a session's checks, its error-group reads, its sessions) and by the emulator (the
real checks of a world's sessions). The limit is fixed (the caller's; `set_limit` when a world is
loaded again): a thread starts when a task arrives and none is free, until `limit` run. The pool does
not look at the process's CPU: a pool that grew only while the process had CPU to spare ran 48 tasks
that each wait 0.3 s on 3 threads (4.9 s, not 0.9 s) while any other thread kept a core busy.

concurrent.futures' ThreadPoolExecutor joins its threads when the interpreter exits, so a worker
blocked in a slow HTTP answer would hold the process after the reports are written: a run told to
stop by a second signal must exit at once. These threads are daemons; what they were doing is
abandoned at exit, and every request they make is bounded anyway. With `idle_seconds`, a thread
with no task for that long ends (a server's pool between bursts).
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
_Task = tuple["Future[Any] | None", Callable[..., Any], tuple[Any, ...]]


class DaemonPool:
    def __init__(self, limit: int, name: str, idle_seconds: float | None = None) -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # every count below changes under it, and every put
        self._limit = max(1, limit)
        self._name = name
        self._idle_seconds = idle_seconds
        self._workers = 0  # threads alive
        self._waiting = 0  # of them, those waiting for a task
        self._unclaimed = 0  # tasks put and not yet taken by a thread
        self._started = 0  # threads ever started (their names)
        self._closed = False

    @property
    def workers(self) -> int:
        """Threads alive (running a task or waiting for one)."""
        with self._lock:
            return self._workers

    def set_limit(self, limit: int) -> None:
        """A lower limit is reached as running tasks end; a higher one as tasks arrive."""
        with self._lock:
            self._limit = max(1, limit)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        if not self._put(future, fn, args):
            future.cancel()
        return future

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        """`submit` without a future, for a task that hands its value back itself (on a queue) and
        handles its own errors (one that escapes is printed, as an uncaught one; a SystemExit ends
        its thread, which the pool no longer counts): no future's lock and condition made and
        settled for each of a local run's checks."""
        self._put(None, fn, args)

    def _put(self, future: Future[Any] | None, fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
        """The task queued (False: the pool is shut down), a thread started for it if none is free."""
        with self._lock:
            if self._closed:
                return False
            self._tasks.put((future, fn, args))
            self._unclaimed += 1
            if self._unclaimed <= self._waiting or self._workers >= self._limit:
                return True  # a waiting thread takes it, or the next one to end its task
            name = self._grown()
        threading.Thread(target=self._work, name=name, daemon=True).start()
        return True

    def _grown(self) -> str:
        """One more thread counted (under the lock); its name."""
        self._workers += 1
        self._started += 1
        return f"{self._name}-{self._started}"

    def _work(self) -> None:
        try:
            self._serve()
        except BaseException as exc:
            # A posted task's SystemExit (or another BaseException) ends this thread: it is no
            # longer counted, else the pool would wait for a thread that is gone and never start
            # one for the tasks queued; one starts now for those no thread waits for.
            with self._lock:
                self._workers -= 1
                name = (
                    self._grown() if self._unclaimed > self._waiting and self._workers < self._limit else None
                )
            if name is not None:
                threading.Thread(target=self._work, name=name, daemon=True).start()
            if not isinstance(exc, SystemExit):  # ends the thread quietly, as threading's own hook does
                raise

    def _serve(self) -> None:
        while True:
            with self._lock:
                if self._workers > self._limit:  # the limit went down
                    self._workers -= 1
                    return
                self._waiting += 1
            try:
                task = self._tasks.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    self._waiting -= 1
                    if self._tasks.empty():  # nothing put since: no task is left without a thread
                        self._workers -= 1
                        return
                continue
            with self._lock:
                self._waiting -= 1
                if task is None:  # shutdown
                    self._workers -= 1
                    return
                self._unclaimed -= 1
            future, fn, args = task
            if future is None:
                try:
                    fn(*args)
                except Exception:  # a bug of the task: shown, and the thread serves the next one
                    sys.excepthook(*sys.exc_info())
            elif future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # handed back to whoever reads the future
                    future.set_exception(exc)
            # Not kept while this thread waits for the next task: a task may reach a whole session
            # and backend, which would outlive the run by the idle time (~40 MiB at 10,000 checks).
            del task, future, fn, args

    def shutdown(self) -> None:
        """Tasks not started are cancelled; running ones finish on their own (or die at exit)."""
        with self._lock:
            self._closed = True
            count = self._workers
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                with self._lock:
                    self._unclaimed -= 1
                if task[0] is not None:
                    task[0].cancel()
        for _ in range(count):
            self._tasks.put(None)
