"""Report files: atomic writes (a reader, a CI upload step or a tail, never sees half a report) and the
check, before a run starts, that every report path can be written."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from runner.core.errors import UsageError
from runner.core.files import PlantedLink, refuse_linked_reports_folder

# Where a container runtime leaves its mark: Docker, Podman; Kubernetes sets the service host.
_CONTAINER_MARKS = ("/.dockerenv", "/run/.containerenv")


def write_atomic(path: str | Path, text: str | bytes | Iterable[bytes]) -> Path:
    """Writes `text` as UTF-8 (bytes: as they are; pieces of bytes: one after another, so that a
    large report is never whole in memory) to `path`: parents created, temp file in the same
    directory, then os.replace. An existing file keeps its permissions; a new one gets 0644.

    No fsync: the rename is what readers need (the old file or the whole new one, never half), and
    it is atomic without one. An fsync only makes the report survive a power cut or a kernel crash,
    which ends the CI job that would read it anyway; it cost 0.4 ms a file on a quiet disk and up to
    129 ms on a busy one (a run writes three reports).

    A target that exists and is not a regular file (`/dev/null`, a FIFO, a terminal) is written to
    directly and never replaced: renaming over `/dev/null` as root would destroy it for everyone."""
    target = Path(path)
    # Before anything is touched: an unencodable text changes nothing.
    data = text if isinstance(text, bytes) else text.encode("utf-8") if isinstance(text, str) else text
    _refuse_planted_link(target)
    try:
        status = target.stat()
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode) and not stat.S_ISDIR(status.st_mode):
        _write_direct(target, data if isinstance(data, bytes) else b"".join(data))  # whole or nothing
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = status.st_mode & 0o7777 if status is not None else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                handle.writelines(data)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


def check_writable(paths: Mapping[str, Path], environ: Mapping[str, str] | None = None) -> None:
    """Raises UsageError, one line naming the path, the uid and the fix, unless every report can be
    written: called before anything is triggered, so an unwritable workspace costs no session.

    Parents are created (as write_atomic would) and a probe file with a unique name is made and removed
    next to each report; an existing non-regular file (/dev/null, a FIFO) is only checked for access,
    never replaced."""
    env = os.environ if environ is None else environ
    for kind, path in paths.items():
        try:
            _refuse_planted_link(path)
        except PlantedLink as exc:
            raise UsageError(f"reports.{kind}: {exc}") from None
        problem = _write_problem(path)
        if problem:
            text, code = problem
            uid = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
            raise UsageError(f"reports.{kind}: cannot write {path} as {uid} ({text}); {_fix(env, code)}")


# Where a link may lead for a report to be written through it (`--junit /dev/stdout`, a terminal):
# a FIFO or socket, else one of these character devices. Any other target (a file, a folder, a disk
# such as /dev/sda, /dev/port) is a planted link: writing a report over a disk as root destroys it.
_STREAM_DEVICES = ("/dev/null", "/dev/tty", "/dev/pts/", "/dev/console", "/dev/fd/")


def _refuse_planted_link(path: Path) -> None:
    """PlantedLink when `path` is a symbolic link to anything but an output stream (or to nothing): a
    report replaces what is there, and a link planted by a shared cache or checkout must not be
    followed (nor silently replaced). A link to a FIFO, a terminal or the null device (`/dev/stdout`)
    is written to, as the stream itself is."""
    refuse_linked_reports_folder(path)  # the default folder a planted link (core/files.py)
    if not path.is_symlink():
        return
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return
    if mode is not None and stat.S_ISCHR(mode) and os.path.realpath(path).startswith(_STREAM_DEVICES):
        return
    if _own_stream(path):  # /dev/stdout with the output redirected to a file: never "remove the link"
        raise PlantedLink(
            str(path),
            message=f"{path}: the output of this process, redirected to a file: a report is not written "
            "through it; give the file's own path (e.g. --junit junit.xml), or pipe the output",
        )
    raise PlantedLink(str(path))


def _own_stream(path: Path) -> bool:
    """Whether the link leads through this process's descriptors (/dev/stdout -> /proc/self/fd/1)."""
    for _ in range(8):  # a chain of links, bounded
        try:
            text = os.readlink(path)
        except OSError:
            return False
        if text.startswith(("/proc/self/fd/", "/dev/fd/")):
            return True
        path = Path(os.path.join(os.path.dirname(path), text))
    return False


def _write_problem(path: Path) -> tuple[str, int | None] | None:
    """Why `path` cannot be written, and the errno; None when it can."""
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        return None if os.access(path, os.W_OK) else ("not writable", None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        text = f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc.strerror or exc)
        return text, exc.errno
    return None


def _fix(environ: Mapping[str, str], code: int | None = None) -> str:
    if code == errno.EROFS:  # no user or permission makes a read-only mount writable
        return (
            "the file system there is read-only: choose a path on a writable one "
            "(--junit, --markdown, --json or reports: in the spec), e.g. a mounted volume"
        )
    if "KUBERNETES_SERVICE_HOST" in environ:
        return "mount a volume the pod's runAsUser can write (an emptyDir, or fsGroup) or choose another path"
    if environ.get("container") or any(os.path.exists(mark) for mark in _CONTAINER_MARKS):
        return (
            'run the container as the owner of the mounted directory: --user "$(id -u):$(id -g)", '
            "or choose another path"
        )
    return "make it writable or choose another path (--junit, --markdown, --json or reports: in the spec)"


def _write_direct(target: Path, data: bytes) -> None:
    """Writes into an existing device or FIFO. Non-blocking open, so a FIFO nobody reads is an error
    (ENXIO) rather than a run that hangs; then blocking writes, as its reader drains it."""
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=True) as handle:
            fd = -1
            handle.write(data)
    finally:
        if fd >= 0:
            os.close(fd)
