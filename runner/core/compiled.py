"""The methods `dataclasses` writes for each class, compiled once per Python build and kept like .pyc.

Python 3.10-3.12 write a dataclass's __init__, __repr__ and __eq__ (and a frozen one's __setattr__,
__delattr__ and __hash__) as source text, and compile each text with exec() when the class is
created. A one-check run creates ~110 such classes (ours, pydantic's and annotated_types'), so ~650
compilations: 20% of its instructions (cachegrind) and ~0.1 s of its 0.6 s on a 2-core runner. A
module's own code comes from its .pyc; these texts were compiled on every start. So were the string
annotations that typing turns into a ForwardRef (~600 in pydantic_core's TypedDicts alone, 3%).

`install()` gives the dataclasses module an exec(), and typing a compile(), that look each text up in
a file of compiled code (one file per Python build, in the user's cache: $XDG_CACHE_HOME/testsession,
default ~/.cache); `save()` writes what was new when the command ends. 3.13 writes one text per
class; the same exec() serves it.

Nothing else changes. The text (and the mode) is the key. The code is what compile() gives for it in
those modules' context: no `from __future__` flags of ours (dont_inherit). exec() runs it with
the namespaces it was given. A cache that cannot be read, understood or written means each text is
compiled, as before. PYTHONDONTWRITEBYTECODE (-B) is honoured as for .pyc files: read, never
written. The file holds code, trusted as one's own .pyc is: it is read only when it and its folder
are the user's own and writable by no one else, and written through a new file only this process
could create (mkstemp), then renamed. Bounded: at most MAX_ENTRIES texts, and a file over MAX_BYTES
is not read.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

MAX_ENTRIES = 4096  # a command compiles ~1,300; the rest are other commands' and older versions'
MAX_BYTES = 16 * 1024 * 1024


class CompiledTexts:
    """The cache of one process: text -> marshalled code, read once, written once."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.codes: dict[str, bytes] = _read(path) if path is not None else {}
        self.used: set[str] = set()
        self.new = False

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """builtins.exec, with a text's code from the cache when it has it."""
        builtins.exec(self._code(source, "exec") if type(source) is str else source, globals, locals)

    def compile(
        self, source: Any, filename: Any, mode: Any, flags: int = 0, *rest: Any, **options: Any
    ) -> Any:
        """builtins.compile, with the code of a plain text (typing's ForwardRef of an annotation)
        from the cache when it has it."""
        if (
            type(source) is str
            and filename == "<string>"
            and mode in ("eval", "exec")
            and not (flags or rest or options)
        ):
            return self._code(source, mode)
        return builtins.compile(source, filename, mode, flags, *rest, **options)

    def _code(self, source: str, mode: str) -> CodeType:
        key = source if mode == "exec" else f"{mode}\0{source}"
        data = self.codes.get(key)
        if data is not None:
            try:
                code = marshal.loads(data)
            except (EOFError, ValueError, TypeError):
                code = None
            if type(code) is CodeType:
                self.used.add(key)
                return code
        code = compile(source, "<string>", mode, dont_inherit=True)
        self.codes[key] = marshal.dumps(code)
        self.used.add(key)
        self.new = True
        return code

    def save(self) -> None:
        """Writes the cache when a text was new: atomically (a concurrent reader sees the old file or
        the new one), and only this run's texts when the file would hold more than MAX_ENTRIES."""
        if not self.new or self.path is None or sys.dont_write_bytecode:
            return
        codes = self.codes if len(self.codes) <= MAX_ENTRIES else {t: self.codes[t] for t in self.used}
        import tempfile  # only when there is something to write

        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _ours(folder):
                return
            # A name no other process can have made first (O_EXCL, mode 0600): never a symlink's.
            handle, temporary = tempfile.mkstemp(prefix=f"{self.path.name}.", suffix=".tmp", dir=folder)
        except OSError:
            return
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(marshal.dumps(codes))
            os.replace(temporary, self.path)
            self.new = False
        except (OSError, ValueError):
            pass
        finally:  # a signal or an error while writing: no temporary file is left behind
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _ours(path: Path) -> bool:
    """The file or folder is this user's and no one else can write to it: its code is trusted as a
    .pyc of one's own is. A shared or planted cache (a world-writable XDG_CACHE_HOME) is not read."""
    try:
        status = path.lstat()
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(status.st_mode) or stat.S_ISREG(status.st_mode)  # not a symlink
    return kind_ok and status.st_uid == os.geteuid() and not status.st_mode & 0o022


def _read(path: Path) -> dict[str, bytes]:
    if not (_ours(path.parent) and _ours(path)):
        return {}
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if type(k) is str and type(v) is bytes}


def cache_path(environ: Mapping[str, str] = os.environ) -> Path | None:
    """This Python build's file (and optimisation level: -O compiles differently), or None when
    there is no home to put it in. A relative XDG_CACHE_HOME is ignored, as the XDG spec says."""
    given = environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(given) if os.path.isabs(given) else Path.home() / ".cache"
    except RuntimeError:  # no HOME and no passwd entry
        return None
    if not base.is_absolute():  # HOME set but empty
        return None
    tag = sys.implementation.cache_tag or sys.implementation.name
    name = f"dataclass-methods.{tag}-{sys.hexversion:x}-opt{sys.flags.optimize}.marshal"
    return base / "testsession" / name


def install(path: Path | None = None) -> CompiledTexts | None:
    """Makes `dataclasses` read compiled methods from the cache (the `testsession` command, before it
    imports what it runs); the caller saves it at the end. None when it is installed already. On a
    Python whose dataclasses calls no exec() the name is simply not used."""
    import dataclasses
    import typing

    if hasattr(dataclasses, "exec") or hasattr(typing, "compile"):
        return None
    cache = CompiledTexts(path if path is not None else cache_path())
    # Each shadows the builtin in that module only.
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    typing.compile = cache.compile  # type: ignore[attr-defined]
    return cache


def keep_for_this_process() -> None:
    """install(), and save() when the process exits: for the command's entry points (the console
    script and `python -m runner`, the GitHub Action's), before they import what they run."""
    methods = install()
    if methods is not None:
        import atexit

        atexit.register(methods.save)
