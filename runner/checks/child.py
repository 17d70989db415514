"""The one way a check starts a child process (Node running a Playwright script or an API check's
setup script, npm installing Playwright, a Playwright project's test command): bounded, and ended
with everything it started.

    result = run_child(argv, deadline=job.bounds.deadline, stop=job.stop, cwd=folder, env=env)
    result.returncode, result.stdout, result.stderr, result.timed_out, result.cancelled

Rules (docs/checks.md, "Node children"):
- The child runs in its own process group and session (start_new_session) and carries a token
  (TESTSESSION_CHILD_TOKEN) in its environment that everything it starts inherits: a browser that
  Playwright starts detached (its own session) still carries it.
- It ends when it exits, when `deadline` (time.monotonic()) passes, or within POLL_SECONDS of `stop`
  being set. Then its group and every process still carrying the token (found in /proc) get SIGTERM,
  and SIGKILL after `grace` seconds: nothing it started outlives the call, whichever way it ends (an
  exception or KeyboardInterrupt in the caller included). A grandchild that keeps the output pipes open
  after the child exited does not hold the call up.
- A child still running when the process exits (a SIGTERM's run ends before a check's thread has
  ended its child; the process exits while a daemon thread still waits on it) is killed at exit with
  everything carrying its token.
- stdout and stderr are read through pipes as they come, so the child never blocks on a full pipe;
  the last `output_cap` bytes of each are kept (an error's last lines are what says why), the rest is
  dropped and the result says it was cut.
- Not a shell: argv is run as it is.
- Whatever way the run itself ends (SIGKILL included), the run's watchdog (core/supervise.py) ends the
  child's group and every process carrying the run's token. The child's TMPDIR (TMP, TEMP) is a
  folder of the run, removed with it: Chromium's profile and Playwright's scratch go there.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.core import supervise

TOKEN_VARIABLE = "TESTSESSION_CHILD_TOKEN"
DEFAULT_GRACE_SECONDS = 2.0
DEFAULT_OUTPUT_CAP = 1 << 20
POLL_SECONDS = 0.05  # how often the stop event and the deadline are looked at
DRAIN_SECONDS = 0.2  # after the child exited: how long output still arriving is read
CHUNK = 65536

# The children running now, by pid: at exit, what a check's thread has not ended yet is killed. A
# SIGTERM's run writes its reports and returns while a thread still ends its child (SIGTERM, then
# SIGKILL after the grace); the interpreter's exit does not wait for a daemon thread, so the thread
# never gets to its SIGKILL (seen: Node and Chromium left after a SIGTERM).
_LIVE: dict[int, tuple[subprocess.Popen[bytes], str]] = {}
_LIVE_LOCK = threading.Lock()


# The scratch folders of children (a browser check's generated project, a suite's work folder): a
# check's thread removes its own in a `finally` it may never reach at exit, as above.
_SCRATCH: set[Path] = set()


@atexit.register
def _end_live() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE.values())
        _LIVE.clear()
    for _ in range(5):  # again while any remain: a browser may start a process while it is killed
        live = [(proc, token) for proc, token in live if proc.poll() is None or _holders(token)]
        for proc, token in live:
            _signal_all(proc.pid, token, signal.SIGKILL)
        if not live:
            break
        time.sleep(POLL_SECONDS)
    with _LIVE_LOCK:
        left = list(_SCRATCH)
        _SCRATCH.clear()
    for path in left:  # after the children: nothing writes there any more
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new temporary folder for a child's files, removed when the block ends, or at the latest
    when the process exits (a SIGTERM'd run does not wait for the check's thread)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=supervise.run_folder()))
    with _LIVE_LOCK:
        _SCRATCH.add(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _LIVE_LOCK:
            _SCRATCH.discard(path)


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None when it was ended by us (deadline or stop)
    stdout: str  # the last output_cap bytes, decoded leniently
    stderr: str
    timed_out: bool  # ended at the deadline
    cancelled: bool  # ended by `stop`
    duration_s: float
    stdout_truncated: bool = False  # more than output_cap bytes came; the start was dropped
    stderr_truncated: bool = False


def run_child(
    argv: Sequence[str],
    *,
    deadline: float,
    stop: threading.Event | None = None,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> ChildResult:
    """Runs `argv` until it exits, `deadline` passes or `stop` is set; nothing of it is left after.

    `env` None: ours (callers that run a user's code pass node.child_environment()). Raises OSError
    only when the program cannot be started at all."""
    token = uuid.uuid4().hex
    start = time.monotonic()
    # Its TMPDIR is a folder of the run (Chromium's profile, Playwright's artifacts): removed below, at
    # exit, or by the watchdog (core/supervise.py) when the run was killed.
    temp = Path(tempfile.mkdtemp(prefix="t", dir=supervise.run_folder()))  # short: Chromium's socket
    child_env = supervise.child_env(
        {**(os.environ if env is None else env), TOKEN_VARIABLE: token}, temp=temp
    )
    try:
        proc = subprocess.Popen(  # argv: the caller's own command, never a shell
            list(argv), cwd=cwd, env=child_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    supervise.watch_group(proc.pid)
    with _LIVE_LOCK:
        _LIVE[proc.pid] = (proc, token)
        _SCRATCH.add(temp)
    out, err = _Tail(output_cap), _Tail(output_cap)
    timed_out = cancelled = False
    try:
        with selectors.DefaultSelector() as sel:
            assert proc.stdout is not None and proc.stderr is not None
            sel.register(proc.stdout, selectors.EVENT_READ, out)
            sel.register(proc.stderr, selectors.EVENT_READ, err)
            exited_at: float | None = None
            while True:
                if stop is not None and stop.is_set():
                    cancelled = True
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if exited_at is None and proc.poll() is not None:
                    exited_at = time.monotonic()
                drained = exited_at is not None and time.monotonic() - exited_at > DRAIN_SECONDS
                if not sel.get_map() or drained:
                    if exited_at is None:  # both pipes closed: the exit follows
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(timeout=min(POLL_SECONDS, left))
                        continue
                    break
                for key, _ in sel.select(min(POLL_SECONDS, left)):
                    chunk = os.read(key.fd, CHUNK)
                    if chunk:
                        key.data.add(chunk)
                    else:
                        sel.unregister(key.fileobj)
    finally:
        # Every exit ends the group and what carries the token; a child that exited by itself leaves
        # at most stragglers, given a short grace.
        end_all(proc, token, grace=grace if (timed_out or cancelled or proc.poll() is None) else 0.2)
        if proc.poll() is not None:  # reaped: its id may be another's from now on
            supervise.unwatch_group(proc.pid)
        shutil.rmtree(temp, ignore_errors=True)
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
            _SCRATCH.discard(temp)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    return ChildResult(
        returncode=None if (timed_out or cancelled) else proc.returncode,
        stdout=out.text(), stderr=err.text(), timed_out=timed_out, cancelled=cancelled,
        duration_s=time.monotonic() - start, stdout_truncated=out.cut, stderr_truncated=err.cut,
    )  # fmt: skip


class _Tail:
    """The last `cap` bytes of a stream."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.cut = cap, bytearray(), False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.cap:
            del self.data[: len(self.data) - self.cap]
            self.cut = True

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


def end_all(proc: subprocess.Popen[bytes], token: str, *, grace: float) -> None:
    """SIGTERM to the child's group and to every process carrying `token`, SIGKILL after `grace`."""
    _signal_all(proc.pid, token, signal.SIGTERM)
    until = time.monotonic() + grace
    while time.monotonic() < until:
        if proc.poll() is not None and not _holders(token):
            break
        time.sleep(POLL_SECONDS)
    _signal_all(proc.pid, token, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _signal_all(pgid: int, token: str, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in _holders(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _holders(token: str) -> list[int]:
    """The processes whose environment carries `token` (ours and what they started), zombies left out."""
    return supervise.holders(f"{TOKEN_VARIABLE}={token}")
