"""Where a run of browser checks writes its test files: the same folder from run to run, so that
Playwright finds them compiled.

Playwright compiles every file it loads (each spec, the config, our reporter) with Babel and keeps the
output in a cache keyed by the file's path and content (PWTEST_CACHE_DIR, else the temp folder: for
our child the run's own, removed with it). A new folder per run made every run a cold start: Babel
loaded and each file compiled again in Playwright's main process before any worker starts (20 checks:
~0.5 s of CPU, a quarter of Playwright's start; `npx playwright test` in a project finds them compiled
from its second run). So a run writes its files to `<cache>/browser-runs/<n>/` (the user cache of
setup.py), n the first of SLOTS folders no other run holds (an flock on `<n>.lock`, which the kernel
releases when a process dies), and points PWTEST_CACHE_DIR at `<cache>/playwright-compile/`: the same
checks land at the same paths with the same content. The folder is emptied before a run writes it and
after the run (at exit too); the compile cache keeps one entry per path (Playwright drops a path's older
entries when its content changes), so it is bounded by the slots. Where the cache cannot be written or
every slot is held: a new folder of the run (`fallback`), compiled cold as before.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from runner.checks.protocols.browser.setup import cache_root

SLOTS = 8
CACHE_VARIABLE = "PWTEST_CACHE_DIR"  # Playwright's compile cache folder (its own tests and nx set it too)

_HELD: set[Path] = set()
_HELD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Place:
    folder: Path  # where the run's files go (empty)
    compile_cache: Path | None  # for CACHE_VARIABLE; None: Playwright's default (the run's temp folder)


@contextlib.contextmanager
def run_place(fallback: Path) -> Iterator[Place]:
    """A folder for one run's files: a free slot of the user cache, else `fallback` (made here)."""
    held = _hold_slot(cache_root() / "browser-runs")
    if held is not None:
        try:
            _empty(held[1])
            held[1].mkdir(mode=0o700)
        except OSError:
            held[0].close()
            held = None
    if held is None:
        fallback.mkdir()
        yield Place(fallback, None)
        return
    lock, folder = held
    with _HELD_LOCK:
        _HELD.add(folder)
    try:
        yield Place(folder, cache_root() / "playwright-compile")
    finally:
        with contextlib.suppress(OSError):
            _empty(folder)
        with _HELD_LOCK:
            _HELD.discard(folder)
        lock.close()  # releases the flock


def _hold_slot(base: Path) -> tuple[TextIO, Path] | None:
    """(the open lock file, the slot's folder) of the first slot no other run holds; None if none."""
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    for n in range(SLOTS):
        try:
            lock = open(base / f"{n}.lock", "a")  # noqa: SIM115 (held for the run: closed by run_place)
        except OSError:
            return None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by another run (BlockingIOError), or a file system without locks
            lock.close()
            continue
        return lock, base / str(n)
    return None


def _empty(folder: Path) -> None:
    """`folder` gone, whatever it is: a link is removed, never followed."""
    with contextlib.suppress(FileNotFoundError):
        if folder.is_symlink() or not folder.is_dir():
            os.unlink(folder)
        else:
            shutil.rmtree(folder)


@atexit.register
def _empty_held() -> None:
    """A run ended by a signal exits before the thread that wrote its files removes them."""
    with _HELD_LOCK:
        held = list(_HELD)
    for folder in held:
        with contextlib.suppress(OSError):
            _empty(folder)
