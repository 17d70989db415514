"""The defects a new user's trial found (issue 39, its points 4-9; issue 40, point 8): each as the user
met it, through the command they ran, against real local servers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer, start_http
from helpers import run_here


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = start_http()
    try:
        yield server
    finally:
        server.stop()


def bare_env() -> dict[str, str]:
    """A newcomer's shell: no TESTSESSION_* variable, not in CI."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


def run(tmp_path: Path, *argv: str, out: str = "testsession-reports") -> tuple[int, str, str, dict[str, Any]]:
    ran = run_here(["run", *argv, "--no-rca"], bare_env(), tmp_path)
    results = tmp_path / out / "results.json"
    data = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    return ran.returncode, ran.stdout, ran.stderr, data


def results_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for s in data.get("sessions", []) for r in s["results"]]


# --- 1. shards of checks without `id:` ------------------------------------------------------------


def test_shards_of_checks_without_ids_run_and_merge(web: HttpServer, tmp_path: Path) -> None:
    checks = [
        {"name": name, "checkType": "API", "request": {"url": web.url(path), "method": "GET"}}
        for name, path in [("Home", "/json"), ("Gone", "/status/404"), ("Echo", "/echo"), ("Home", "/json")]
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, _, err, whole = run(tmp_path, "--checks", "checks.yml", "--json", "whole/results.json", out="whole")
    assert code == 1, err
    every = sorted(r["checkId"] for r in results_of(whole))
    assert len(set(every)) == 4  # the two named Home are two checks
    again = run(tmp_path, "--checks", "checks.yml", "--json", "again/results.json", out="again")[3]
    assert sorted(r["checkId"] for r in results_of(again)) == every  # the same ids in every run
    parts = []
    for index in (1, 2):
        flags = ["--shard", f"{index}/2", "--json", f"p{index}/results.json"]
        code, _, err, part = run(tmp_path, "--checks", "checks.yml", *flags, out=f"p{index}")
        assert "Traceback" not in err and code in (0, 1), err
        parts.append(part)
    assert sorted(r["checkId"] for p in parts for r in results_of(p)) == every
    merged = run_here(["merge", "p1/results.json", "p2/results.json", "-o", "m"], bare_env(), tmp_path)
    assert merged.returncode == 1, merged.stderr
    merged_ids = [r["checkId"] for r in results_of(json.loads((tmp_path / "m" / "results.json").read_text()))]
    assert sorted(merged_ids) == every
    # The id a run gave a check is the one --check-id takes.
    gone = next(r["checkId"] for r in results_of(whole) if r["name"] == "Gone")
    flags = ["--check-id", gone, "--json", "o/results.json"]
    code, _, err, one = run(tmp_path, "--checks", "checks.yml", *flags, out="o")
    assert code == 1 and [r["name"] for r in results_of(one)] == ["Gone"], err


def test_a_shard_of_checks_whose_ids_are_not_uuids_is_a_usage_error(web: HttpServer, tmp_path: Path) -> None:
    checks = [{"id": "home", "name": "Home", "checkType": "API", "request": {"url": web.url("/json")}}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, _, err, _ = run(tmp_path, "--checks", "checks.yml", "--shard", "1/2")
    assert code == 2 and "Traceback" not in err
    assert "--shard" in err and "'home'" in err


# --- 3. a degraded result says why -----------------------------------------------------------------


def test_a_degraded_result_names_its_threshold_and_its_time_in_every_report(
    web: HttpServer, tmp_path: Path
) -> None:
    checks = [
        {
            "name": "Slow page",
            "checkType": "API",
            "degradedResponseTime": 100,
            "maxResponseTime": 20000,
            "request": {"url": web.url("/slow?ms=300"), "method": "GET"},
        }
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, out, err, data = run(tmp_path, "--checks", "checks.yml", "--fail-on-degraded")
    assert code == 1, err
    (result,) = results_of(data)
    assert result["verdict"] == "degraded"
    error = result["error"] or ""
    assert error.startswith("response time ") and "exceeded the degradedResponseTime of 100 ms" in error
    took = int(error.split()[2].replace(",", ""))
    assert 300 <= took < 20000
    summary = (tmp_path / "testsession-reports" / "summary.md").read_text(encoding="utf-8")
    junit = (tmp_path / "testsession-reports" / "junit.xml").read_text(encoding="utf-8")
    for text in (summary, junit, out + err):
        assert "degradedResponseTime of 100 ms" in text, text
    assert "No error message was reported" not in summary


# --- 8. every failure keeps its reason, however many error groups -------------------------------------


def _word(n: int) -> str:
    """A distinct word of letters for each n (digits are cleaned out of a group's message)."""
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return "missing" + letters


def test_every_failure_keeps_its_reason_past_200_error_groups(web: HttpServer, tmp_path: Path) -> None:
    count = 230
    checks = [
        {
            "name": f"Check {i}",
            "checkType": "API",
            "request": {
                "url": web.url("/json"),
                "assertions": [{"source": "TEXT_BODY", "comparison": "CONTAINS", "target": _word(i)}],
            },
        }
        for i in range(count)
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, _, err, data = run(tmp_path, "--checks", "checks.yml")
    assert code == 1, err
    results = results_of(data)
    assert len(results) == count and all(r["verdict"] == "failed" for r in results)
    assert len({g for r in results for g in r["errorGroupIds"]}) > 200  # past the groups a run reads
    for result in results:
        word = _word(int(result["name"].split()[1]))
        assert result["error"] and word in result["error"], result
    junit = (tmp_path / "testsession-reports" / "junit.xml").read_text(encoding="utf-8")
    assert "could not run to a verdict" not in junit and "without an error message" not in junit


# --- 4. a build that never becomes healthy: the build did not start --------------------------------


def test_a_build_that_does_not_start_has_its_own_headline_exit_code_and_reports(
    web: HttpServer, tmp_path: Path
) -> None:
    checks = [{"name": "Home", "checkType": "API", "request": {"url": web.url("/json")}}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    dead = "http://127.0.0.1:9/health"  # the discard port: nothing listens
    argv = ["--checks", "checks.yml", "--build-command", "echo booting; exit 3", "--build-url", dead]
    code, out, err, data = run(tmp_path, *argv, "--build-timeout", "5")
    assert code == 6 and "Traceback" not in err, out + err
    assert data["verdict"] == "build-not-started" and data["exitCode"] == 6
    assert "exited with code 3 before http://127.0.0.1:9/health answered" in data["message"]
    summary = (tmp_path / "testsession-reports" / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ⚠️ The build did not start") and "Service error" not in summary
    junit = (tmp_path / "testsession-reports" / "junit.xml").read_text(encoding="utf-8")
    assert "exited with code 3" in junit
    assert "6 BUILD_NOT_STARTED" in run_here(["run", "--help"], bare_env(), tmp_path).stdout
