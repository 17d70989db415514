"""Atomic report files: a reader (a CI upload step, a tail) never sees half a report."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, text: str) -> Path:
    """Writes `text` as UTF-8 to `path`: parents created, temp file in the same directory, fsync,
    then os.replace. An existing file keeps its permissions; a new one gets 0644.

    A target that exists and is not a regular file (`/dev/null`, a FIFO, a terminal) is written to
    directly and never replaced: renaming over `/dev/null` as root would destroy it for everyone."""
    target = Path(path)
    data = text.encode("utf-8")  # before anything is touched: an unencodable text changes nothing
    try:
        status = target.stat()
    except FileNotFoundError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode) and not stat.S_ISDIR(status.st_mode):
        _write_direct(target, data)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = status.st_mode & 0o7777 if status is not None else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(target.parent)
    return target


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


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not possible on every platform (Windows), so best effort.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
