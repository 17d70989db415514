"""A run you can watch: results as they arrive, a timeout that explains itself, the output contract.

End to end over real HTTP against an emulator in this process: `python -m runner run` in a subprocess
where the process is what is tested (a pipe as a CI log sees it, with the time each line arrives; a
pseudo-terminal; argparse's own exit), `testsession run` in this process (helpers.run_here, its output
captured as a pipe would) where the output and the files are; the console front end alone for what
only time shows (the heartbeat), with a fake clock.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import default_world_dict
from helpers import Ran, child_env, run_here

from runner.ci.console import HEARTBEAT_SECONDS, Console
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.job.events import Progress, ResultFinished, Tick, Where
from runner.job.outcome import ResultOutcome
from runner.job.policy import Gate

SPEED = 8.0  # the early failure at 4 simulated seconds is 0.5 s real; the slow check 5 s real
READ_INTERVAL = 2.0  # the first read interval of a running session (runner/client/polling.py)


def watch_world() -> dict[str, Any]:
    world = default_world_dict()
    world["settings"]["speed"] = SPEED
    world["settings"]["analysisDelaySeconds"] = 1
    world["accounts"][0]["checks"] += [
        {
            "id": "5a1e0000-0000-4000-8000-000000000001",
            "name": "Early failure",
            "checkType": "API",
            "tags": ["watch", "early"],
            "behaviour": "fail",
            "durationSeconds": 4,
            "errorMessage": "expected status 200 but received 502 from the preview",
        },
        {
            "id": "5a1e0000-0000-4000-8000-000000000002",
            "name": "Slow journey",
            "checkType": "BROWSER",
            "tags": ["watch"],
            "behaviour": "pass",
            "durationSeconds": 40,
        },
    ]
    return world


@pytest.fixture(scope="module")
def watched() -> Iterator[Emulator]:
    with Emulator(world=watch_world()) as emu:
        yield emu


def command(emu: Emulator, tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = child_env(
        TESTSESSION_API_KEY=emu.api_key, TESTSESSION_ACCOUNT_ID=emu.account_id, TESTSESSION_BASE_URL=emu.url
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", *args]
    argv += ["--junit", str(out / "junit.xml"), "--markdown", str(out / "summary.md")]
    if "--json" not in args:
        argv += ["--json", str(out / "results.json")]
    return argv, env


def here(emu: Emulator, tmp_path: Path, *args: str) -> Ran:
    """`testsession run ARGS` in this process, with command()'s environment, flags and reports."""
    argv, env = command(emu, tmp_path, *args)
    return run_here(argv[3:], env, tmp_path)  # without `python -m runner`


def timed_lines(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[tuple[float, str]], str]:
    """Runs the command with stdout a pipe; each stdout line with the seconds since the start."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[tuple[float, str]] = []
    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    for raw in proc.stdout:
        lines.append((time.monotonic() - started, raw.decode("utf-8", "replace")))
    code = proc.wait(timeout=60)
    reader.join(5)
    return code, lines, b"".join(errors).decode("utf-8", "replace")


def first(lines: list[tuple[float, str]], text: str) -> tuple[float, str]:
    found = [(t, line) for t, line in lines if text in line]
    assert found, f"no line with {text!r} in:\n" + "".join(line for _t, line in lines)
    return found[0]


@pytest.fixture(scope="module")
def watch_run(watched: Emulator, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the two watched checks, in a pipe; several tests read it."""
    tmp_path = tmp_path_factory.mktemp("watch")
    argv, env = command(watched, tmp_path, "--tag", "watch")
    code, lines, err = timed_lines(argv, env, tmp_path)
    return {"code": code, "lines": lines, "err": err, "out": tmp_path / "out"}


# The two tests of watch_run measure real time (a line within a read interval, an analysis fetched
# while a 5 s session still runs): the `timing` phase, one test at a time (.ci/run). Beside a loaded
# suite the run took 10 s and the analysis line came 0.2 s after the session's end.
@pytest.mark.timing
def test_a_failure_is_printed_with_its_message_while_the_session_still_runs(
    watch_run: dict[str, Any],
) -> None:
    lines = watch_run["lines"]
    assert watch_run["code"] == 1
    failed_at, failed = first(lines, "Early failure")
    finished_at, _ = first(lines, "finished: FAILED")
    assert "FAILED" in failed and "received 502 from the preview" in failed
    # Final at 0.5 s after the trigger (4 simulated seconds at speed 8): on the log within one read
    # interval (plus 1.5 s for a loaded machine), before the session itself ends at 5 s. Counted from
    # the session's first line, which follows the trigger: a cold interpreter's start on a loaded
    # 2-core runner (3.1 s seen) is no part of the claim and failed it.
    started_at, _ = first(lines, "/sessions/")
    assert failed_at - started_at < 0.5 + READ_INTERVAL + 1.5 < 5, lines
    assert failed_at < finished_at - 1.5
    passed_at, _ = first(lines, "Slow journey")
    assert passed_at > failed_at
    # The verdict comes last, after the report paths.
    assert lines[-1][1].startswith("verdict: FAILED")
    assert any("json report:" in line for _t, line in lines[:-1])
    # A pipe is a CI log: plain lines only, no escape sequences, no carriage returns.
    text = "".join(line for _t, line in lines)
    assert "\x1b" not in text and "\r" not in text


@pytest.mark.timing  # see above
def test_an_analysis_started_early_is_ready_when_the_session_ends(watch_run: dict[str, Any]) -> None:
    lines = watch_run["lines"]
    analysis_at, _line = first(lines, "analysis for Early failure")
    finished_at, _ = first(lines, "finished: FAILED")
    assert analysis_at < finished_at  # generated while the slow check still ran
    assert not any("Waiting for" in line and "root cause analys" in line for _t, line in lines)
    outcome = json.loads((watch_run["out"] / "results.json").read_text())
    states = [g["analysis"]["state"] for g in outcome["sessions"][0]["errorGroups"]]
    assert states == ["completed"]


def test_no_rca_keeps_the_failure_message_everywhere(watched: Emulator, tmp_path: Path) -> None:
    code, out, _err = here(watched, tmp_path, "--tag", "early", "--no-rca")
    assert code == 1
    message = "expected status 200 but received 502 from the preview"
    assert message in first([(0.0, line) for line in out.splitlines()], "Early failure")[1]
    outcome = json.loads((tmp_path / "out" / "results.json").read_text())
    failed = next(r for r in outcome["sessions"][0]["results"] if r["name"] == "Early failure")
    assert failed["error"] == message
    assert outcome["sessions"][0]["errorGroups"][0]["analysis"]["state"] == "disabled"
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    failure = junit.find(".//testcase/failure")
    assert failure is not None and failure.get("message") == message
    assert "without an error message" not in (failure.text or "")
    assert "not fetched" not in (tmp_path / "out" / "summary.md").read_text()


def test_a_timeout_names_what_did_not_finish_and_junit_counts_it_as_an_error(
    watched: Emulator, tmp_path: Path
) -> None:
    code, text, _err = here(watched, tmp_path, "--tag", "watch", "--timeout", "2")
    assert code == 3
    assert "the 2 s deadline passed with 1 of 2 checks unfinished" in text
    assert re.search(r"DID NOT FINISH\s+Slow journey \(BROWSER, eu-west-1\) still running after 2 s", text)
    assert re.search(r"FAILED\s+Early failure", text)
    # Printed when it failed, and again in the deadline's list: both times with its error.
    early = [line for line in text.splitlines() if re.search(r"FAILED\s+Early failure", line)]
    assert len(early) == 2 and all("received 502 from the preview" in line for line in early), early
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    slow = cases["Slow journey [eu-west-1]"]
    error = slow.find("error")
    assert error is not None and slow.find("skipped") is None
    assert "did not finish within the 2 s deadline" in (error.get("message") or "")
    assert junit.get("errors") == "1" and junit.get("failures") == "1"


def test_the_terminal_gets_a_live_line_that_redraws_in_place(watched: Emulator, tmp_path: Path) -> None:
    argv, env = command(watched, tmp_path, "--tag", "watch")
    env["TERM"] = "xterm"
    main, child = pty.openpty()
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=child, stderr=child, stdin=child)
    os.close(child)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.5)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(main)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 1
    assert "\r\x1b[K…" in screen  # the status line, redrawn in place
    assert re.search(r"… \d+ s · \d/2 done · running: Slow journey", screen)
    assert "verdict: FAILED" in screen.splitlines()[-1]


def test_detach_prints_only_id_and_link_on_stdout(watched: Emulator, tmp_path: Path) -> None:
    proc = here(watched, tmp_path, "--tag", "watch", "--detach")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and re.fullmatch(
        r"[0-9a-f-]{36} http://127\.0\.0\.1:\d+/sessions/[0-9a-f-]{36}", lines[0]
    )
    assert "Test session" in proc.stderr and "verdict:" in proc.stderr


def test_json_to_stdout_keeps_the_console_on_stderr(watched: Emulator, tmp_path: Path) -> None:
    proc = here(watched, tmp_path, "--tag", "smoke", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "passed"
    assert "verdict: PASSED" in proc.stderr


def test_quiet_prints_failures_and_the_verdict_only(watched: Emulator, tmp_path: Path) -> None:
    proc = here(watched, tmp_path, "--tag", "all-outcomes", "-q")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert not any("PASSED" in line or "FLAKY" in line or "report:" in line for line in lines), lines
    assert any(line.lstrip().startswith("FAILED") for line in lines)
    assert lines[-1].startswith("verdict: FAILED")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--time", "5"], "unrecognized arguments: --time; did you mean --timeout?"),
        (["rn"], "invalid choice: 'rn'"),
        (["sessions", "gett", "x"], "did you mean 'get'?"),
    ],
)
def test_no_abbreviations_and_a_did_you_mean(args: list[str], expected: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "runner", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env=child_env(),
    )
    assert proc.returncode == 2
    assert expected in proc.stderr
    if args == ["rn"]:
        assert "did you mean 'run'?" in proc.stderr


def _result(name: str, verdict: str) -> ResultOutcome:
    return ResultOutcome(id=name, name=name, status="RUNNING", verdict=verdict, runLocation="eu-west-1")  # type: ignore[arg-type]


def test_a_pipe_gets_a_heartbeat_naming_what_still_runs() -> None:
    now = [0.0]
    stream = io.StringIO()
    console = Console(stream=stream, environ={}, clock=lambda: now[0], gate=Gate())
    where = Where("deploy", "eu-west-1")
    console.notify(ResultFinished(where, _result("Fast", "passed")))
    running = (_result("Slow one", "running"), _result("Slower", "running"))
    console.notify(Progress(where, 5.0, running, total=3, done=1))
    for second in range(1, int(HEARTBEAT_SECONDS) + 6):
        now[0] = float(second)
        console.notify(Tick(float(second)))
    beats = [line for line in stream.getvalue().splitlines() if line.startswith("…")]
    assert len(beats) == 1
    assert "1/3 done; still running: Slow one, Slower" in beats[0]
    assert HEARTBEAT_SECONDS < 30  # never silent for 30 s


def test_a_heartbeat_counts_the_unfinished_checks_its_progress_does_not_name() -> None:
    # A local run's Progress names a few running checks of a large session, not all 1,000.
    stream = io.StringIO()
    now = [0.0]
    console = Console(stream=stream, environ={}, clock=lambda: now[0], gate=Gate())
    where = Where("deploy", "eu-west-1")
    running = tuple(_result(f"Check {n}", "running") for n in range(10))
    console.notify(Progress(where, 5.0, running, total=1000, done=400))
    console.notify(ResultFinished(where, _result("Check 0", "passed")))
    now[0] = HEARTBEAT_SECONDS + 1
    console.notify(Tick(now[0]))
    (beat,) = [line for line in stream.getvalue().splitlines() if line.startswith("…")]
    names = ", ".join(f"Check {n}" for n in range(1, 10))
    assert beat.endswith(f"401/1000 done; still running: {names} and 590 more"), beat


def test_a_retried_request_says_what_the_service_answered(watched: Emulator, tmp_path: Path) -> None:
    import requests

    fault = {"route": "trigger", "kind": "status", "status": 503, "count": 1}
    requests.post(
        f"{watched.url}/_emulator/faults", headers=CONTROL_HEADERS, json=[fault], timeout=5
    ).raise_for_status()
    try:
        proc = here(watched, tmp_path, "--tag", "smoke")
    finally:
        requests.delete(f"{watched.url}/_emulator/faults", headers=CONTROL_HEADERS, timeout=5)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    retry = next(line for line in proc.stdout.splitlines() if "the service answered" in line)
    assert re.fullmatch(
        r"POST /v1/test-sessions/trigger: the service answered 503 .*; retry 1 in \d+\.\d s", retry
    ), retry


def test_the_wait_for_analyses_has_a_heartbeat_too() -> None:
    from runner.job.events import AnalysesWaiting, SessionFinished

    now = [0.0]
    stream = io.StringIO()
    console = Console(stream=stream, environ={}, clock=lambda: now[0], gate=Gate())
    where = Where("deploy", "eu-west-1")
    console.notify(SessionFinished(where, "FAILED", 4.0))
    console.notify(AnalysesWaiting(where, 2, 120.0))
    for second in range(1, int(HEARTBEAT_SECONDS) + 3):
        now[0] = float(second)
        console.notify(Tick(float(second)))
    beats = [line for line in stream.getvalue().splitlines() if line.startswith("…")]
    assert beats == ["… 'deploy' (eu-west-1): 25 s, waiting for 2 root cause analyses"]
