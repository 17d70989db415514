"""How a run uses memory, decided here once: the cyclic collector's pace and the start-up frozen out of
its generations.

- The collector's young generation is collected every 700 allocations by default: a run of 10,000
  checks allocates millions of short-lived objects (models, parsed answers) that hold no cycles, and
  the collections took a quarter of its CPU (18.2 -> 13.8 s at 50,000). The middle generation at 100
  young collections, not 20: each of its collections walked ~1M live objects (0.3 s) and found 3
  objects of garbage; a cycle waits at most 5M allocations.
- The start-up (the spec, the checks file, the modules and model classes the run needs, the client
  or the engine; a world and its backend) makes ~50,000 objects that live to the end of the run:
  the collector is paused from the run's first step until they are made, then they are frozen, out
  of its generations, so that no collection walks them (one pass over them was ~40 ms of a
  one-check run at load 4; the young collections while the spec and the checks file were read,
  ~10 ms more).
- The command's exit (`before_exit`): what the command made is frozen again, so that the
  interpreter's exit collections do not walk it (~60,000 objects after a one-check run, ~20% of its
  CPU time). Nothing is skipped: atexit handlers run, the streams are flushed, and every object is
  released by reference counting as the modules are torn down.

For the run only: the long-lived `testsession emulator` (and a process that calls main()) keep the
collector's settings. The C allocator is left as the process has it (its thresholds are process-wide:
not this module's to change).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG, MIDDLE, OLD = 50_000, 100, 100


# Runs in this process (a process that calls main() may run two at once): the first to begin keeps
# what it found, and the last to end puts it back. Each run on its own would put back what it found,
# and a run that began inside another found that one's settings.
_runs_lock = threading.Lock()
_runs = 0
_found: tuple[tuple[int, int, int], bool] = ((700, 10, 10), True)


@contextmanager
def for_a_run() -> Iterator[None]:
    """The run's collector pace; the collector's state is restored after."""
    global _runs, _found
    with _runs_lock:
        if _runs == 0:
            _found = (gc.get_threshold(), gc.isenabled())
            gc.set_threshold(YOUNG, MIDDLE, OLD)
            gc.disable()  # the start-up: enabled again when it ends (start_up), else after the run
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
    """What is made inside (and before it in the run) lives for the whole run: made with the
    collector paused, then frozen."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def before_exit() -> None:
    """The command's last step (cli/main.py `entry`), never a step of a process that lives on."""
    gc.freeze()
