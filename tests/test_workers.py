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
            try:
                listed = children.read_text().split()
            except OSError:  # that thread (or the run) ended between the listing and the read
                continue
            for pid in listed:
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


@pytest.mark.parametrize(
    "sig, code, group",
    [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, True), (signal.SIGTERM, 143, True)],
    ids=["TERM", "INT", "TERM-group"],
)
def test_a_signal_ends_the_workers_with_partial_reports(
    tmp_path: Path, web: HttpServer, runs: list[Run], sig: signal.Signals, code: int, group: bool
) -> None:
    run = Run(tmp_path, _checks(web, 30, "/slow?ms=20000"), workers=2)
    runs.append(run)
    run.wait_for_workers(2)
    time.sleep(0.3)
    signalled = time.monotonic()
    if group:  # Ctrl-C in a terminal, `timeout`, a CI that ends the job's group: the workers too
        os.killpg(run.proc.pid, sig)
    else:  # a CI's cancel: the run alone
        run.proc.send_signal(sig)
    exit_code, err, data = run.finish()
    assert exit_code == code and data["partial"], err
    assert time.monotonic() - signalled < 10 and _gone(run.seen, 1.0)
    results = data["sessions"][0]["results"]
    assert len(results) == 30
    # A worker the signal ended did not crash: its checks are not internal errors ("a bug in
    # testsession", an error group in the state file), as a TERM to the group made them before.
    assert {r["verdict"] for r in results} <= {"running", "cancelled"}, {r["error"] for r in results}
    assert "bug in testsession" not in err


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
    # "\u00b2" (a superscript 2) was a ValueError's traceback, exit 4
    for bad in ("two", "-1", "99", "\u00b2", "\u0663"):
        with pytest.raises(UsageError, match=r"TESTSESSION_WORKERS: .* allowed: 0 to 8"):
            parse_workers({"TESTSESSION_WORKERS": bad})


def test_a_frame_over_the_limit_is_refused_before_it_is_read() -> None:
    stream = io.BytesIO(struct.pack(">I", MAX_FRAME + 1) + b"x" * 16)
    with pytest.raises(ValueError, match="over the"):
        read_frame(stream)
    with pytest.raises(ValueError, match="cut"):
        read_frame(io.BytesIO(struct.pack(">I", 100) + b"short"))


def test_a_worker_imports_the_run_s_own_package_whatever_the_folder_holds(
    tmp_path: Path, web: HttpServer
) -> None:
    # The installed `testsession` run in a repository that has a `runner/` package of its own (a
    # common name): the run imports the installed package, and so must its workers. Before, a worker
    # (`python -c`, the folder first on its path) imported the repository's and ran its code: exit 4.
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "__init__.py").write_text(
        "import pathlib\npathlib.Path('imported').write_text('the folder runner package ran')\n"
        "raise SystemExit(1)\n",
        encoding="utf-8",
    )
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(_checks(web, 30, "/slow?ms=50")), encoding="utf-8")
    ran = subprocess.run(
        [str(Path(sys.executable).parent / "testsession"), "run", "--checks", "checks.yml", "--no-rca",
         "--json", "o/r.json"],
        capture_output=True, text=True, cwd=tmp_path, env=child_env(TESTSESSION_WORKERS="1"), timeout=LIMIT,
    )  # fmt: skip
    assert not (tmp_path / "imported").exists()
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads((tmp_path / "o" / "r.json").read_text(encoding="utf-8"))["counts"]["passed"] == 30


def test_a_bug_on_a_worker_masks_the_check_s_own_secret(tmp_path: Path, web: HttpServer) -> None:
    # An engine bug (exit 4) of a check run on a worker: its message holds the URL the check's own
    # secret filled, masked as on the run's own threads (checks/internal.py, the check's variables).
    # The bug is made in both processes by a sitecustomize on their path (a test's only way in).
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import runner.checks.run as run\n"
        "def broken(seen, *args):\n"
        "    raise RuntimeError(f'bug while judging {seen.request.target}')\n"
        "run.judge = broken\n",
        encoding="utf-8",
    )
    secret = "own-secret-value-42"
    checks = _checks(web, 30, "/status/200?k={{MINE}}")
    for check in checks:
        check["environmentVariables"] = [{"key": "MINE", "value": secret, "secret": True}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    reports = ["--json", "o/r.json", "--junit", "o/j.xml", "--markdown", "o/s.md"]
    ran = subprocess.run(
        [sys.executable, "-m", "runner", "run", "--checks", "checks.yml", "--no-rca", *reports],
        capture_output=True, text=True, cwd=tmp_path, timeout=LIMIT,
        env=child_env(TESTSESSION_WORKERS="1", PYTHONPATH=str(site)),
    )  # fmt: skip
    assert ran.returncode == 4, ran.stderr
    shown = ran.stdout + ran.stderr + "".join(p.read_text() for p in (tmp_path / "o").iterdir())
    assert shown.count("bug while judging") >= 30 and "k=***" in shown
    assert secret not in shown


def test_the_session_s_variables_go_to_a_worker_after_a_check_used_them() -> None:
    # The run's own threads start checks while a worker's Hello is still being sent: a check that
    # reads the variables first caches their Substitution (its Redactor holds a lock) on them. Before,
    # the Hello then could not be pickled: the worker waited for it START_SECONDS (30 s), was killed,
    # and its checks were internal errors (exit 4); seen under load in the suite.
    import pickle

    from runner.checks.variables import VariableSources, variables_from

    secret = [{"key": "TOKEN", "value": "session-secret-42", "secret": True}]
    sources = VariableSources(session=tuple(variables_from(secret)), runtime={"REGION": "local"})
    assert sources.substitution.redact("x session-secret-42") == "x ***"  # cached on it now
    copy = pickle.loads(pickle.dumps(sources))
    assert copy == sources and copy.substitution.redact("x session-secret-42") == "x ***"


def test_a_task_that_cannot_be_sent_fails_the_worker_s_checks_at_once() -> None:
    # A value the parent cannot pickle (a bug): the worker is ended and its checks fail closed now,
    # not after START_SECONDS with a thread's traceback on the run's stderr.
    import threading

    from runner.checks.failures import FailureKind
    from runner.job.workers import Hello, Task, _Worker

    handed: list[tuple[int, Any, bool]] = []
    done = threading.Event()

    def hand(index: int, attempt: Any, final: bool) -> None:
        handed.append((index, attempt, final))
        done.set()

    from runner.checks.variables import VariableSources

    worker = _Worker(1, Hello(VariableSources(), 10.0, 1, 1000), hand)
    try:
        assert worker.submit(Task(0, threading.Lock(), None, None))  # type: ignore[arg-type]
        assert done.wait(10.0), "the worker's check was not failed"
        ((index, attempt, final),) = handed
        assert index == 0 and final and attempt.error_kind is FailureKind.INTERNAL_ERROR
        assert "could not be sent" in attempt.message
    finally:
        worker.close()
        worker.reap(time.monotonic() + 2.0)


def _run_with_site(
    tmp_path: Path, web: HttpServer, site_code: str, count: int = 30
) -> subprocess.CompletedProcess[str]:
    """A run with one worker and a `sitecustomize.py` (the test's way into both processes)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(site_code, encoding="utf-8")
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(_checks(web, count, "/status/200")), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "runner", "run", "--checks", "checks.yml", "--no-rca", "--json", "o/r.json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=LIMIT,
        env=child_env(TESTSESSION_WORKERS="1", PYTHONPATH=str(site)),
    )  # fmt: skip


def test_a_worker_whose_start_up_writes_to_stdout_still_runs_its_checks(
    tmp_path: Path, web: HttpServer
) -> None:
    # A sitecustomize (or a .pth file, a C library) that writes to fd 1 as Python starts. Before, the
    # frames came back on the worker's stdout: the text cut them, the worker was taken for crashed and
    # its checks were internal errors (exit 4).
    ran = _run_with_site(
        tmp_path, web, "import os\nos.write(1, b'hello from a sitecustomize\\n')\nprint('and a print')\n"
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads((tmp_path / "o" / "r.json").read_text(encoding="utf-8"))["counts"]["passed"] == 30


def test_an_attempt_a_worker_cannot_send_fails_its_checks_at_once(tmp_path: Path, web: HttpServer) -> None:
    # An attempt that does not pickle on the worker (a bug). Before, the worker's send thread died of
    # the TypeError and the worker ran on: the run waited for its checks until its deadline.
    ran = _run_with_site(
        tmp_path,
        web,
        "import threading\n"
        "import runner.job.workers as workers\n"
        "from runner.checks.outcome import Attempt\n"
        "started = workers.main\n"
        "def main():\n"  # on the worker only: the parent never calls main
        "    Attempt.as_kept_passed = lambda self: threading.Lock()\n"
        "    started()\n"
        "workers.main = main\n",
    )
    assert ran.returncode == 4, ran.stdout + ran.stderr
    data = json.loads((tmp_path / "o" / "r.json").read_text(encoding="utf-8"))
    errors = [r["error"] for r in data["sessions"][0]["results"] if r["verdict"] == "error"]
    assert errors and all("worker process 1 ended before this check did" in e for e in errors)
    assert "exit code 7" in errors[0] and "pickle" in ran.stderr + ran.stdout


def test_a_batch_over_the_frame_limit_goes_in_smaller_frames() -> None:
    from runner.checks.outcome import Attempt
    from runner.job.workers import FrameTooLarge, write_items

    items = [(n, Attempt(1, 0.0, 1.0, False, message=str(n) * 400), True) for n in range(5)]
    stream = io.BytesIO()
    write_items(stream, items, limit=1_000)
    stream.seek(0)
    frames = []
    while (frame := read_frame(stream)) is not None:
        frames.append(frame)
    assert len(frames) > 1 and [item for frame in frames for item in frame] == items  # type: ignore[attr-defined]
    with pytest.raises(FrameTooLarge):  # one attempt alone over the limit: the worker's error
        write_items(io.BytesIO(), items[:1], limit=100)


def test_the_checks_of_a_worker_that_never_became_ready_run_on_the_run_s_threads(
    tmp_path: Path, web: HttpServer
) -> None:
    # A worker that dies before its ready frame (sent before it reads a task) started none of its
    # checks. Before, they were internal errors (exit 4); now the run's own threads run them.
    ran = _run_with_site(
        tmp_path,
        web,
        "import os\nimport runner.job.workers as workers\n"
        "def main():\n"  # on the worker only: the parent never calls main
        "    os._exit(1)\n"
        "workers.main = main\n",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    data = json.loads((tmp_path / "o" / "r.json").read_text(encoding="utf-8"))
    assert data["counts"]["passed"] == 30 and "worker process" not in ran.stdout + ran.stderr
