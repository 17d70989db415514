"""The methods `dataclasses` writes for each class, compiled once per Python build and kept like .pyc.

Python 3.10-3.12 write a dataclass's __init__, __repr__ and __eq__ (and a frozen one's __setattr__,
__delattr__ and __hash__) as source text, and compile each text with exec() when the class is
created. A one-check run creates ~110 such classes (ours, pydantic's and annotated_types'), so ~650
compilations: 20% of its instructions (cachegrind) and ~0.1 s of its 0.6 s on a 2-core runner. A
module's own code comes from its .pyc; these texts were compiled on every start.

`install()` gives the dataclasses module an exec() that looks each text up in a file of compiled code
(one file per Python build, in the user's cache: $XDG_CACHE_HOME/testsession, default ~/.cache), and
`save()` writes what was new when the command ends. 3.13 writes one text per class; the same exec()
serves it.

Nothing else changes. The text itself is the key. The code is what compile() gives for it in the
dataclasses module's context: no `from __future__` flags of ours (dont_inherit). exec() runs it with
the namespaces it was given. A cache that cannot be read, understood or written means each text is
compiled, as before. PYTHONDONTWRITEBYTECODE (-B) is honoured as for .pyc files: read, never
written. Bounded: at most MAX_ENTRIES texts, and a file over MAX_BYTES is not read.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_ENTRIES = 4096  # a command creates ~650; the rest are other commands' and older versions'
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
        if type(source) is not str:
            builtins.exec(source, globals, locals)
            return
        code = None
        data = self.codes.get(source)
        if data is not None:
            try:
                code = marshal.loads(data)
            except (EOFError, ValueError, TypeError):
                code = None
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = marshal.dumps(code)
            self.new = True
        self.used.add(source)
        builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Writes the cache when a text was new: atomically (a concurrent reader sees the old file or
        the new one), and only this run's texts when the file would hold more than MAX_ENTRIES."""
        if not self.new or self.path is None or sys.dont_write_bytecode:
            return
        codes = self.codes if len(self.codes) <= MAX_ENTRIES else {t: self.codes[t] for t in self.used}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary.write_bytes(marshal.dumps(codes))
            os.replace(temporary, self.path)
            self.new = False
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, bytes]:
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
    """This Python build's file, or None when there is no home to put it in."""
    try:
        base = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no HOME and no passwd entry
        return None
    tag = sys.implementation.cache_tag or sys.implementation.name
    return base / "testsession" / f"dataclass-methods.{tag}-{sys.hexversion:x}.marshal"


def install(path: Path | None = None) -> CompiledTexts | None:
    """Makes `dataclasses` read compiled methods from the cache (the `testsession` command, before it
    imports what it runs); the caller saves it at the end. None when it is installed already. On a
    Python whose dataclasses calls no exec() the name is simply not used."""
    import dataclasses

    if hasattr(dataclasses, "exec"):
        return None
    cache = CompiledTexts(path if path is not None else cache_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # shadows builtins.exec in that module only
    return cache
