"""A check's evidence folder holds only this run's files (the newcomer's trial, issue 39): the
screenshots and traces of an earlier failing run stayed beside a passing run's reports, and an
uploaded testsession-reports/ paired old traces (which may hold what a script typed) with a new
verdict."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from runner.checks.failures import NotRun
from runner.checks.protocols import browser
from runner.models.check_definitions import parse_check_definition


def _check(check_id: str) -> object:
    return parse_check_definition(
        {"id": check_id, "name": "Sign in", "checkType": "BROWSER", "script": "// a script"}
    )


def test_a_checks_first_attempt_removes_an_earlier_runs_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "OPTIONS", dataclasses.replace(browser.OPTIONS, artifacts_dir=tmp_path))
    check_id = str(uuid.uuid4())
    stale = tmp_path / check_id / "attempt-1" / "test-1" / "trace.zip"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an earlier run's trace")
    other = tmp_path / "another-check" / "attempt-1" / "trace.zip"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"another check's")

    first = browser.attempt_dir(_check(check_id), 1)  # type: ignore[arg-type]
    assert first == (tmp_path / check_id / "attempt-1").resolve()
    assert not stale.exists() and other.exists()
    first.mkdir(parents=True)
    (first / "new.png").write_bytes(b"this run's")
    second = browser.attempt_dir(_check(check_id), 2)  # type: ignore[arg-type]
    assert second.name == "attempt-2" and (first / "new.png").exists()  # a retry keeps the first's


def test_a_link_planted_as_the_check_folder_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "OPTIONS", dataclasses.replace(browser.OPTIONS, artifacts_dir=tmp_path))
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("theirs")
    check_id = str(uuid.uuid4())
    (tmp_path / check_id).symlink_to(victim)
    with pytest.raises(NotRun):
        browser.attempt_dir(_check(check_id), 1)  # type: ignore[arg-type]
    assert (victim / "keep.txt").read_text() == "theirs"
