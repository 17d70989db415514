"""The small words of a local run, as a newcomer reads them (issue 28, item 6)."""

from __future__ import annotations

import io
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from helpers import run_here

from runner.ci.console import Console
from runner.emulator.core.world import WorldError, parse_world_text
from runner.job.known import history
from runner.job.outcome import ResultOutcome


def test_a_running_check_has_no_dash_and_counts_its_attempts() -> None:
    result = ResultOutcome(id="r", name="Payments API", checkType="API", runLocation="local",
                           status="RUNNING", verdict="running", attempts=2)  # fmt: skip
    line = Console(stream=io.StringIO(), environ={}).result_line(result, "still running after 2 s")
    assert line.endswith("Payments API (API, local) (2 attempts so far) still running after 2 s")
    assert " -" not in line


def test_an_error_seen_under_a_second_before_is_known_without_an_age() -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    result = ResultOutcome(id="r", name="A", status="FAILED", verdict="failed", known=True,
                           firstSeen=start - timedelta(milliseconds=300))  # fmt: skip
    assert history(result, start).tag == "known"
    result.firstSeen = start - timedelta(seconds=3)
    assert history(result, start).tag == "known since 3 seconds"


def test_a_short_key_says_the_rule() -> None:
    try:
        parse_world_text("accounts: [{id: a, keys: [{key: local}]}]", environ={})
    except WorldError as exc:
        assert exc.problems == ["world:1: accounts[0].keys[0].key: at least 8 characters"]
    else:
        raise AssertionError("a 5-character key loaded")


def test_validate_names_the_command_of_a_world_or_a_checks_file(tmp_path: Path) -> None:
    (tmp_path / "world.yml").write_text("settings: {}\naccounts: []\n", encoding="utf-8")
    (tmp_path / "checks.yml").write_text("- {name: A, request: {url: 'http://x'}}\n", encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "")}
    ran = run_here(["validate", "world.yml", "checks.yml"], env, tmp_path)
    assert ran.returncode == 2
    assert (
        "world.yml: this looks like a world file: check it with "
        "`testsession emulator --check --world world.yml`" in ran.stderr
    )
    assert "checks.yml: ok (a checks file: 1 check, 1 run here)" in ran.stdout  # validated as one
