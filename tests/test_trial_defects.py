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


# --- 7. the docs and --help say what runs -----------------------------------------------------------


def _shown(readme_line: str, real: list[str]) -> bool:
    """The README's line is one the run printed, as the README cuts a long line: `start…` or
    `start… [tag]` (the middle cut)."""
    if "…" not in readme_line:
        return readme_line in real
    start, _, end = readme_line.partition("…")
    return any(
        line.startswith(start) and line.endswith(end) and len(line) > len(readme_line) for line in real
    )


def test_the_readmes_demo_output_is_what_the_demo_prints(tmp_path: Path) -> None:
    import re

    from doc_blocks import README, code_blocks
    from helpers import fast_world

    (block,) = code_blocks(README, "## Watching a run", "text")
    world = fast_world(tmp_path)
    spec = Path(__file__).resolve().parent.parent / "examples" / "testsession.yml"
    env = {**bare_env(), "NO_COLOR": "1"}
    ran = run_here(["run", str(spec), "--emulator", "--world", str(world)], env, tmp_path)
    assert ran.returncode == 1, ran.stderr
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    took = re.compile(r"finished: (\w+) after [0-9.]+ s")  # the real time: the world here runs 40 x faster

    def plain(line: str) -> str:
        return took.sub(r"finished: \1 after <n> s", uuid.sub("<id>", line))

    real = [plain(line) for line in ran.stdout.splitlines()]
    for line in block.splitlines():
        if line == "..." or line.startswith("DEMO "):  # elided; the demo's banner (--world has none)
            continue
        assert _shown(plain(line), real), f"README shows {line!r}; the run printed:\n{ran.stdout}"


def test_the_help_and_docs_say_what_runs(tmp_path: Path) -> None:
    import fnmatch
    import re

    from doc_blocks import DOCS, code_blocks

    raw = run_here(["run", "--help"], bare_env(), tmp_path).stdout
    help_text = " ".join(raw.split())
    found = re.search(r"^ +--state PATH +(.*?)^ +--detach", raw, re.DOTALL | re.MULTILINE)
    assert found and found.group(1).startswith("with --checks"), raw  # a local run's state file
    # A run whose reader goes away exits with the gate's code and writes its reports (test_closed_stdout).
    assert "`run` goes on to the gate's code and reports" in help_text
    # Shards: what each part writes is what the merge reads.
    (block,) = code_blocks(DOCS / "ci.md", "## Split a run over CI jobs", "sh")
    written = re.search(r"--json (\S+)", block)
    read = re.search(r"merge (\S+)", block)
    assert written and read and fnmatch.fnmatch(written.group(1), read.group(1)), block
    # `checks export` writes a checks file unless --format world.
    api = (DOCS / "api-commands.md").read_text(encoding="utf-8")
    export = next(line for line in api.splitlines() if line.startswith("testsession checks export"))
    assert "[-o world.yml]" not in export and "--format world" in export
    # Browser checks run now: no page says they fail closed for want of a runner.
    checkly = (DOCS / "checkly-project.md").read_text(encoding="utf-8")
    emulator = " ".join((DOCS / "emulator.md").read_text(encoding="utf-8").split())
    assert "Until it is merged, a browser check fails closed" not in checkly
    assert "A BROWSER, MULTI_STEP, ... check is kept and fails closed" not in emulator
    assert "a check of any other type (BROWSER, MULTI_STEP, ...) is scripted only" not in emulator


# --- 6. validate knows a checks file ----------------------------------------------------------------


def test_validate_checks_a_checks_file_offline_as_run_reads_it(tmp_path: Path) -> None:
    good = [
        {"name": "Home", "checkType": "API", "request": {"url": "http://127.0.0.1:9/", "assertions": []}},
        {"name": "Login", "checkType": "BROWSER"},  # no script: it cannot run here
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(good), encoding="utf-8")
    (tmp_path / "checks.json").write_text(json.dumps({"checks": good[:1], "variables": []}), encoding="utf-8")
    ran = run_here(["validate", "checks.yml", "checks.json"], bare_env(), tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "checks.yml: ok (a checks file: 2 checks, 1 run here, 1 cannot" in ran.stdout
    assert "checks.json: ok (a checks file: 1 check, 1 run here)" in ran.stdout
    assert "Login: cannot run on this machine: BROWSER check without a script" in ran.stderr
    assert "expected a mapping" not in ran.stderr and "unknown field" not in ran.stderr
    bad = [{"name": "Home", "checkType": "API"}]  # an API check without its request
    (tmp_path / "bad.yml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    ran = run_here(["validate", "bad.yml"], bare_env(), tmp_path)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.splitlines() == [
        "bad.yml:1: [0].request: required: what to send (url:, assertions: ... for API)",
        "bad.yml: 1 problem (a checks file)",
    ]
    # What `run --checks` says of the same file.
    run_err = run(tmp_path, "--checks", "bad.yml")[2]
    assert "[0].request: required: what to send" in run_err


# --- 5. an internal error is exit 4 with its traceback, never the user's configuration error ------------


def test_an_internal_error_of_the_executor_is_exit_4_with_its_traceback(
    web: HttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.checks.protocols import protocol_for

    http = protocol_for("API")
    assert http is not None

    def broken(*_args: object, **_kwargs: object) -> None:  # a bug: a file the package should ship
        raise FileNotFoundError(2, "No such file or directory", "/site-packages/runner/fixtures.cjs")

    monkeypatch.setattr(type(http), "perform", broken)
    checks = [{"name": "Home", "checkType": "API", "request": {"url": web.url("/json")}}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    ran = run_here(["run", "--checks", "checks.yml"], bare_env(), tmp_path)  # with its analysis
    assert ran.returncode == 4, ran.stdout + ran.stderr
    assert "Traceback (most recent call last)" in ran.stderr and "in broken" in ran.stderr
    assert "FileNotFoundError" in ran.stderr
    assert "CONFIGURATION ERROR" not in ran.stdout + ran.stderr
    assert "This is a bug in testsession" in ran.stdout + ran.stderr
    data = json.loads((tmp_path / "testsession-reports" / "results.json").read_text(encoding="utf-8"))
    assert data["exitCode"] == 4 and data["verdict"] == "service-error"
    assert "internal error of the local executor" in data["message"]
    summary = (tmp_path / "testsession-reports" / "summary.md").read_text(encoding="utf-8")
    assert "CONFIGURATION ERROR" not in summary and "internal error of the local executor" in summary
