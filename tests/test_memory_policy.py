"""The run's memory policy (runner/core/memory.py) on the Pythons users have."""

from __future__ import annotations

import gc
import sys

import pytest

from runner.core import memory


def test_a_python_without_ctypes_runs_with_the_allocator_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyenv without libffi, Debian's python3-minimal: no ctypes. The run goes on (it is not an
    internal error with no verdict and no reports), and the collector is restored after it."""
    monkeypatch.setitem(sys.modules, "ctypes", None)  # `import ctypes` raises ImportError
    monkeypatch.setattr(memory, "_fixed", False)
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)  # a process's own settings, whatever an earlier test left
    try:
        with memory.for_a_run():
            assert gc.get_threshold() == (memory.YOUNG, memory.MIDDLE, memory.OLD)
        assert gc.get_threshold() == (700, 10, 10) and gc.isenabled() is enabled
    finally:
        gc.set_threshold(*before)
