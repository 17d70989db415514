"""`testsession merge` verifies every part before it judges them (issue 40 item 1, issue 39 item 8).

The parts are real: a checks file of API checks run with `--shard i/2` against a local HTTP server,
one check failing. Each test forges a part as a CI cache or artifact could (its results emptied, its
failed result deleted or replaced, results added, another commit's part, a part twice, a part missing,
a huge file) and asserts what a user checks: exit 2, the error naming the part and what is wrong, and
the reports written, saying the merge was refused (never a passing gate).
"""

from __future__ import annotations

import copy
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import run_here

from runner.cli.merge_command import MAX_PART_BYTES

IDS = [f"5e0c7a1b-0000-4c2d-9e8f-00000000000{i}" for i in range(1, 7)]
FAILING = IDS[0]


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory, web: Any) -> dict[int, dict[str, Any]]:
    """Parts 1/2 and 2/2 of six API checks against the local server (one answers 500: FAILED)."""
    tmp_path = tmp_path_factory.mktemp("parts")
    checks = [
        {
            "id": check_id,
            "name": f"Check {n}",
            "checkType": "API",
            "request": {
                "url": web.url("/status/500" if check_id == FAILING else "/json"),
                "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}],
            },
        }
        for n, check_id in enumerate(IDS, 1)
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    found: dict[int, dict[str, Any]] = {}
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        argv = ["run", "--checks", "checks.yml", "--shard", f"{index}/2", "--no-rca"]
        argv += ["--json", str(out / "results.json"), "--junit", "", "--markdown", ""]
        ran = run_here(argv, _env(tmp_path), tmp_path)
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
        found[index] = {"code": ran.returncode, "data": data, "file": out / "results.json"}
    return found


def _failing_part(parts: dict[int, dict[str, Any]]) -> int:
    return next(
        i
        for i, p in parts.items()
        for s in p["data"]["sessions"]
        for r in s["results"]
        if r["checkId"] == FAILING
    )


def _write(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _merge(tmp_path: Path, *files: Path, flags: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "merged"
    ran = run_here(["merge", *map(str, files), "-o", str(out), *flags], _env(tmp_path), tmp_path)
    results = out / "results.json"
    return ran, json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}


def _refused(ran: Any, report: dict[str, Any], *words: str) -> None:
    """Exit 2, the error naming the part and what is wrong, and the reports saying so."""
    assert ran.returncode == 2, ran.stderr
    for word in words:
        assert word in ran.stderr, (word, ran.stderr)
    assert report["exitCode"] == 2 and report["verdict"] == "usage-error", report
    problem = report["sessions"][0]["problem"]
    assert all(word in problem for word in words), problem


def _forged(parts: dict[int, dict[str, Any]], tmp_path: Path, change: Any) -> tuple[Path, Path]:
    """The part holding the failed check, changed by `change(data)`; and the other part, as it is."""
    index = _failing_part(parts)
    data = copy.deepcopy(parts[index]["data"])
    change(data)
    return _write(tmp_path, f"forged{index}.json", data), parts[3 - index]["file"]


def _results(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for s in data["sessions"] for r in s["results"]]


def test_the_real_parts_merge_to_the_failing_run(tmp_path: Path, parts: dict[int, dict[str, Any]]) -> None:
    assert {p["data"]["shard"]["checks"] for p in parts.values()} == {3}
    ran, report = _merge(tmp_path, parts[1]["file"], parts[2]["file"])
    assert ran.returncode == 1 and report["counts"]["failed"] == 1 and report["counts"]["total"] == 6


def test_a_part_with_its_results_emptied_is_refused(tmp_path: Path, parts: dict[int, dict[str, Any]]) -> None:
    def empty(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            session["results"] = []

    forged, other = _forged(parts, tmp_path, empty)
    ran, report = _merge(tmp_path, other, forged)
    _refused(ran, report, forged.name, "holds 0 results", "3 checks")


def test_a_part_with_its_failed_result_deleted_is_refused(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    def delete(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            session["results"] = [r for r in session["results"] if r["checkId"] != FAILING]

    forged, other = _forged(parts, tmp_path, delete)
    ran, report = _merge(tmp_path, forged, other)
    _refused(ran, report, forged.name, "holds 2 results", "3 checks")


def test_a_failed_result_replaced_by_a_copy_of_a_passing_one_is_refused(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    def same_part(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            passing = next(r for r in session["results"] if r["checkId"] != FAILING)
            session["results"] = [passing if r["checkId"] == FAILING else r for r in session["results"]]

    forged, other = _forged(parts, tmp_path, same_part)
    ran, report = _merge(tmp_path, forged, other)
    _refused(ran, report, forged.name, "more than one result")

    # A passing result of the other part in its place: each id once, but not this part's checks.
    index = _failing_part(parts)
    passing = _results(parts[3 - index]["data"])[0]

    def other_part(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            session["results"] = [passing if r["checkId"] == FAILING else r for r in session["results"]]

    forged, other = _forged(parts, tmp_path, other_part)
    ran, report = _merge(tmp_path, forged, other)
    _refused(ran, report, forged.name, "not the checks its header names")


def test_results_of_unknown_checks_added_are_refused(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    def add(data: dict[str, Any]) -> None:
        template = data["sessions"][0]["results"][0]
        extra = [
            {**template, "checkId": f"unknown-{i}", "status": "PASSED", "verdict": "passed"}
            for i in range(50)
        ]
        data["sessions"][0]["results"] += extra

    forged, other = _forged(parts, tmp_path, add)
    ran, report = _merge(tmp_path, forged, other)
    _refused(ran, report, forged.name, "holds 53 results")


def test_a_part_header_and_results_changed_together_is_refused(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    """The failed result deleted and the part's own fingerprint and count made to fit: the parts
    together are no longer the check set the headers name."""
    from runner.job.merge_check import result_keys
    from runner.job.outcome import Outcome
    from runner.job.shard import key_fingerprint

    def delete_and_fit(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            session["results"] = [r for r in session["results"] if r["checkId"] != FAILING]
        keys, _ = result_keys(Outcome.model_validate(data))
        data["shard"].update(own=key_fingerprint(keys), checks=len(keys), matched=5)

    forged, other = _forged(parts, tmp_path, delete_and_fit)
    other_data = json.loads(other.read_text(encoding="utf-8"))
    other_data["shard"]["matched"] = 5
    ran, report = _merge(tmp_path, forged, _write(tmp_path, "other.json", other_data))
    _refused(ran, report, "not check set")


def test_a_part_over_the_size_bound_is_refused_before_it_is_read(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    index = _failing_part(parts)
    data = copy.deepcopy(parts[index]["data"])
    template = _results(data)[0]
    line = json.dumps({**template, "checkId": "unknown", "status": "PASSED", "verdict": "passed"})
    head, _, tail = json.dumps(data).partition('"results": [')
    huge = tmp_path / "huge.json"
    with open(huge, "w", encoding="utf-8") as handle:
        handle.write(head + '"results": [')
        handle.write((line + ",") * (MAX_PART_BYTES // len(line) + 10))
        handle.write(tail)
    assert huge.stat().st_size > MAX_PART_BYTES
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    ran, report = _merge(tmp_path, huge, parts[3 - index]["file"])
    assert time.monotonic() - started < 10  # a margin for a loaded machine; the memory says "not read"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 20 * 1024  # KiB: not read
    _refused(ran, report, "huge.json", "MiB", "not read")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # nothing writes to it: a read would block for ever
    ran, report = _merge(tmp_path, fifo, parts[3 - index]["file"])
    _refused(ran, report, "fifo.json", "not a regular file")


def test_parts_of_two_commits_are_refused_unless_allowed(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    data = copy.deepcopy(parts[2]["data"])
    data["commit"]["commitId"] = "0" * 40
    other = _write(tmp_path, "other-commit.json", data)
    ran, report = _merge(tmp_path, parts[1]["file"], other)
    _refused(ran, report, "different commits", "other-commit.json", "0" * 40)
    allowed, merged = _merge(tmp_path, parts[1]["file"], other, flags=("--allow-mixed-commits",))
    assert allowed.returncode == 1 and merged["counts"]["total"] == 6
    assert merged["commit"].get("commitId") is None  # not the first part's commit


def test_a_part_given_twice_and_a_part_missing_write_the_reports(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    twice, report = _merge(tmp_path, parts[1]["file"], parts[1]["file"], parts[2]["file"])
    _refused(twice, report, "shard 1/2", "given twice")
    missing, report = _merge(tmp_path, parts[2]["file"])
    _refused(missing, report, "shard 1/2", "missing")
    summary = (tmp_path / "merged" / "summary.md").read_text(encoding="utf-8")
    assert "missing" in summary and "1/2" in summary
    assert "merge refused" in (tmp_path / "merged" / "junit.xml").read_text(encoding="utf-8")
    nowhere, report = _merge(tmp_path, parts[1]["file"], tmp_path / "nowhere.json")
    _refused(nowhere, report, "nowhere.json", "no such file")


def test_a_part_cut_short_may_hold_fewer_results_and_the_merge_never_passes(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    def timed_out(data: dict[str, Any]) -> None:
        for session in data["sessions"]:
            session["results"] = [r for r in session["results"] if r["checkId"] != FAILING]
        data.update(exitCode=3, verdict="timeout", partial=True, message="the deadline passed")

    forged, other = _forged(parts, tmp_path, timed_out)
    ran, report = _merge(tmp_path, forged, other)
    assert ran.returncode == 3 and report["exitCode"] == 3 and report["verdict"] == "timeout"


def test_a_part_whose_header_does_not_name_its_checks_is_refused(
    tmp_path: Path, parts: dict[int, dict[str, Any]]
) -> None:
    data = copy.deepcopy(parts[1]["data"])
    del data["shard"]["own"]  # as an older testsession wrote it
    ran, report = _merge(tmp_path, _write(tmp_path, "old.json", data), parts[2]["file"])
    _refused(ran, report, "old.json", "does not name its own checks")
