"""Evidence folders named by a counter, never by a test's title (issue 40): Playwright names a test's
output folder after its file and title, and a script can build a title from a secret
(`test('types ' + process.env.TOKEN, ...)`), which masking cannot take out of a path without breaking
it. Each folder a test's files are in becomes `test-<n>` (n in the order the report names them), and
the report's attachment paths with it: the paths the reports name are the files on disk."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PREFIX = "test-"


def renamed(tests: Sequence[Any], out: Path, target: Path, prefix: str = "") -> list[Any]:
    """The tests with the folders of their attachments moved from `out/<prefix>...` to
    `target/test-<n>` and the paths updated; an attachment outside `out` keeps its path."""
    names: dict[str, Path] = {}

    def place(top: str) -> Path:
        if top not in names:
            source = out / top
            names[top] = target / f"{PREFIX}{len(names) + 1}"
            if source != names[top] and source.is_dir() and not source.is_symlink():
                target.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(OSError):
                    _remove(names[top])  # an earlier run's files (attempts count from 1 too): newest win
                    os.replace(source, names[top])
        return names[top]

    out_tests: list[Any] = []
    for test in tests:
        if not isinstance(test, dict):
            out_tests.append(test)
            continue
        attachments = []
        listed = test.get("attachments")
        for a in listed if isinstance(listed, list) else []:
            if isinstance(a, dict) and isinstance(a.get("path"), str):
                try:
                    rel = Path(a["path"]).relative_to(out)
                except ValueError:
                    rel = None
                if rel is not None and len(rel.parts) > 1 and rel.parts[0].startswith(prefix):
                    a = {**a, "path": str(place(rel.parts[0]).joinpath(*rel.parts[1:]))}
            attachments.append(a)
        out_tests.append({**test, "attachments": attachments})
    return out_tests


def _remove(path: Path) -> None:
    """`path` gone, whatever it is; a link is removed, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def drop_title_folders(folder: Path) -> None:
    """Removes what is left in `folder` under a name of Playwright's (a passing test's empty folder,
    named after its title); the `test-<n>` folders stay."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(PREFIX):
                shutil.rmtree(entry, ignore_errors=True)
