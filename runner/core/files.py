"""Files named by the environment or the user that the run reads or appends to on the side (CI outputs,
the GitHub event, a baseline). Opened without blocking: a FIFO or device under such a name must not
hold the run (a FIFO nobody reads or writes would, for ever); a FIFO being read is written to as usual.
"""

from __future__ import annotations

import os
import stat

_NO_WAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class NotRegularFile(OSError):
    """The name is a FIFO, a device or a socket, where a file was expected."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: not a regular file")
        self.strerror = "not a regular file"


class PlantedLink(OSError):
    """A symbolic (or hard) link where testsession writes a file of its own: a poisoned CI cache or a
    shared folder can plant one to make the tool overwrite the link's target, so it is never followed."""

    def __init__(self, path: str, hard: bool = False, message: str | None = None) -> None:
        what = "a hard link to another file" if hard else "a symbolic link"
        self.message = message or (
            f"{path}: is {what}; testsession writes its own files only where no link was planted "
            "(remove the link, or choose another path)"
        )
        super().__init__(self.message)
        self.strerror = f"is {what}"

    def __str__(self) -> str:
        return self.message


def refuse_link(path: str | os.PathLike[str]) -> None:
    """PlantedLink when `path` itself (its last part) is a symbolic link; nothing when it is missing."""
    if os.path.islink(path):
        raise PlantedLink(os.fspath(path))


# The default folder of what a run writes (the reports, the GitLab dotenv), in the working directory.
REPORTS_FOLDER = "testsession-reports"


def refuse_linked_reports_folder(path: str | os.PathLike[str]) -> None:
    """PlantedLink when the working directory's testsession-reports is a symbolic link and `path` is
    reached through it: a checked-out repository (or a restored cache) can hold one leading anywhere,
    and the run would write there, replacing what is there. Where the link leads is not said."""
    try:
        link = os.lstat(REPORTS_FOLDER)
    except OSError:  # no such folder: nothing to walk through
        return
    if not stat.S_ISLNK(link.st_mode):  # nearly always: one lstat
        return
    name = os.fspath(path)
    # The folders the system walks, in order: `testsession-reports/../x` is ./x once normalised, but
    # the system follows the link before `..`, and the file lands beside the link's target. Each is
    # compared with the link itself (device and inode), not by name: `$PWD/testsession-reports`
    # from a shell that entered the workspace through a link names it by another path.
    walked = os.sep if os.path.isabs(name) else os.getcwd()
    for part in name.split(os.sep):
        if not part:
            continue
        walked = os.path.normpath(os.path.join(walked, part))
        try:
            seen = os.lstat(walked)
        except (OSError, ValueError):  # not there yet: the write creates it (`new/../x`); ValueError: a NUL
            continue
        if (seen.st_dev, seen.st_ino) == (link.st_dev, link.st_ino):
            raise PlantedLink(
                name,
                message=f"{name}: its folder {REPORTS_FOLDER} is a symbolic link; testsession writes its "
                "reports only where no link was planted (remove the link, or choose another path)",
            )


def open_own(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """os.open of a file testsession owns (a lock, a state file): the last part of `path` is never a
    link followed (O_NOFOLLOW), and a regular file with more than one name (a planted hard link) is
    refused through the same descriptor. PlantedLink for either; NotRegularFile for a FIFO, device or
    socket (open with O_NONBLOCK in `flags` where one could block); OSError otherwise."""
    name = os.fspath(path)
    if not _NO_FOLLOW:  # Windows: no O_NOFOLLOW; the check before the open is what it has
        refuse_link(name)
    try:
        fd = os.open(name, flags | _NO_FOLLOW, mode)
    except OSError as exc:
        if os.path.islink(name):  # ELOOP on Linux, EMLINK on FreeBSD, EFTYPE on NetBSD
            raise PlantedLink(name) from None
        raise exc from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):  # a FIFO or device planted there: not a file of ours
        os.close(fd)
        raise NotRegularFile(name)
    if status.st_nlink > 1:
        os.close(fd)
        raise PlantedLink(name, hard=True)
    return fd


def read_regular(path: str, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of the regular file at `path` (one more than the limit tells the caller
    it is too large). OSError when it cannot be read; NotRegularFile for a FIFO or device."""
    fd = os.open(path, os.O_RDONLY | _NO_WAIT)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegularFile(path)
        return handle.read(limit + 1)


MAX_INPUT_BYTES = 16 * 1024 * 1024  # a checks file, world or body: the bench's 10,000 checks take 2.8 MB


class InputFileError(ValueError):
    """A user's input file that cannot be read as text: one line naming it, what is wrong and what is
    allowed. Each reader turns it into its own error (SpecError, WorldError, UsageError): exit 2."""


def read_input_text(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text (a BOM dropped) of the regular file at `path`, read with a cap, or InputFileError.
    A FIFO, device or socket is refused before a byte is read (a FIFO nobody writes would hang the run,
    /dev/zero fill the memory); `what` names the file's role in the messages ("checks file")."""
    name = os.fspath(path)
    try:
        data = read_regular(name, limit)
    except FileNotFoundError:
        raise InputFileError(f"{name}: no such file") from None
    except (IsADirectoryError, NotRegularFile):
        if os.path.isdir(name):
            raise InputFileError(f"{name}: is a directory, expected a {what}") from None
        raise InputFileError(
            f"{name}: not a regular file (a FIFO, device or socket); give the {what} as a file"
        ) from None
    except PermissionError:
        raise InputFileError(f"{name}: cannot read: permission denied") from None
    except OSError as exc:
        raise InputFileError(f"{name}: cannot read: {exc.strerror or type(exc).__name__}") from None
    if len(data) > limit:
        size = f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
        raise InputFileError(f"{name}: larger than {size} (the bound of a {what}); is this the right file?")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(
            f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None


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
