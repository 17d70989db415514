"""Writable-or-say-so: `run` and `wait` check every report path before anything is triggered and, when
one cannot be written, exit 2 with one line naming the path, the uid and the fix.

Unwritable paths are made under a regular file (`somefile/junit.xml`): that stops root too, where a
chmod would not (CI may run the tests as root).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import sessions_created

from runner.cli.main import main
from runner.core.errors import UsageError
from runner.emulator import Emulator
from runner.reports import files
from runner.reports.files import check_writable

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

UID = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"


@pytest.fixture
def env(emulator: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Emulator:
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "GITLAB", "CI_")) or name in (
            "CI",
            "container",
            "KUBERNETES_SERVICE_HOST",
        ):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TESTSESSION_API_KEY", emulator.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emulator.account_id)
    monkeypatch.setenv("TESTSESSION_BASE_URL", emulator.url)
    # The tests may themselves run in a container: the wording outside one is what they check first.
    monkeypatch.setattr(files, "_CONTAINER_MARKS", ())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "somefile").write_text("not a directory\n")
    return emulator


def reports(tmp_path: Path, junit: str) -> list[str]:
    out = tmp_path / "out"
    return ["--junit", junit, "--json", str(out / "results.json"), "--markdown", str(out / "summary.md")]


def test_run_exits_2_before_triggering_with_one_line_and_the_fix(
    env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--location", "eu-west-1", "--tag", "smoke", *reports(tmp_path, "somefile/junit.xml")]
    )
    assert code == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("testsession: error: reports.junit: cannot write somefile/junit.xml as ")
    assert UID in line
    assert line.endswith(
        "make it writable or choose another path (--junit, --markdown, --json or reports: in the spec)"
    )
    assert "Traceback" not in captured.err
    assert sessions_created(env) == 0
    # The reports that can be written say why nothing ran (reports on every exit).
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["verdict"] == "usage-error" and "cannot write somefile/junit.xml" in results["message"]
    assert (tmp_path / "somefile").read_text() == "not a directory\n"


def test_in_a_container_the_fix_is_the_user_flag(
    env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("container", "podman")  # what podman sets in every container
    code = main(["run", "--location", "eu-west-1", "--tag", "smoke", *reports(tmp_path, "somefile/j.xml")])
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert 'run the container as the owner of the mounted directory: --user "$(id -u):$(id -g)"' in line
    assert sessions_created(env) == 0


def test_in_kubernetes_the_fix_is_a_writable_volume(
    env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert main(["run", "--location", "eu-west-1", *reports(tmp_path, "somefile/sub/j.xml")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "reports.junit: cannot write somefile/sub/j.xml" in line and "runAsUser" in line


def test_wait_checks_before_it_asks_the_service(
    env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An unknown id would be a 404 if the service were asked.
    unknown = "00000000-0000-4000-8000-000000000000"
    assert main(["wait", unknown, *reports(tmp_path, "somefile/junit.xml")]) == 2
    assert "reports.junit: cannot write somefile/junit.xml" in capsys.readouterr().err
    assert env.backend.stats()["requestsTotal"] == 0


def test_detach_writes_no_reports_so_it_checks_none(
    env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--location", "eu-west-1", "--tag", "smoke", "--detach", *reports(tmp_path, "somefile/j.xml")]
    )
    assert code == 0
    assert sessions_created(env) == 1


def test_writable_paths_pass_and_the_probe_leaves_only_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "junit.xml"
    existing = tmp_path / "results.json"
    existing.write_text("old")
    existing.chmod(0o444)  # replaced by a rename, so its own mode does not matter
    check_writable({"junit": target, "json": existing})
    assert target.parent.is_dir() and os.listdir(target.parent) == []
    assert sorted(os.listdir(tmp_path)) == ["a", "results.json"]
    assert existing.read_text() == "old"


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null on this platform")
def test_a_device_node_is_checked_not_replaced() -> None:
    check_writable({"json": Path("/dev/null")})
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_the_first_unwritable_path_is_named(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError) as caught:
        check_writable({"junit": tmp_path / "ok.xml", "markdown": tmp_path / "f" / "s.md"}, environ={})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"reports.markdown: cannot write {tmp_path / 'f' / 's.md'} as {UID} (")
