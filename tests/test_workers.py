"""`run --checks` with worker processes (job/workers.py, TESTSESSION_WORKERS): real workers run the
engine against a real local server and hand their attempts back; what the user sees is the same run,
and a worker never outlives it, crashes closed and stops with a signal."""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer
from helpers import child_env

from runner.core.errors import UsageError
from runner.job.workers import MAX_FRAME, parse_workers, read_frame, usable_cpus, workers_for

WORKER_MARK = "runner.job.workers"
LIMIT = 20.0  # seconds any phase of a run may take on a loaded machine


def _checks(web: HttpServer, count: int, path: str) -> list[dict[str, Any]]:
    return [
        {
            "name": f"Check {n}",
            "checkType": "API",
            "request": {
                "method": "GET",
                "url": web.url(f"{path}{'&' if '?' in path else '?'}n={n}"),
                "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}],
            },
        }
        for n in range(count)
    ]


class Run:
    """`python -m runner run --checks checks.yml` with `workers` worker processes."""

    def __init__(self, tmp_path: Path, checks: list[dict[str, Any]], workers: int) -> None:
        (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
        self.reports = tmp_path / "reports"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", "--checks", "checks.yml", "--no-rca",
             "--json", str(self.reports / "results.json"), "--junit", str(self.reports / "junit.xml")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            env=child_env(TESTSESSION_WORKERS=str(workers)), start_new_session=True,
        )  # fmt: skip
        self.seen: set[int] = set()  # every worker process seen while the run went

    def workers(self) -> list[int]:
        """The run's worker processes now (its children running the worker's code)."""
        found = []
        for children in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            for pid in children.read_text().split():
                try:
                    command = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if WORKER_MARK.encode() in command:
                    found.append(int(pid))
        self.seen.update(found)
        return found

    def wait_for_workers(self, count: int) -> list[int]:
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline and self.proc.poll() is None:
            found = self.workers()
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"{count} worker processes never ran")

    def finish(self) -> tuple[int, str, dict[str, Any]]:
        deadline = time.monotonic() + LIMIT
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.workers()
            time.sleep(0.02)
        _, err = self.proc.communicate(timeout=LIMIT)
        data = json.loads((self.reports / "results.json").read_text(encoding="utf-8"))
        return self.proc.returncode, err, data

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.close()


def _alive(pid: int) -> bool:
    """The process runs (a zombie, or a pid gone, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _gone(pids: set[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(_alive(pid) for pid in pids)


def test_workers_run_the_checks_and_none_is_left_after_the_run(
    tmp_path: Path, web: HttpServer, runs: list[Run]
) -> None:
    # Among the passes, late in the session (the workers' share): a failure, with its evidence and
    # group, and a retried check, its attempts folded into one flaky result.
    retry = {"type": "FIXED", "maxRetries": 1, "baseBackoffSeconds": 0}
    checks = [
        *_checks(web, 20, "/slow?ms=50"),
        {**_checks(web, 1, "/status/503")[0], "name": "Down"},
        {**_checks(web, 1, "/flaky?key=workers&fail=1")[0], "name": "Flaky", "retryStrategy": retry},
    ]
    run = Run(tmp_path, checks, workers=2)
    runs.append(run)
    run.wait_for_workers(2)
    code, err, data = run.finish()
    assert code == 1, err
    counts = data["counts"]
    assert (counts["total"], counts["passed"], counts["failed"], counts["flaky"]) == (22, 20, 1, 1)
    down = next(r for r in data["sessions"][0]["results"] if r["name"] == "Down")
    assert "503" in down["error"] and down["errorGroupIds"] and down["known"] is False
    assert len(run.seen) == 2 and _gone(run.seen, 1.0)
    assert (tmp_path / "reports" / "junit.xml").exists()


def test_a_killed_worker_fails_its_checks_closed(tmp_path: Path, web: HttpServer, runs: list[Run]) -> None:
    # Slow checks: the worker holds some when it dies; the run's own threads end theirs.
    run = Run(tmp_path, _checks(web, 24, "/slow?ms=1500"), workers=1)
    runs.append(run)
    (worker,) = run.wait_for_workers(1)
    deadline = time.monotonic() + LIMIT
    while _threads(worker) < 4 and time.monotonic() < deadline:  # its checks are under way
        time.sleep(0.02)
    subprocess.run(["kill", "-KILL", str(worker)], check=True)
    code, err, data = run.finish()
    verdicts = [r["verdict"] for r in data["sessions"][0]["results"]]
    errors = [r["error"] for r in data["sessions"][0]["results"] if r["verdict"] == "error"]
    assert code == 4 and data["exitCode"] == 4, err  # an internal error: never 0
    assert len(verdicts) == 24 and "passed" in verdicts and errors
    assert all("worker process 1 ended before this check did" in e for e in errors)
    assert set(verdicts) == {"passed", "error"}
    assert (tmp_path / "reports" / "junit.xml").exists()


def test_a_worker_loads_the_engine_not_the_checks_files_loader(
    tmp_path: Path, web: HttpServer, runs: list[Run]
) -> None:
    # Its memory: a worker is sent each check's definition as data, so it never loads the checks
    # file's modules or yaml (its C extension would be mapped), only the engine (pycurl).
    run = Run(tmp_path, _checks(web, 24, "/slow?ms=300"), workers=1)
    runs.append(run)
    (worker,) = run.wait_for_workers(1)
    deadline = time.monotonic() + LIMIT
    maps = ""
    while "pycurl" not in maps and time.monotonic() < deadline:  # its checks are under way
        time.sleep(0.02)
        maps = Path(f"/proc/{worker}/maps").read_text()
    code, err, _data = run.finish()
    assert code == 0, err
    assert "pycurl" in maps and "_yaml" not in maps


def _threads(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(status.split("\nThreads:\t", 1)[1].split()[0])


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"])
def test_a_signal_ends_the_workers_with_partial_reports(
    tmp_path: Path, web: HttpServer, runs: list[Run], sig: signal.Signals, code: int
) -> None:
    run = Run(tmp_path, _checks(web, 30, "/slow?ms=20000"), workers=2)
    runs.append(run)
    run.wait_for_workers(2)
    time.sleep(0.3)
    signalled = time.monotonic()
    if sig is signal.SIGINT:  # Ctrl-C in a terminal: the run's whole process group, workers too
        os.killpg(run.proc.pid, sig)
    else:  # a CI's cancel: the run alone
        run.proc.send_signal(sig)
    exit_code, err, data = run.finish()
    assert exit_code == code and data["partial"], err
    assert time.monotonic() - signalled < 10 and _gone(run.seen, 1.0)
    assert len(data["sessions"][0]["results"]) == 30


def test_a_worker_whose_run_dies_exits(tmp_path: Path, web: HttpServer, runs: list[Run]) -> None:
    run = Run(tmp_path, _checks(web, 30, "/slow?ms=20000"), workers=2)
    runs.append(run)
    workers = set(run.wait_for_workers(2))
    run.proc.kill()  # SIGKILL: nothing of the run says goodbye; the workers' stdin closes
    run.proc.wait(5)
    assert _gone(workers, 5.0)


def test_the_decision_and_the_setting() -> None:
    assert workers_for(10_000, None, cpus=2) == 1 and workers_for(10_000, None, cpus=4) == 3
    assert workers_for(10_000, None, cpus=64) == 3  # unasked: the run's own thread is the longest path
    assert 1 <= usable_cpus() <= (os.cpu_count() or 1)
    assert workers_for(10_000, None, cpus=1) == 0  # one CPU: nothing to gain
    assert workers_for(1, None, cpus=2) == 0 and workers_for(1_000, None, cpus=8) == 0  # small runs
    assert workers_for(10_000, 0, cpus=8) == 0 and workers_for(3, 2, cpus=1) == 2  # the user's choice
    assert workers_for(0, 2, cpus=8) == 0
    assert parse_workers({}) is None and parse_workers({"TESTSESSION_WORKERS": " 3 "}) == 3
    for bad in ("two", "-1", "99"):
        with pytest.raises(UsageError, match=r"TESTSESSION_WORKERS: .* allowed: 0 to 8"):
            parse_workers({"TESTSESSION_WORKERS": bad})


def test_a_frame_over_the_limit_is_refused_before_it_is_read() -> None:
    stream = io.BytesIO(struct.pack(">I", MAX_FRAME + 1) + b"x" * 16)
    with pytest.raises(ValueError, match="over the"):
        read_frame(stream)
    with pytest.raises(ValueError, match="cut"):
        read_frame(io.BytesIO(struct.pack(">I", 100) + b"short"))
