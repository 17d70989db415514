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
    """Exit 2, no traceback, one line naming the problem (`validate` adds its count of problems)."""
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert "Traceback" not in ran.stderr
    lines = ran.stderr.splitlines()
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].endswith(": 1 problem")), ran.stderr
    for text in says:
        assert text in lines[0], ran.stderr


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


def test_a_linked_default_reports_folder_is_refused_and_nothing_written_through_it(tmp_path: Path) -> None:
    """A checked-out repository can hold `testsession-reports` as a link to anywhere: the run wrote
    its reports (and replaced files) there. Refused before the run, one line naming the folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "junit.xml").write_text(VICTIM, encoding="utf-8")
    (tmp_path / "testsession-reports").symlink_to(elsewhere, target_is_directory=True)
    ran = run(tmp_path)
    one_line_error(ran, "testsession-reports", "is a symbolic link")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["junit.xml"]
    assert (elsewhere / "junit.xml").read_text(encoding="utf-8") == VICTIM
    # A report named inside it is refused the same way; one of its own folder is written.
    ran = run(tmp_path, "--junit", "./testsession-reports/j.xml", "--json", "", "--markdown", "")
    one_line_error(
        ran, "reports.junit: testsession-reports/j.xml: its folder testsession-reports is a symbolic link"
    )
    assert sorted(p.name for p in elsewhere.iterdir()) == ["junit.xml"]
    assert run(tmp_path, "--junit", "out/j.xml", "--json", "", "--markdown", "").returncode == 1


def test_a_report_path_through_the_linked_folder_and_back_out_is_refused(tmp_path: Path) -> None:
    """`testsession-reports/../x.xml` reads as ./x.xml, but the system walks the link first: the file
    landed beside the link's target. Refused like any path in the folder; nothing written there."""
    far = tmp_path / "far"
    (far / "elsewhere").mkdir(parents=True)
    (tmp_path / "testsession-reports").symlink_to(far / "elsewhere", target_is_directory=True)
    ran = run(tmp_path, "--junit", "testsession-reports/../x.xml", "--json", "", "--markdown", "")
    one_line_error(ran, "testsession-reports/../x.xml: its folder testsession-reports is a symbolic link")
    assert sorted(p.name for p in far.rglob("*")) == ["elsewhere"]
    # Through a folder the write would create first: refused the same way.
    ran = run(tmp_path, "--junit", "new/../testsession-reports/x.xml", "--json", "", "--markdown", "")
    one_line_error(ran, "its folder testsession-reports is a symbolic link")
    assert sorted(p.name for p in far.rglob("*")) == ["elsewhere"]
    # One that only passes by the folder's name, and one of its own folder, are written as before.
    assert run(tmp_path, "--junit", "out/../j.xml", "--json", "", "--markdown", "").returncode == 1
    assert (tmp_path / "j.xml").is_file()


def test_a_report_path_spelled_through_a_linked_parent_of_the_workspace_is_refused(tmp_path: Path) -> None:
    """`$PWD/testsession-reports/j.xml` from a shell that entered the workspace through a link (or
    macOS's /tmp) names the folder by another path than the working directory's own: it was written
    through the planted link."""
    workspace, far = tmp_path / "ws", tmp_path / "far"
    workspace.mkdir()
    far.mkdir()
    (tmp_path / "ws-link").symlink_to(workspace, target_is_directory=True)
    (workspace / "testsession-reports").symlink_to(far, target_is_directory=True)
    junit = str(tmp_path / "ws-link" / "testsession-reports" / "j.xml")
    ran = run(workspace, "--junit", junit, "--json", "", "--markdown", "")
    one_line_error(ran, f"{junit}: its folder testsession-reports is a symbolic link")
    assert list(far.iterdir()) == []


def test_the_gitlab_dotenv_is_not_written_through_a_linked_reports_folder(tmp_path: Path) -> None:
    """The GitLab dotenv goes to testsession-reports/testsession.env: with the folder a planted link,
    it was written (truncated) in the link's target even when the run refused its reports there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "testsession-reports").symlink_to(elsewhere, target_is_directory=True)
    env = child_env(CI="true", GITLAB_CI="true")
    reports = ["--junit", "out/j.xml", "--json", "", "--markdown", ""]
    argv = ["run", "--checks", "ok.yml", "--no-rca", "-q"]
    (tmp_path / "ok.yml").write_text(CHECKS, encoding="utf-8")
    ran = run_here(argv + reports, env, tmp_path)
    assert ran.returncode == 1, ran.stderr
    assert list(elsewhere.iterdir()) == []
    said = "testsession-reports/testsession.env: its folder testsession-reports is a symbolic link"
    assert said in ran.stderr
    ran = run_here(argv, env, tmp_path)  # the default reports: refused, and no dotenv either
    assert ran.returncode == 2 and list(elsewhere.iterdir()) == [], ran.stderr


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


# --- input files a user can write ----------------------------------------------------------------------


def special(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(tmp_path / "fifo")  # nobody writes it: reading it used to hang the run
        return "fifo"
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this platform")
    return "/dev/zero"  # endless: read whole it used to end in MemoryError


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["run", "--checks", "{}"], "checks file"),
        (["validate", "{}"], "YAML file"),
        (["emulator", "--check", "--world", "{}"], "world file"),
    ],
)
def test_a_fifo_or_device_as_an_input_file_is_refused_at_once(
    tmp_path: Path, kind: str, argv: list[str], what: str
) -> None:
    name = special(tmp_path, kind)
    ran = run_here([arg.replace("{}", name) for arg in argv], child_env(), tmp_path)
    one_line_error(ran, f"{name}: not a regular file (a FIFO, device or socket); give the {what} as a file")


def test_a_checks_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "big.yml").write_bytes(b"# " + b"x" * (16 * 1024 * 1024))
    ran = run_here(["run", "--checks", "big.yml"], child_env(), tmp_path)
    one_line_error(ran, "big.yml: larger than 16 MiB (the bound of a checks file)")


@pytest.mark.parametrize("flag", ["--checks", "--world"])
def test_a_latin1_byte_names_the_file_line_and_offset(tmp_path: Path, flag: str) -> None:
    """A checks file saved as Latin-1 used to end in UnicodeDecodeError (exit 4, a traceback)."""
    (tmp_path / "latin1.yml").write_bytes(CHECKS.replace("name: ok", "name: caf\xe9").encode("latin-1"))
    argv = (
        ["run", "--checks", "latin1.yml"]
        if flag == "--checks"
        else ["emulator", "--check", "--world", "latin1.yml"]
    )
    ran = run_here(argv, child_env(), tmp_path)
    offset = CHECKS.index("name: ok") + len("name: caf")
    one_line_error(ran, f"latin1.yml:2: not UTF-8 text (byte 0xe9 at offset {offset}); save it as UTF-8")


BROWSER_CHECK = """\
checks:
  - name: b
    checkType: BROWSER
    script: "const { test } = require('@playwright/test'); test('x', async () => {});"
    scriptPath: tests/b.spec.js
    sharedFiles:
"""


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (['{path: "lib/a\\0b.js", content: x}'], "sharedFiles[0].path: contains the character U+0000"),
        (
            [f"{{path: lib/{'n' * 300}.js, content: x}}"],
            "sharedFiles[0].path: has a name of 303 bytes; a file or folder name is at most 255 bytes",
        ),
        (
            ["{path: lib/a.js, content: x}", "{path: lib/a.js/b.js, content: y}"],
            "sharedFiles[0].path: lib/a.js is a file here and a folder in sharedFiles[1].path",
        ),
    ],
    ids=["nul", "300-character-name", "file-and-folder"],
)
def test_shared_file_paths_no_file_can_have_are_refused_at_load(
    tmp_path: Path, files: list[str], says: str
) -> None:
    """They used to fail each attempt as "internal error of the local executor" (exit 1, no verdict
    on the script); refused before anything runs, they need no Node or browser here."""
    text = BROWSER_CHECK + "".join(f"      - {item}\n" for item in files)
    (tmp_path / "browser.yml").write_text(text, encoding="utf-8")
    ran = run_here(["run", "--checks", "browser.yml", "-q"], child_env(), tmp_path)
    one_line_error(ran, f"browser.yml:7: checks[0].{says}")


def test_a_fifo_as_shard_durations_is_a_warning_not_a_hang(tmp_path: Path) -> None:
    name = special(tmp_path, "fifo")
    # An id of production's shape: a shard of checks without one is another issue's (ids made from names)
    checks = CHECKS.replace("  - name: ok", "  - id: 0b9a3c4d-1111-4a5b-8c6d-000000000001\n    name: ok")
    (tmp_path / "ok.yml").write_text(checks, encoding="utf-8")
    argv = ["run", "--checks", "ok.yml", "--no-rca", "--shard", "1/1", "--shard-durations", name]
    ran = run_here(argv, child_env(), tmp_path)
    assert ran.returncode == 1, ran.stderr  # the run goes on, split by count
    assert f"shard durations {name}: not a regular file; split by count" in ran.stdout + ran.stderr


def test_an_analysis_of_another_shape_in_the_state_file_is_named(tmp_path: Path) -> None:
    """Valid JSON, not an analysis: it used to end in pydantic's ValidationError (exit 4)."""
    (tmp_path / "ok.yml").write_text(CHECKS, encoding="utf-8")
    argv = ["run", "--checks", "ok.yml", "-q", "--state", "state.db"]
    assert run_here(argv, child_env(), tmp_path).returncode == 1  # with its root cause analysis
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert db.execute("UPDATE analyses SET content = '{\"x\": 1}'").rowcount == 1
    db.close()
    one_line_error(run_here(argv, child_env(), tmp_path), "state.db: damaged state file (table analyses, id ")


def test_a_browser_checks_evidence_is_not_kept_or_removed_through_a_linked_reports_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser check's screenshots and traces (which may hold what a script typed) go to
    testsession-reports/browser/<id>, and a first attempt removes that folder: with the reports
    folder a planted link (and the reports written elsewhere, so the run went on) the folder in the
    link's target was removed and the evidence written there. The check does not run, saying why."""
    from runner.checks.failures import NotRun
    from runner.checks.protocols.browser import attempt_dir
    from runner.models.check_definitions import parse_check_definition

    kept = tmp_path / "elsewhere" / "browser" / "x"
    kept.mkdir(parents=True)
    (kept / "victim").write_text(VICTIM, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TESTSESSION_ARTIFACTS_DIR", raising=False)
    (tmp_path / "testsession-reports").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    check = parse_check_definition({"id": "x", "name": "b", "checkType": "BROWSER", "script": "//"})
    with pytest.raises(NotRun, match="its folder testsession-reports is a symbolic link"):
        attempt_dir(check, 1)
    assert (kept / "victim").read_text(encoding="utf-8") == VICTIM
    # Nor does a run's clean-up of what a killed run left there (`.run-<hex>` folders) reach it.
    fragment = tmp_path / "elsewhere" / "browser" / ".run-0123abcd"
    fragment.mkdir()
    ran = run(tmp_path, "--junit", "out/j.xml", "--json", "", "--markdown", "")
    assert ran.returncode == 1 and fragment.is_dir(), ran.stderr
