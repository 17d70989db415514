"""What a new user's trial of the README found (README commands run from a fresh clone): each test
is a place where the tool said something other than what it did."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from runner.ci.console import _history_details
from runner.cli.main import main
from runner.core import clock
from runner.core.exitcodes import ExitCode
from runner.job.history import describe, describe_unstable
from runner.job.outcome import HistoryOutcome


def checks_file(path: Path, quarantined: str) -> Path:
    """Two checks (never run: validate is offline) and one quarantine entry naming `quarantined`."""
    until = (clock.today() + timedelta(days=5)).isoformat()
    data = {
        "checks": [
            {"name": name, "checkType": "TCP", "request": {"hostname": "127.0.0.1", "port": 1}}
            for name in ("Line service", "Cart API")
        ],
        "quarantine": [{"check": quarantined, "owner": "@ops", "until": until}],
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_validate_refuses_the_quarantine_entry_that_run_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`validate` said ok for an entry naming no check; `run` then exited 2 on it."""
    bad = checks_file(tmp_path / "bad.yml", "Line servce")
    assert main(["validate", str(bad)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "quarantine[0].check: 'Line servce' names no check of this run" in err
    assert "did you mean 'Line service'?" in err and "Traceback" not in err
    good = checks_file(tmp_path / "good.yml", "Line service")
    assert main(["validate", str(good)]) == ExitCode.OK
    assert "ok (a checks file: 2 checks" in capsys.readouterr().out


def test_the_build_timeout_help_names_the_exit_code_a_build_timeout_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --help` said "before exit 4"; a build whose URL does not answer exits 6."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    said = shown.split("--build-timeout SECONDS ", 1)[1].split(" --build-reuse", 1)[0]
    assert re.search(rf"before exit {int(ExitCode.BUILD_NOT_STARTED)}\b", said), said


def test_history_wording_on_a_first_run_a_degraded_check_and_an_unstable_one() -> None:
    first = HistoryOutcome(runs=1, failed=1, recent="X")
    assert _history_details(first) == "its first recorded run"  # no lone, unexplained "X"
    failing = HistoryOutcome(runs=3, failed=2, passed=1, unstable=True, recent=".XX")
    assert _history_details(failing) == "failed 2 of the last 3 runs; flaky; recent runs (oldest first): .XX"
    degraded = HistoryOutcome(runs=3, passed=3, degraded=3, recent="ddd")
    assert describe(degraded) == "degraded 3 of the last 3 runs"  # was "failed 0 of the last 3 runs"
    once = HistoryOutcome(runs=1, passed=1, flaky=1, unstable=True, recent="f")
    assert describe_unstable(once) == "passed its only recorded run only on a retry"
    many = HistoryOutcome(runs=20, passed=17, failed=3, flaky=2, unstable=True)
    assert describe_unstable(many) == "passed 17 of the last 20 runs, 2 only on a retry"  # no (..(..))


def test_validate_refuses_a_spec_quarantine_that_run_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spec's entry ending more than 90 days ahead: `run` exits 2 on it, so `validate` does."""
    until = (clock.today() + timedelta(days=200)).isoformat()
    spec = tmp_path / "spec.yml"
    spec.write_text(
        f"name: x\nrunLocation: eu-west-1\nquarantine:\n  - {{check: A, owner: '@o', until: {until}}}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(spec)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"quarantine[0].until: {until} is more than 90 days ahead" in err and "1 problem" in err
