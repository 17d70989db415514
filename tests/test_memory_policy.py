"""The run's memory policy (runner/core/memory.py) on the Pythons users have."""

from __future__ import annotations

import gc
import sys

import pytest

from runner.core import memory


def test_a_run_leaves_the_c_allocator_as_the_process_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The allocator's thresholds are process-wide: a run does not reach them (no ctypes), and the
    collector is restored after it."""
    monkeypatch.setitem(sys.modules, "ctypes", None)  # `import ctypes` would raise ImportError
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)  # a process's own settings, whatever an earlier test left
    try:
        with memory.for_a_run():
            assert gc.get_threshold() == (memory.YOUNG, memory.MIDDLE, memory.OLD)
        assert gc.get_threshold() == (700, 10, 10) and gc.isenabled() is enabled
    finally:
        gc.set_threshold(*before)
    assert not hasattr(memory, "_fix_large_blocks")


def test_two_runs_at_once_leave_the_collector_as_the_process_had_it() -> None:
    """A process that calls main() twice at once: the run that ends first does not put back what the
    other found (the run's pace and a paused collector), nor the first what it found."""
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    try:
        first, second = memory.for_a_run(), memory.for_a_run()
        first.__enter__()
        with memory.start_up():  # the first run's start-up, the collector paused
            second.__enter__()  # the second begins meanwhile
        first.__exit__(None, None, None)
        assert gc.get_threshold() == (memory.YOUNG, memory.MIDDLE, memory.OLD)  # the second still runs
        second.__exit__(None, None, None)
        assert gc.get_threshold() == (700, 10, 10) and gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)
