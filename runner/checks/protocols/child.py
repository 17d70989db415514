"""A protocol's child process (Node running a Playwright script, ping), bounded like any request.

`run_child` starts the command in its own process group (start_new_session), reads its stdout and
stderr up to `output_cap` bytes each (the rest is read and dropped, so the child never blocks on a
full pipe), and ends when the child exits, at the deadline, or within SLICE seconds of the stop
event: then the whole group is killed (SIGKILL: a browser's helpers go with it) and reaped. Nothing
it starts outlives the attempt. What the output means is the protocol's to say.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.checks.protocols.base import Job

SLICE = 0.05  # how often a running child's stop event is looked at
REAP_SECONDS = 2.0  # a killed group's leader is waited for at most this long


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None: killed (deadline or stop)
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    elapsed_ms: float
    cancelled: bool = False  # the stop event ended it
    timed_out: bool = False  # the deadline ended it


def run_child(
    argv: Sequence[str],
    job: Job,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    output_cap: int | None = None,
) -> ChildResult:
    """Runs `argv` within job.bounds.deadline, stopped by job.stop; OSError when it cannot start."""
    cap = output_cap if output_cap is not None else job.limits.body_cap_bytes
    start = time.monotonic()
    proc = subprocess.Popen(  # argv: the protocol's own command, never a shell
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    cut = {"out": False, "err": False}
    cancelled = timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.write(stdin)
            with contextlib.suppress(OSError):
                proc.stdin.close()
        with selectors.DefaultSelector() as sel:
            assert proc.stdout is not None and proc.stderr is not None
            sel.register(proc.stdout, selectors.EVENT_READ, ("out", out))
            sel.register(proc.stderr, selectors.EVENT_READ, ("err", err))
            while sel.get_map():
                if job.stopped:
                    cancelled = True
                    break
                left = job.bounds.deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(min(SLICE, left)):
                    name, buffer = key.data
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    room = cap - len(buffer)
                    if len(chunk) > room:
                        cut[name] = True
                    buffer += chunk[: max(room, 0)]
        if not (cancelled or timed_out):
            while proc.poll() is None:  # output closed; the exit follows (or the bounds end it)
                if job.stopped:
                    cancelled = True
                    break
                if time.monotonic() >= job.bounds.deadline:
                    timed_out = True
                    break
                time.sleep(min(SLICE, max(0.0, job.bounds.deadline - time.monotonic())))
    finally:
        _end(proc)
    return ChildResult(
        returncode=None if cancelled or timed_out else proc.returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        stdout_truncated=cut["out"],
        stderr_truncated=cut["err"],
        elapsed_ms=round((time.monotonic() - start) * 1000, 3),
        cancelled=cancelled,
        timed_out=timed_out,
    )


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kills the child's process group (whatever it started too) and reaps the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=REAP_SECONDS)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
