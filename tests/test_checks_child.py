"""A protocol's child process (protocols/child.py): bounded by the attempt's deadline, ended within a
slice of the stop event, its whole process group gone after, its output capped. Real processes."""

from __future__ import annotations

import os
import threading
import time

from runner.checks.limits import Limits
from runner.checks.protocols.base import Bounds, Job
from runner.checks.protocols.child import run_child
from runner.checks.variables import Substitution, VariableSources


def job(seconds: float, stop: threading.Event | None = None, cap: int = 1024) -> Job:
    bounds = Bounds(seconds, f"{seconds} s", 1000, 2000, time.monotonic() + seconds)
    return Job(Substitution(VariableSources()), bounds, Limits(body_cap_bytes=cap), stop)


def gone(pid: int, within: float = 2.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_a_child_that_exits_gives_its_code_and_both_outputs() -> None:
    result = run_child(["sh", "-c", "echo out; echo err >&2; exit 3"], job(5))
    assert (result.returncode, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert not (result.cancelled or result.timed_out or result.stdout_truncated)


def test_the_stop_event_ends_the_child_and_what_it_started_within_a_slice() -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    # The grandchild (a background sleep) says its pid, then the child waits on it.
    result = run_child(["sh", "-c", "sleep 30 & echo $!; wait"], job(20, stop))
    took = time.monotonic() - started
    assert result.cancelled and result.returncode is None and not result.timed_out
    assert 0.3 <= took < 1.5, took
    assert gone(int(result.stdout.split()[0])), "the background sleep outlived the stop"


def test_the_deadline_ends_a_child_that_never_exits() -> None:
    started = time.monotonic()
    result = run_child(["sh", "-c", "echo started; exec sleep 30"], job(0.4))
    assert result.timed_out and result.returncode is None and result.stdout == b"started\n"
    assert time.monotonic() - started < 2.0


def test_output_is_capped_and_the_rest_read_so_the_child_finishes() -> None:
    # 200 KB is more than a pipe holds: a child whose rest were not read would block until the deadline.
    result = run_child(["sh", "-c", "head -c 200000 /dev/zero; echo done >&2"], job(10), output_cap=1000)
    assert result.returncode == 0 and not result.timed_out
    assert len(result.stdout) == 1000 and result.stdout_truncated
    assert result.stderr == b"done\n"
