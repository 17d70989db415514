"""write_atomic: parents created, whole file or nothing, no temp files left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from runner.reports import write_atomic


def test_creates_parents_and_writes_utf8(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "summary.md"
    written = write_atomic(str(target), "ünïcode ✓\n")
    assert written == target
    assert target.read_bytes() == "ünïcode ✓\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(target.parent) == ["summary.md"]


def test_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.write_text("old")
    target.chmod(0o600)
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["junit.xml"]


def test_failure_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "lone \ud800")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.json"]
