"""Nothing a run started outlives it, however the run ends: SIGKILL of `testsession` included.

    env = supervise.child_env(env)          # the run's token (and TMPDIR) in a child's environment
    supervise.watch_group(pid) / unwatch_group(pid)   # a process group of ours, while it runs
    supervise.run_folder()                  # the run's own temporary folder (a browser's TMPDIR)

Why a watchdog: a run that is SIGKILLed (a CI job's timeout, the OOM killer) runs no handler, and
its children (Node, Playwright's worker, Chromium, the build) live on: Node and Chromium until their
own timeout (~95 s), a build holding its port until the machine stops. A parent-death signal
(PR_SET_PDEATHSIG) reaches only the direct child: tried on Node, Playwright's worker and Chromium
survived it. So the first child a run starts comes with a small watchdog: a second Python process, in
a session of its own (a Ctrl-C of the terminal's group does not reach it), that holds the read end of
a pipe whose only write end is this process's. The pipe closes when this process ends, whichever way;
then the watchdog ends (SIGTERM, SIGKILL after WATCHDOG_GRACE) every process of the groups it was
told about and every process whose environment carries the run's token (RUN_TOKEN_VARIABLE: a
process that calls setsid leaves the group but keeps its environment), and removes the run's folder.

The run's folder (`<tmp>/tsr-<pid>.<start>`, base 36): the scratch of children (a browser
check's project, Node's and Chromium's TMPDIR: Chromium's profile, Playwright's artifacts) is made in
it, so that one removal takes all of it: at exit (atexit), by the watchdog after a SIGKILL, and, when
even the watchdog was killed, by the next run (`remove_stale`): a folder whose owner (pid and start
time, in its name) no longer runs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import IO, TYPE_CHECKING

from runner.core.watchdog import TOKEN_VARIABLE as RUN_TOKEN_VARIABLE

if TYPE_CHECKING:
    import subprocess  # imported where the watchdog starts: a run that starts no child needs none

# Short: Chromium puts its socket under TMPDIR, and a socket's path has at most 107 bytes (a child's
# TMPDIR of `$TMPDIR/testsession-run-<pid>.<start>-<random>/tmp-<random>` made Chromium's launch fail).
FOLDER_PREFIX = "tsr-"
WATCHDOG_GRACE = 1.0  # seconds from SIGTERM to SIGKILL once the run is gone: it can no longer wait
MAX_WATCHDOG_STARTS = 3  # a watchdog that ended (killed) is started again, this often at most
WATCHDOG_BOUND = 10.0  # the watchdog's sweep gives up after this long (a process we may not signal)
_FOLDER_NAME = re.compile(re.escape(FOLDER_PREFIX) + r"([0-9a-z]+)\.([0-9a-z]+)(?:-[0-9a-z_]+)?")
FRAGMENT_PREFIX = ".run-"  # a folder of a run under the reports (Playwright's output of a shared run)
_FRAGMENT_NAME = re.compile(re.escape(FRAGMENT_PREFIX) + r"(?:([0-9a-z]+)\.([0-9a-z]+)-)?[0-9a-f]+")

WATCHDOG = Path(__file__).with_name("watchdog.py")  # its program: standard library only


class _Run:
    """This process's token, folder and watchdog (made on first use; again after a fork)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.token = uuid.uuid4().hex
        self.folder: Path | None = None
        self.pipe: IO[bytes] | None = None
        self.watchdog: subprocess.Popen[bytes] | None = None
        self.starts = 0  # of the watchdog: one that cannot run is not started again and again
        self.groups: set[int] = set()  # watch_group()


_LOCK = threading.Lock()
_RUN: _Run | None = None
_OWNED: set[Path] = set()  # remove_with_run()


def _run() -> _Run:
    global _RUN
    if _RUN is None or _RUN.pid != os.getpid():
        _RUN = _Run()
    return _RUN


def owner_tag(pid: int | None = None) -> str:
    """`<pid>.<start>` in base 36: a process, told apart from a later one that gets its pid (the start
    time in clock ticks since boot, from /proc; 0 where there is none)."""
    pid = os.getpid() if pid is None else pid
    return f"{_b36(pid)}.{_b36(_start_time(pid) or 0)}"


def _b36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if n == 0:
            return out


def owner_alive(pid: int, start: int) -> bool:
    """Whether the process of an owner_tag still runs (a zombie does not)."""
    if os.path.isdir("/proc"):
        now = _start_time(pid)
        return now is not None and (start == 0 or now == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    try:
        return int(fields[19])  # field 22 of stat; fields[0] is the 3rd
    except (IndexError, ValueError):
        return None


def token() -> str:
    """The run's token: every child of the run carries it (child_env)."""
    with _LOCK:
        return _run().token


def child_env(env: dict[str, str], *, temp: Path | None = None) -> dict[str, str]:
    """`env` with the run's token, and with `temp` (a folder of the run) as TMPDIR, TMP and TEMP: Node
    and Chromium put their scratch (profiles, artifacts) where the run removes it. Starts the
    watchdog: whoever asks for a child's environment is about to start one."""
    with _LOCK:
        run = _run()
        _ensure(run)
        out = {**env, RUN_TOKEN_VARIABLE: run.token}
    if temp is not None:
        out.update(TMPDIR=str(temp), TMP=str(temp), TEMP=str(temp))
    return out


def run_folder() -> Path:
    """The run's own temporary folder, made on first use (with the watchdog that removes it)."""
    with _LOCK:
        return _ensure(_run())


def watch_group(pgid: int) -> None:
    """A process group of ours (a child started with start_new_session): the watchdog ends it."""
    _tell(b"+%d\n" % pgid)


def unwatch_group(pgid: int) -> None:
    """The group was ended and its leader reaped: its id may be reused by a process not ours."""
    _tell(b"-%d\n" % pgid)


def remove_with_run(path: Path) -> None:
    """A folder of the run outside its run folder (beside the reports): removed at exit, or by the
    watchdog when the run was killed, unless kept() first."""
    with _LOCK:
        _OWNED.add(path)
    if "\n" not in str(path):
        _tell(b"d" + os.fsencode(path) + b"\n")


def kept(path: Path) -> None:
    """The folder was removed (or is kept) by the run itself."""
    with _LOCK:
        _OWNED.discard(path)
    if "\n" not in str(path):
        _tell(b"k" + os.fsencode(path) + b"\n")


def _tell(line: bytes) -> None:
    with _LOCK:
        run = _run()
        if line[:1] in (b"+", b"-"):
            (run.groups.add if line[:1] == b"+" else run.groups.discard)(int(line[1:]))
        _ensure(run)
        _write(run, line)


def _write(run: _Run, line: bytes) -> None:
    if run.pipe is not None:
        with contextlib.suppress(OSError, ValueError):
            run.pipe.write(line)
            run.pipe.flush()


def _ensure(run: _Run) -> Path:
    """The folder and the watchdog, made when missing (called with _LOCK held). The watchdog runs on
    POSIX with /proc only (its sweep reads it); elsewhere the atexit handlers are all there is."""
    if run.folder is None:
        run.folder = _new_folder(Path(tempfile.gettempdir()) / f"{FOLDER_PREFIX}{owner_tag()}")
    elif not _ours(run.folder):  # removed meanwhile (or replaced): made again, the watchdog told
        run.folder = _new_folder(run.folder)
        _write(run, b"d" + os.fsencode(run.folder) + b"\n")
    missing = run.watchdog is None or run.watchdog.poll() is not None
    # A frozen executable has no interpreter to run watchdog.py with.
    runnable = os.name == "posix" and os.path.isdir("/proc") and not getattr(sys, "frozen", False)
    if missing and runnable and run.starts < MAX_WATCHDOG_STARTS:
        run.starts += 1
        import subprocess

        try:
            run.watchdog = subprocess.Popen(  # our own program, fixed text
                [sys.executable, "-I", "-S", str(WATCHDOG), run.token, str(run.folder),
                 str(WATCHDOG_GRACE), str(WATCHDOG_BOUND)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, env={},  # it needs none, holds no secret
            )  # fmt: skip
            run.pipe = run.watchdog.stdin
        except OSError:
            run.watchdog, run.pipe = None, None
        # A watchdog started again (the last one was killed) learns what the last one knew.
        for pgid in run.groups:
            _write(run, b"+%d\n" % pgid)
        for path in _OWNED:
            if b"\n" not in os.fsencode(path):
                _write(run, b"d" + os.fsencode(path) + b"\n")
    return run.folder


def _new_folder(path: Path) -> Path:
    """`path` made (mode 700); when the name is taken (planted, or another pid namespace's), a new
    folder beside it with the same name and a random suffix."""
    try:
        path.mkdir(mode=0o700)
        return path
    except FileExistsError:
        return Path(tempfile.mkdtemp(prefix=f"{path.name}-", dir=path.parent))


def _ours(path: Path) -> bool:
    """A folder (not a link) of this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def holders(marker: str) -> list[int]:
    """The processes (zombies left out, this one too) whose environment holds `marker` ("NAME=value"):
    what a child started, even in a session of its own."""
    needle = marker.encode()
    found: list[int] = []
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[-1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            found.append(int(name))
    return found


def fragment_name() -> str:
    """`.run-<pid>.<start>-<hex>`: a folder this run makes beside its reports and removes; the owner in
    its name tells the next run whether it was left by a run that was killed (remove_stale_fragments)."""
    return f"{FRAGMENT_PREFIX}{owner_tag()}-{uuid.uuid4().hex[:12]}"


def remove_stale_fragments(folder: Path) -> list[Path]:
    """Removes the fragment_name() folders in `folder` whose owner no longer runs, and those without
    an owner (`.run-<hex>`: left by a version before this one); returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _FRAGMENT_NAME.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if match[1] is not None and owner_alive(int(match[1], 36), int(match[2], 36)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def remove_stale(base: Path | None = None) -> list[Path]:
    """Removes the run folders of runs that no longer run (killed with their watchdog); returns them."""
    root = Path(base or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _FOLDER_NAME.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if owner_alive(int(match[1], 36), int(match[2], 36)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


@atexit.register
def _at_exit() -> None:
    """A clean end: the folder goes now (the watchdog, seeing the pipe close, sweeps after)."""
    run = _RUN
    if run is None or run.pid != os.getpid():
        return
    with _LOCK:
        owned = list(_OWNED)
        _OWNED.clear()
    for path in [*owned, *([run.folder] if run.folder is not None else [])]:
        shutil.rmtree(path, ignore_errors=True)
