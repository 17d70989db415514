"""The files git tracks, and a copy of them: what a fresh clone holds, without the build/, egg-info and
__pycache__ a checkout collects (a stale build/lib once hid a wheel's missing files)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def tracked(under: str = "") -> list[str]:
    """Paths git tracks under `under` (the whole checkout by default); skips outside a git checkout."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no tracked files to compare with")
    listed = subprocess.run(["git", "ls-files", "-z", "--", under or "."], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout  # fmt: skip
    return sorted(name for name in listed.split("\0") if name)


def fresh_clone(dest: Path) -> Path:
    """The working tree's content of every tracked file, copied to `dest` (uncommitted edits included)."""
    for name in tracked():
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest
