"""The run's watchdog, started by core/supervise.py: `python -I -S watchdog.py TOKEN FOLDER GRACE BOUND`.

It reads its standard input, a pipe whose only write end is the run's: "+<pgid>" and "-<pgid>" lines
add and remove a process group of the run, "d<path>" and "k<path>" a folder of the run to remove
with it (a `.run-*` folder beside the reports) and one not to. End of input means the run has
ended, whichever way (SIGKILL included): then every process of those groups and every process
whose environment carries the run's token gets SIGTERM, SIGKILL from GRACE seconds on, until none
is left two looks in a row (at most BOUND seconds), and FOLDER, the run's temporary folder, is
removed with the others.

Standard library only, nothing of the package: it must start fast and run on after the run is gone.
In a session of its own, it ignores SIGINT and SIGHUP (a terminal's Ctrl-C or hang-up is the run's to
handle); SIGTERM makes it sweep at once and leave.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from types import FrameType

TOKEN_VARIABLE = "TESTSESSION_RUN_TOKEN"  # core/supervise.py RUN_TOKEN_VARIABLE
LOOK_SECONDS = 0.05


def ours(token: bytes, groups: set[int], me: int) -> list[int]:
    """The live processes (zombies left out) of `groups` or carrying `token`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[-1].split()
            if fields[0] == b"Z":
                continue
            if int(fields[2]) not in groups:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if token not in f.read():
                        continue
        except (OSError, ValueError, IndexError):
            continue
        found.append(int(name))
    return found


def sweep(token: bytes, groups: set[int], grace: float, bound: float) -> None:
    start = time.monotonic()
    sig, quiet, me = signal.SIGTERM, 0, os.getpid()
    while quiet < 2 and time.monotonic() - start < bound:
        if sig == signal.SIGTERM and time.monotonic() - start >= grace:
            sig = signal.SIGKILL
        pids = ours(token, groups, me)
        quiet = 0 if pids else quiet + 1
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        time.sleep(LOOK_SECONDS)


def _leave(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> None:
    token = f"{TOKEN_VARIABLE}={argv[0]}".encode()
    folder, grace, bound = argv[1], float(argv[2]), float(argv[3])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _leave)
    groups: set[int] = set()
    folders: set[bytes] = set()
    try:
        for line in sys.stdin.buffer:
            kind, rest = line[:1], line[1:].rstrip(b"\n")
            if kind in (b"d", b"k"):
                (folders.add if kind == b"d" else folders.discard)(rest)
                continue
            try:
                pgid = int(rest)
            except ValueError:
                continue
            (groups.add if kind == b"+" else groups.discard)(pgid)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sweep(token, groups, grace, bound)
        for path in (folder.encode(), *folders):
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
