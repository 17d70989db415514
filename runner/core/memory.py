"""How a run uses memory, decided here once: the cyclic collector's pace, the start-up frozen out of
its generations, and glibc's thresholds for large blocks.

- The collector's young generation is collected every 700 allocations by default: a run of 10,000
  checks allocates millions of short-lived objects (models, parsed answers) that hold no cycles, and
  the collections took a quarter of its CPU (18.2 -> 13.8 s at 50,000). The middle generation at 100
  young collections, not 20: each of its collections walked ~1M live objects (0.3 s) and found 3
  objects of garbage; a cycle waits at most 5M allocations.
- The start-up (the client, and for a local run the emulator's modules, the world and its backend)
  makes ~50,000 objects that live to the end of the run: the collector is paused while they are
  made, then they are frozen, out of its generations, so that no collection walks them (one pass
  over them was ~40 ms of a one-check run at load 4).
- glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB): after the
  first 5 MiB session answer of a 10,000-check run, every later answer, parse and serialization
  buffer came from the heap, whose freed pages the process kept (~5 MiB of its peak). Fixed at
  glibc's own start value (128 KiB), a large block is mapped and given back when freed.

For the run only: the long-lived `testsession emulator` (and a process that calls main()) keep the
collector's settings; the allocator's are process-wide and kept (they are glibc's defaults, fixed).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG, MIDDLE, OLD = 50_000, 100, 100
LARGE_BLOCK = 128 * 1024  # glibc's M_MMAP_THRESHOLD before it adapts, and M_TRIM_THRESHOLD's
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)


# Runs in this process (a process that calls main() may run two at once): the first to begin keeps
# what it found, and the last to end puts it back. Each run on its own would put back what it found,
# and a run that began inside another found that one's settings.
_runs_lock = threading.Lock()
_runs = 0
_found: tuple[tuple[int, int, int], bool] = ((700, 10, 10), True)


@contextmanager
def for_a_run() -> Iterator[None]:
    """The run's collector pace and allocator thresholds; the collector's state is restored after."""
    global _runs, _found
    _fix_large_blocks()
    with _runs_lock:
        if _runs == 0:
            _found = (gc.get_threshold(), gc.isenabled())
            gc.set_threshold(YOUNG, MIDDLE, OLD)
        _runs += 1
    try:
        yield
    finally:
        with _runs_lock:
            _runs -= 1
            if _runs == 0:
                threshold, enabled = _found
                gc.unfreeze()  # what start_up froze goes back to the collector
                gc.set_threshold(*threshold)
                if enabled:
                    gc.enable()
                else:
                    gc.disable()


@contextmanager
def start_up() -> Iterator[None]:
    """What is made inside lives for the whole run: made with the collector paused, then frozen."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


_fixed = False


def _fix_large_blocks() -> None:
    global _fixed
    if _fixed or not sys.platform.startswith("linux"):
        return
    _fixed = True
    try:
        import ctypes  # a Python built without libffi has none: the thresholds are left as they are

        mallopt = ctypes.CDLL(None).mallopt  # the process's C library; musl has none: left as it is
    except (ImportError, OSError, AttributeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK)
    mallopt(_M_TRIM_THRESHOLD, LARGE_BLOCK)
