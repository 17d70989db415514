"""The one child-process runner (runner/checks/child.py) with real processes: bounded by the deadline,
ended within a slice of the stop event, its whole group gone after, its output capped and drained.
Node-specific claims (the clean environment, a detached grandchild found by the token) are in
tests/test_node_runner.py."""

from __future__ import annotations

import os
import threading
import time

import pytest

from runner.checks.child import run_child


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` is gone within `within` s (returns once it is: the bound is for a loaded machine)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_a_child_that_exits_gives_its_code_and_both_outputs() -> None:
    result = run_child(["sh", "-c", "echo out; echo err >&2; exit 3"], deadline=time.monotonic() + 5)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not (result.cancelled or result.timed_out or result.stdout_truncated)


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_the_stop_event_ends_the_child_and_what_it_started_within_a_slice() -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    # The grandchild (a background sleep) says its pid, then the child waits on it.
    result = run_child(["sh", "-c", "sleep 30 & echo $!; wait"], deadline=time.monotonic() + 20, stop=stop)
    took = time.monotonic() - started
    assert result.cancelled and result.returncode is None and not result.timed_out
    assert 0.3 <= took < 1.5, took  # the stop, a slice after it: not the 20 s deadline nor the 30 s sleep
    assert gone(int(result.stdout.split()[0])), "the background sleep outlived the stop"


def test_the_deadline_ends_a_child_that_never_exits() -> None:
    started = time.monotonic()
    result = run_child(["sh", "-c", "echo started; exec sleep 30"], deadline=time.monotonic() + 0.4)
    assert result.timed_out and result.returncode is None and result.stdout == "started\n"
    assert 0.4 <= time.monotonic() - started < 10  # the 0.4 s deadline, not the 30 s sleep


def test_a_grandchild_holding_the_output_open_neither_holds_the_call_nor_outlives_it() -> None:
    # sh exits at once; its background sleep inherited stdout and would keep the pipe open for 30 s.
    started = time.monotonic()
    result = run_child(["sh", "-c", "sleep 30 & echo $!; exit 4"], deadline=time.monotonic() + 20)
    assert result.returncode == 4 and not result.timed_out
    assert time.monotonic() - started < 10  # not the 20 s deadline nor the 30 s the sleep holds the pipe
    assert gone(int(result.stdout.split()[0]))


def test_output_is_capped_to_its_end_and_the_rest_read_so_the_child_finishes() -> None:
    # 200 KB is more than a pipe holds: a child whose rest were not read would block until the deadline.
    result = run_child(["sh", "-c", "head -c 200000 /dev/zero; echo; echo last line; echo done >&2"],
                       deadline=time.monotonic() + 10, output_cap=1000)  # fmt: skip
    assert result.returncode == 0 and not result.timed_out
    assert len(result.stdout) == 1000 and result.stdout_truncated and result.stdout.endswith("last line\n")
    assert result.stderr == "done\n" and not result.stderr_truncated
