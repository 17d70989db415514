"""write_atomic: parents created, whole file or nothing, no temp files left behind."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from runner.core.files import PlantedLink
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


def test_a_report_is_replaced_by_rename_without_waiting_for_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers need the rename (old file or whole new one), not durability across a power cut: a busy
    disk's fsync (up to 129 ms a file) never holds a run's end up."""
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    target = tmp_path / "junit.xml"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["junit.xml"]
    assert synced == []


def test_failure_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "lone \ud800")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.json"]


def test_fifo_target_is_written_through_not_replaced(tmp_path: Path) -> None:
    """`--junit some.fifo` (or /dev/stdout): the reader gets the report, the FIFO stays a FIFO."""
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    text = "<testsuites/>\n" * 10_000  # more than a pipe buffer holds
    for _ in range(200):  # until the reader has opened its end
        try:
            write_atomic(fifo, text)
            break
        except OSError:
            time.sleep(0.01)
    thread.join(5)
    assert received == [text.encode()]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["report.fifo"]


def test_fifo_without_reader_is_an_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "nobody-reads.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        write_atomic(fifo, "x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_device_node_is_written_not_replaced(tmp_path: Path) -> None:
    """`--junit /dev/null` as root (the Docker image): the device survives. A private null device
    is made here, so a failure cannot destroy the machine's /dev/null."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc}")
    write_atomic(node, "<testsuites/>")
    assert stat.S_ISCHR(node.stat().st_mode)
    assert node.stat().st_rdev == os.makedev(1, 3)
    assert os.listdir(tmp_path) == ["null"]
    write_atomic(Path("/dev/null"), "nothing")  # the real one, now that replacing it is ruled out
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_linked_default_folder_is_not_written_through_even_when_linked_during_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before the run found no link; one made since is refused at the write, untouched."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "testsession-reports").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PlantedLink, match="its folder testsession-reports is a symbolic link"):
        write_atomic("testsession-reports/junit.xml", "<testsuites/>")
    assert list(elsewhere.iterdir()) == []
    write_atomic("out/junit.xml", "<testsuites/>")  # any other folder is written as before
