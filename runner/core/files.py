"""Files named by the environment or the user that the run reads or appends to on the side (CI outputs,
the GitHub event, a baseline). Opened without blocking: a FIFO or device under such a name must not
hold the run (a FIFO nobody reads or writes would, for ever); a FIFO being read is written to as usual.
"""

from __future__ import annotations

import os
import stat

_NO_WAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class NotRegularFile(OSError):
    """The name is a FIFO, a device or a socket, where a file was expected."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: not a regular file")
        self.strerror = "not a regular file"


def read_regular(path: str, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of the regular file at `path` (one more than the limit tells the caller
    it is too large). OSError when it cannot be read; NotRegularFile for a FIFO or device."""
    fd = os.open(path, os.O_RDONLY | _NO_WAIT)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegularFile(path)
        return handle.read(limit + 1)


def append_text(path: str, text: str, truncate: bool = False) -> None:
    """Appends (or, with `truncate`, writes) UTF-8 `text`, creating the file (0644). A FIFO without a
    reader is an OSError (ENXIO), not a wait; one with a reader gets the text."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND) | _NO_WAIT
    fd = os.open(path, flags, 0o644)
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as handle:
            fd = -1
            handle.write(text.encode("utf-8"))
    finally:
        if fd >= 0:
            os.close(fd)
