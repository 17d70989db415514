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


def test_the_collector_is_paused_from_the_runs_first_step_to_the_end_of_its_start_up() -> None:
    """The spec, the checks file and the modules a run loads live as long as the run: no collection
    walks them while they are made; after the start-up the collector runs at the run's pace."""
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    try:
        with memory.for_a_run():
            assert not gc.isenabled()  # reading the spec and the checks file
            with memory.start_up():
                assert not gc.isenabled()
            assert gc.isenabled() and gc.get_freeze_count() > 0
        assert gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)
        gc.enable() if enabled else gc.disable()


def test_a_run_that_ends_before_its_start_up_gives_the_collector_back() -> None:
    """A bad spec ends the run before its start-up: the collector is enabled again all the same."""
    before = gc.get_threshold()
    gc.enable()
    try:
        with pytest.raises(ValueError), memory.for_a_run():
            raise ValueError("a bad spec")
        assert gc.isenabled() and gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


def test_before_exit_freezes_what_the_command_made() -> None:
    """The command's exit collections do not walk what it made: it is frozen (nothing is freed)."""
    try:
        memory.before_exit()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
