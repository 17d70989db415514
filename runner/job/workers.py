"""A local run's API checks on worker processes as well as on the run's own threads: the second core.

One process runs its Python on one core at a time (the GIL): 10,000 API checks on the run's pool of
threads kept one core busy and left the other idle. So a session with many checks that the engine
runs here (`workers_for` decides, the one place) starts worker processes, as Playwright's runner
does: each runs the engine on its share of the checks on threads of its own and hands every attempt
back as it ends. The run's own threads keep a share (`lane`); the parent keeps the one session:
known/new, error groups, analyses, events, history and the reports stay in job/local.py.

The wire: pickle in length-prefixed frames over the worker's stdin and, back, over a pipe of its own
(its fd number on its command line): pipes only we hold (a worker is our own child running our own
code). Not its stdout: whatever else writes there (a `sitecustomize` or `.pth` file that prints at
start-up, a C library) would cut the frames and the worker would be taken for crashed; its stdout goes
to /dev/null, its stderr is kept for a crash's traceback. To a worker: one `Hello` (the session's
variables, how long it may live, its threads), then lists of `Job` (a `Task` with its check as its
definition's data). From it: an empty list once it is ready, then lists of `(index, Attempt, final)`,
the engine's own values. A frame is at most MAX_FRAME bytes (a worker sends a larger batch of attempts
in smaller frames); a larger one, a value of another type or a cut one is the worker's crash, as is
any error in the worker's sending: it exits at once, its error on stderr.

Bounded: a worker ends when its stdin closes (the parent closed it, or died: a worker never outlives
its run), when its Hello's seconds pass (the run's deadline), or on SIGTERM; it ignores SIGINT (a
terminal's Ctrl-C reaches the parent, which ends the session and closes the pipes). The parent waits
STOP_SECONDS for it, then kills it. A worker that never became ready (not within START_SECONDS, or it
died first) never started a check: it sends its ready frame before it reads one, so the checks handed
to it run on the run's own threads (`run_here`). One that crashes after, or sends what cannot be read,
fails its unfinished checks closed: an INTERNAL_ERROR attempt each (exit 4). One that a stop signal
ended (SIGTERM, SIGINT, SIGHUP: the run's stop reached its group) did not crash: its unfinished checks
come back cancelled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from runner.checks.failures import FailureKind
from runner.checks.outcome import Attempt, mask
from runner.checks.variables import Substitution
from runner.core.errors import UsageError

if TYPE_CHECKING:
    from runner.checks.checksfile import FileCheck
    from runner.checks.variables import VariableSources
    from runner.models import RetryStrategy

ENV_WORKERS = "TESTSESSION_WORKERS"  # worker processes of a session: 0 none, unset: workers_for's choice
MAX_WORKERS = 8  # what TESTSESSION_WORKERS may ask for
# Unasked, at most this many: the run's own thread that keeps the session is then the longest path,
# and each worker holds ~50 MiB of its own.
AUTO_MAX = 3
# Below this many checks a worker's start (~0.3 s of CPU for its Python and the engine's imports) and
# the pickling cost more than the second core gives back: 1,000 checks took 2.1 s of CPU with two
# workers against 1.1 s without (docs/benchmarks.md, workers3).
MIN_CHECKS = 2_000
MAX_FRAME = 32 * 1024 * 1024  # bytes of one frame: a batch of tasks or attempts (a body excerpt is capped)
BATCH = 64  # attempts in one frame from a worker at most
START_SECONDS = 30.0  # from a worker's start to its first frame; then it is killed, its checks errors
STOP_SECONDS = 2.0  # from closing a worker's stdin to its exit; then it is killed
STDERR_KEPT = 8_000  # characters of a worker's stderr kept (its end): a crash's traceback
_HEADER = struct.Struct(">I")
_STOPS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})  # signals that stop, not crash, a worker
# A worker's program: this process's import path, then the worker. `python -c` puts the current
# folder first on its path, where a repository's own `runner/` package would be imported instead of
# the run's (the installed `testsession` never looks there): the worker imports what the run did.
# argv[1]: the fd of the pipe for frames back.
_BOOT = "import sys; sys.path[:] = sys.argv[2:]; from runner.job.workers import main; main()"

Item = tuple[int, Attempt, bool]  # (the check's index in its session, an attempt, whether final)
Hand = Callable[[int, Attempt, bool], None]


class Hello(NamedTuple):
    variables: VariableSources
    seconds: float  # the worker ends this long after it read its Hello, whatever happens
    threads: int
    body_bytes: int


class Task(NamedTuple):
    position: int  # the check's index in its session
    check: FileCheck
    retry: RetryStrategy | None
    max_run: float | None


RunHere = Callable[[Task], None]  # a check no worker started, to the run's own threads


class Job(NamedTuple):
    """A Task as a worker is sent it: the check's definition as data (CheckPlan.definition_input),
    not the FileCheck, whose class would load the checks file's and the world's modules (yaml, the
    declared models: ~4 MiB of a worker's ~48 MiB) into a process that only runs the engine."""

    position: int
    id: str  # the check's, for an error that its definition no longer parses
    data: dict[str, Any] | None  # None: no definition (never: the plan said REAL)
    checked: bool
    retry: RetryStrategy | None
    max_run: float | None

    @classmethod
    def of(cls, task: Task) -> Job:
        given = task.check.plan.definition_input()
        data, checked = given if given is not None else (None, False)
        return cls(task.position, task.check.id, data, checked, task.retry, task.max_run)


def parse_workers(environ: Mapping[str, str]) -> int | None:
    """TESTSESSION_WORKERS: 0 (none) to MAX_WORKERS; unset or empty: None (workers_for decides)."""
    text = environ.get(ENV_WORKERS, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_WORKERS:  # isdigit alone: "²" too
        raise UsageError(
            f"{ENV_WORKERS}: {text[:20]!r} is not a number of worker processes; allowed: 0 to {MAX_WORKERS}"
        )
    return int(text)


def workers_for(checks: int, setting: int | None, cpus: int | None = None) -> int:
    """The one decision: how many worker processes a session starts for `checks` checks the engine
    runs here that are not browser checks. The setting, when given; else one a CPU but the run's own,
    when there are MIN_CHECKS checks or more and more than one CPU."""
    if checks == 0:
        return 0
    if setting is not None:
        return min(setting, checks)
    cpus = cpus if cpus is not None else usable_cpus()
    if checks < MIN_CHECKS or cpus < 2:
        return 0
    return min(cpus - 1, AUTO_MAX)


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity (taskset), within its cgroup's quota (a container
    given `--cpus 2` on a larger host sees all the host's CPUs)."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text(encoding="ascii").split()[:2]
        if quota != "max":
            count = min(count, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to read: the affinity says it
    return count


# --- the frames ------------------------------------------------------------------------------------


# pickle is imported where a frame is made or read: a run without workers (one check) never loads it.


class FrameTooLarge(ValueError):
    """A value that pickles to more than a frame's limit: nothing of it was written."""


def write_frame(out: IO[bytes], value: object, limit: int = MAX_FRAME) -> None:
    import pickle

    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > limit:
        raise FrameTooLarge(f"a frame of {len(data)} bytes is over the {limit} limit")
    out.write(_HEADER.pack(len(data)) + data)
    out.flush()


def write_items(out: IO[bytes], items: list[Item], limit: int = MAX_FRAME) -> None:
    """Attempts in one frame, or, when that is over the limit, in halves (each again as needed).
    FrameTooLarge: one attempt alone is over it (a bug: a body excerpt is capped)."""
    try:
        write_frame(out, items, limit)
    except FrameTooLarge:
        if len(items) < 2:
            raise
        half = len(items) // 2
        write_items(out, items[:half], limit)
        write_items(out, items[half:], limit)


def read_frame(stream: IO[bytes]) -> object | None:
    """The next value; None at the stream's end. ValueError: a frame over MAX_FRAME, or a cut one."""
    import pickle

    head = stream.read(_HEADER.size)
    if not head:
        return None
    if len(head) < _HEADER.size:
        raise ValueError("a frame's header was cut")
    (size,) = _HEADER.unpack(head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes is over the {MAX_FRAME} limit")
    data = stream.read(size)
    if len(data) < size:
        raise ValueError("a frame was cut")
    value: object = pickle.loads(data)
    return value


def _items(value: object) -> list[Item]:
    """A worker's frame as the engine's values; ValueError for anything else."""
    if not isinstance(value, list):
        raise ValueError("a frame that is not a list")
    for item in value:
        if not (
            isinstance(item, tuple)
            and len(item) == 3
            and type(item[0]) is int
            and isinstance(item[1], Attempt)
            and type(item[2]) is bool
        ):
            raise ValueError("an item that is not (index, Attempt, final)")
    return value


# --- the parent's side -----------------------------------------------------------------------------


class _Worker:
    """One worker process and the two threads that feed and read it."""

    def __init__(self, number: int, hello: Hello, hand: Hand, run_here: RunHere | None = None) -> None:
        self.number = number
        self.hand = hand
        self.run_here = run_here  # None: a check it never started fails closed too
        self.variables = hello.variables
        self.lock = threading.Lock()
        self.out: dict[int, Task] = {}  # checks handed to it whose final attempt is not back
        self.dead = False
        self.ready = threading.Event()
        self.tasks: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self.stderr = ""
        self.unsent: str | None = None  # why the tasks could not be sent (a value that does not pickle)
        import subprocess  # here, not at the top: a run without workers (one check) never loads it

        back, given = os.pipe()  # frames back: not its stdout, which anything in it may write to
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _BOOT,
                    str(given),
                    *(entry for entry in sys.path if isinstance(entry, str)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(given,),
            )
        except BaseException:
            os.close(back)
            raise
        finally:
            os.close(given)  # the worker's alone: its end is the end of what it sends
        self.frames = os.fdopen(back, "rb")
        for target, name in ((self._write, "in"), (self._read, "out")):
            threading.Thread(target=target, args=(hello,) if name == "in" else (), daemon=True,
                             name=f"worker-{number}-{name}").start()  # fmt: skip
        self.drained = threading.Thread(target=self._drain, daemon=True, name=f"worker-{number}-err")
        self.drained.start()
        timer = threading.Timer(START_SECONDS, self._not_started)
        timer.daemon = True
        timer.start()

    def load(self) -> int:
        return len(self.out)

    def submit(self, task: Task) -> bool:
        with self.lock:
            if self.dead:
                return False
            self.out[task.position] = task
        self.tasks.put(task)
        return True

    def close(self) -> None:
        self.tasks.put(None)

    def reap(self, until: float) -> None:
        import subprocess

        try:
            self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _not_started(self) -> None:
        if not self.ready.is_set():
            self.proc.kill()  # its reader sees the end: its checks fail closed

    def _write(self, hello: Hello) -> None:
        """Tasks to the worker as they come, those waiting together in one frame; None: close its stdin."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            write_frame(stdin, hello)
            closing = False
            while not closing:
                batch = []
                task = self.tasks.get()
                while task is not None:
                    batch.append(task)
                    try:
                        task = self.tasks.get_nowait()
                    except queue.Empty:
                        break
                else:
                    closing = True  # None: the session ended
                if batch:
                    write_frame(stdin, [Job.of(task) for task in batch])
        except (OSError, ValueError):
            pass  # the worker is gone: its reader fails its checks
        except Exception as exc:  # a bug: what was handed could not be pickled; its checks fail now
            self.unsent = f"its tasks could not be sent ({type(exc).__name__})"
            self.proc.kill()
        with contextlib.suppress(OSError):
            stdin.close()

    def _read(self) -> None:
        import pickle

        why = "it exited"
        try:
            while True:
                value = read_frame(self.frames)
                if value is None:
                    break
                self.ready.set()
                for index, attempt, final in _items(value):
                    if final or attempt.cancelled:
                        with self.lock:
                            self.out.pop(index, None)
                    self.hand(index, attempt, final)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError, ImportError) as exc:
            why = f"what it sent could not be read ({exc})"
            self.proc.kill()
        with contextlib.suppress(OSError):
            self.frames.close()
        self._fail_left(self.unsent or why)

    def _fail_left(self, why: str) -> None:
        with self.lock:
            self.dead = True
            left = sorted(self.out)
            tasks = [self.out[index] for index in left]
            self.out.clear()
        if not left:
            return
        import subprocess

        try:
            code: int | None = self.proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        self.drained.join(STOP_SECONDS if code is not None else 0.0)  # its last words: a crash's traceback
        said = "" if code is None else f", killed by signal {-code}" if code < 0 else f", exit code {code}"
        if code is not None and -code in _STOPS:
            # Stopped from outside, not crashed: the signal that stops the run reached its process
            # group (`timeout`, a CI's cancel, Ctrl-C before the worker ignored it). Its checks were
            # cancelled, as the run's own threads' are: not a bug, no error group of their own.
            message = f"cancelled: worker process {self.number} was stopped ({why}{said})"
            cancelled = Attempt.cancelled_before_start(message)
            for index in left:
                self.hand(index, cancelled, True)
            return
        if not self.ready.is_set() and self.unsent is None and self.run_here is not None:
            # It never sent its ready frame, which it sends before it reads a task: none of these
            # started, so they run on the run's own threads instead of failing as internal errors.
            for task in tasks:
                self.run_here(task)
            return
        message = (
            f"internal error of the local executor: worker process {self.number} ended before this "
            f"check did ({why}{said}; a bug in testsession, not in the check or the build)"
        )
        # Its traceback: what the worker printed last (a crash's own), after what happened.
        trace = f"worker process {self.number} (pid {self.proc.pid}): {why}{said}\n{self.stderr}".rstrip()
        failed = dataclasses.replace(Attempt.not_run(FailureKind.INTERNAL_ERROR, message), traceback=trace)
        redact = Substitution(self.variables).redact
        failed = failed if redact.empty else mask(failed, redact)  # a secret never reaches a report
        for index in left:
            self.hand(index, failed, True)

    def _drain(self) -> None:
        """The worker's stderr, its end kept: what a crash printed."""
        stream = self.proc.stderr
        assert stream is not None
        while True:
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                return
            self.stderr = (self.stderr + chunk.decode("utf-8", "replace"))[-STDERR_KEPT:]


class Workers:
    """A session's worker processes: `takes` says whether a check goes to one, `submit` hands it over."""

    def __init__(
        self, workers: list[_Worker], hello: Hello, hand: Hand, run_here: RunHere | None = None
    ) -> None:
        self.hand = hand
        self.run_here = run_here
        self.share = hello.threads  # checks the run's own threads keep at once for this session
        self.workers = workers

    @classmethod
    def start(cls, count: int, hello: Hello, hand: Hand, run_here: RunHere | None = None) -> Workers | None:
        """`count` workers started; None when the system would not start one (no process left, no
        memory): the run's own threads run every check, as without workers. `run_here`: where the
        checks go that a worker took and never started (None: they fail closed)."""
        workers: list[_Worker] = []
        try:
            for number in range(count):
                workers.append(_Worker(number + 1, hello, hand, run_here))
        except OSError:
            started = cls(workers, hello, hand)
            started.close()
            return None
        return cls(workers, hello, hand, run_here)

    def out(self) -> int:
        return sum(worker.load() for worker in self.workers)

    def takes(self, handed: int) -> bool:
        """Whether the next check goes to a worker: the run's own threads keep `share` checks at once
        (`handed` checks are out in all), the workers take the rest, as fast as they end them."""
        if all(worker.dead for worker in self.workers):
            return False  # their unfinished checks failed closed; the rest run on the run's threads
        return handed - self.out() >= self.share

    def submit(self, task: Task) -> None:
        for worker in sorted(self.workers, key=_Worker.load):
            if worker.submit(task):
                return
        if self.run_here is not None:  # every worker ended since `takes` said yes: none started it
            self.run_here(task)
            return
        message = "internal error of the local executor: no worker process is left to run this check"
        self.hand(task.position, Attempt.not_run(FailureKind.INTERNAL_ERROR, message), True)

    def close(self) -> None:
        """Ends every worker: stdin closed, STOP_SECONDS to exit, then killed; none outlives this."""
        for worker in self.workers:
            worker.close()
        until = time.monotonic() + STOP_SECONDS
        for worker in self.workers:
            worker.reap(until)


# --- the worker's side -----------------------------------------------------------------------------


def main() -> None:
    """A worker process: `python -c _BOOT FD *sys.path` (FD: the pipe for frames back; the path: its
    parent's import path)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends us (our stdin closes)
    # The engine and the checks' definitions only: not the CLI, the spec, the reports, the client,
    # the checks file's loader (a Job carries data, not a FileCheck) nor yaml.
    from runner.checks.internal import internal_error
    from runner.checks.limits import Limits
    from runner.checks.run import run_check
    from runner.checks.scripts import runner_for
    from runner.core.threads import DaemonPool
    from runner.models.check_definitions import CheckDefinition, parse_check_definition

    stdin, frames = sys.stdin.buffer, os.fdopen(int(sys.argv[1]), "wb")
    sys.stdout = sys.stderr  # a print is kept with what a crash says (fd 1 is /dev/null)
    hello = read_frame(stdin)
    if not isinstance(hello, Hello):
        sys.exit(3)
    stop = threading.Event()
    ended = threading.Timer(hello.seconds, lambda: os._exit(5))  # the run's deadline passed
    ended.daemon = True
    ended.start()
    results: queue.SimpleQueue[Item] = queue.SimpleQueue()
    limits = Limits(body_cap_bytes=hello.body_bytes)
    variables = hello.variables

    def hand(index: int, attempt: Attempt, final: bool) -> None:
        # A pass goes back as the session keeps it (Attempt.as_kept_passed): half the bytes to pickle.
        results.put((index, attempt.as_kept_passed() if attempt.passed else attempt, final))

    def execute(task: Job) -> None:
        """As job/local.py's LocalSource.execute, on this process's threads."""
        if stop.is_set():
            return
        definition: CheckDefinition | None = None
        try:
            if task.data is None:  # never: the plan said REAL, and its definition parsed
                raise RuntimeError(f"check {task.id}: its definition no longer parses")
            definition = parse_check_definition(task.data, checked=task.checked)
            run_check(
                definition,
                max_run_seconds=task.max_run,
                variables=variables,
                retry=task.retry,
                on_attempt=lambda attempt, final: hand(task.position, attempt, final),
                stop=stop,
                limits=limits,
                scripts=runner_for(definition),
            )
        except Exception as exc:  # a bug in the engine: the check's error, as in the run's own threads
            hand(task.position, internal_error(exc, variables, definition), True)

    def send() -> None:
        """Attempts to the parent as they end; those waiting together in one frame."""
        try:
            while True:
                batch = [results.get()]
                while len(batch) < BATCH:
                    try:
                        batch.append(results.get_nowait())
                    except queue.Empty:
                        break
                write_items(frames, batch)
        except OSError:
            os._exit(6)  # the parent is gone
        except BaseException:
            # Anything else (an attempt that does not pickle, one over MAX_FRAME, a RecursionError):
            # nothing more can be sent, so the worker ends now, its error on stderr, and the parent
            # fails its checks closed at once, not at the run's deadline.
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            os._exit(7)

    try:
        # Ready, before any task is read: a parent that never saw this frame knows that none of the
        # checks it handed here started, and runs them itself.
        write_frame(frames, [])
    except OSError:
        os._exit(6)  # the parent is gone
    threading.Thread(target=send, daemon=True, name="send").start()
    pool = DaemonPool(hello.threads, "check")
    while True:
        tasks = read_frame(stdin)
        if tasks is None:
            break
        if not isinstance(tasks, list):
            sys.exit(3)
        for task in tasks:
            pool.submit(execute, task)
    stop.set()  # the parent closed our stdin, or died: what runs ends, nothing more is sent
    os._exit(0)
