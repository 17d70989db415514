"""Files a user, a CI cache or a checkout can hand the tool (issue 40): a link planted where testsession
writes its own files is never followed, and a damaged, undecodable, special or oversized input file is
exit 2 with one line naming it, never a traceback or a hang. Real runs (`run --checks`) in this process
against a port where nothing listens: every check errors, so a run that gets through exits 1."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from helpers import Ran, child_env, run_here

CHECKS = """\
checks:
  - name: ok
    checkType: API
    request: {method: GET, url: "http://127.0.0.1:1/"}
"""
VICTIM = "the victim's own text, which no run may change\n"


def run(tmp_path: Path, *argv: str) -> Ran:
    checks = tmp_path / "ok.yml"
    if not checks.exists():
        checks.write_text(CHECKS, encoding="utf-8")
    return run_here(["run", "--checks", "ok.yml", "--no-rca", "-q", *argv], child_env(), tmp_path)


def one_line_error(ran: Ran, *says: str) -> None:
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert ran.stderr.count("\n") == 1 and ran.stderr.startswith("testsession: error: "), ran.stderr
    assert "Traceback" not in ran.stderr
    for text in says:
        assert text in ran.stderr, ran.stderr


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text(VICTIM, encoding="utf-8")
    return path


# --- links planted where the tool writes ---------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["state.db.lock", "state.db", "state.db-wal", "state.db-journal", "state.db-shm"]
)
def test_a_symbolic_link_planted_beside_the_state_file_is_refused_untouched(
    tmp_path: Path, name: str
) -> None:
    """`ln -s victim state.db.lock` used to get "<pid>\\n" written over the victim's first 64 bytes."""
    target = victim(tmp_path)
    (tmp_path / name).symlink_to(target)
    ran = run(tmp_path, "--state", "state.db")
    one_line_error(ran, f"{name}: is a symbolic link")
    assert target.read_text(encoding="utf-8") == VICTIM


def test_a_hard_link_planted_as_the_lock_is_refused_untouched(tmp_path: Path) -> None:
    target = victim(tmp_path)
    os.link(target, tmp_path / "state.db.lock")
    ran = run(tmp_path, "--state", "state.db")
    one_line_error(ran, "state.db.lock: is a hard link to another file")
    assert target.read_text(encoding="utf-8") == VICTIM


def test_a_state_file_of_its_own_still_opens_again(tmp_path: Path) -> None:
    """The refusals above leave the ordinary case alone: a second run reuses the file and its lock."""
    assert run(tmp_path, "--state", "state.db").returncode == 1
    ran = run(tmp_path, "--state", "state.db")
    assert ran.returncode == 1, ran.stderr
    assert "[known" in ran.stdout, ran.stdout  # the first run's failure, from the file


@pytest.mark.parametrize("flag", ["--junit", "--json", "--markdown"])
def test_a_report_path_that_is_a_planted_link_is_refused_untouched(tmp_path: Path, flag: str) -> None:
    target = victim(tmp_path)
    (tmp_path / "report").symlink_to(target)
    ran = run(tmp_path, flag, "report")
    one_line_error(ran, "report: is a symbolic link")
    assert target.read_text(encoding="utf-8") == VICTIM
    assert (tmp_path / "report").is_symlink()


def test_a_report_to_dev_stdout_is_still_written(tmp_path: Path) -> None:
    """/dev/stdout is a link too, to the process's output: a link to a device or FIFO is written to."""
    if not os.path.islink("/dev/stdout"):
        pytest.skip("no /dev/stdout link on this platform")
    read, write = os.pipe()
    (tmp_path / "out").symlink_to(f"/proc/self/fd/{write}")
    ran = run(tmp_path, "--junit", "out")
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read().startswith(b"<?xml"), ran.stderr
    assert ran.returncode == 1, ran.stderr


# --- a damaged state file ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "column", "value", "kind"),
    [
        ("error_groups", "last_seen", "'garbage'", "a number"),
        ("error_groups", "environments", "'[not json'", "a JSON list"),
        ("sessions", "body", "'{\"status\": '", "a JSON object"),
        ("sessions", "rendered_at", "x'00ff'", "a number"),
    ],
)
def test_a_garbage_value_in_the_state_file_names_the_file_and_what_to_do(
    tmp_path: Path, table: str, column: str, value: str, kind: str
) -> None:
    """A valid SQLite state file with one value of another type used to end in a traceback (ValueError
    in StateFile.latest, exit 4)."""
    assert run(tmp_path, "--state", "state.db").returncode == 1
    with sqlite3.connect(tmp_path / "state.db") as db:
        db.execute(f"UPDATE {table} SET {column} = {value}")
    db.close()
    ran = run(tmp_path, "--state", "state.db")
    one_line_error(ran, "state.db: damaged state file", f"{column} is not {kind}", "delete it")
