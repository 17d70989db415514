"""SIGINT and SIGTERM sent to a `testsession run` subprocess in each phase of a run.

Documented (runner/core/exitcodes.py): 130 for SIGINT, 143 for SIGTERM; the session is cancelled and partial
reports are written. The phase is read from the subprocess's own stdout (the link line after the
trigger, "Waiting for N root cause analyses" when the wait for analyses starts) or, for a trigger
still in flight, from the emulator's fault counter; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import HANG_CHECK, auth_headers, never_ending_world
from helpers import child_env, junit_xsd_errors

from runner.client import ApiClient
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.job.analyses import AnalysisPlan
from runner.job.events import Event, ResultFinished, Where
from runner.job.plan import SessionPlan
from runner.job.session import SessionWorker
from runner.models import Target, TestSession, TriggerRequest
from runner.reports import load_outcome

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

# One emulator for the module, reset before each test (conftest's `emulator`). A cancel held by a
# slow-cancel test may still arrive after it: it finds no session, and no test here counts requests.
SHARE_EMULATOR = True

PHASE_LIMIT = 30.0  # seconds to reach a phase (a cold interpreter on a loaded machine included)
EXIT_LIMIT = 10.0  # seconds from the signal to the exit: the 5 s cancel grace plus slack
SIGNALS = [
    pytest.param(signal.SIGINT, 130, id="SIGINT"),
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
]


class RunProcess:
    """`python -m runner run SPEC` against the emulator; stdout lines collected by a reader thread."""

    def __init__(self, emulator: Emulator, spec: Path, workdir: Path) -> None:
        env = child_env(
            TESTSESSION_BASE_URL=emulator.url,
            TESTSESSION_API_KEY=emulator.api_key,
            TESTSESSION_ACCOUNT_ID=emulator.account_id,
        )
        self.stderr_path = workdir / "stderr.txt"
        self._stderr = self.stderr_path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", str(spec), "--request-timeout", "5"],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
            cwd=workdir,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, text: str, timeout: float = PHASE_LIMIT) -> str:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((line for line in self.lines if text in line), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no line with {text!r} within {timeout:g} s: {self.output()}")
                self._changed.wait(min(remaining, 0.2))

    def finish(self, timeout: float = EXIT_LIMIT) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {timeout:g} s after the signal: {self.output()}") from None
        finally:
            self._reader.join(2)

    def output(self) -> str:
        self._stderr.flush()
        stderr = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        return "\nstdout:\n" + "\n".join(self.lines) + "\nstderr:\n" + stderr

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # only this process, started by this test
            self.proc.wait(5)
        self._stderr.close()


@pytest.fixture
def start_run(emulator: Emulator, tmp_path: Path) -> Iterator[Callable[[str], RunProcess]]:
    started: list[RunProcess] = []

    def start(spec_text: str) -> RunProcess:
        spec = tmp_path / "testsession.yml"
        spec.write_text(spec_text + REPORTS.format(dir=tmp_path / "reports"), encoding="utf-8")
        run = RunProcess(emulator, spec, tmp_path)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


REPORTS = """
reports:
  junit: {dir}/junit.xml
  markdown: {dir}/summary.md
  json: {dir}/results.json
"""
METADATA = """
metadata:
  environment: interrupts
  commitId: 0123456789abcdef0123456789abcdef01234567
  branchName: main
"""
HANG_SPEC = (
    """
name: interrupted while waiting
runLocation: eu-west-1
target:
  matchTags: [[hang]]
wait:
  timeoutSeconds: 120
"""
    + METADATA
)
ANALYSES_SPEC = (
    """
name: interrupted during analyses
runLocation: eu-west-1
target:
  matchTags: [[all-outcomes]]
wait:
  timeoutSeconds: 120
rca:
  timeoutSeconds: 120
"""
    + METADATA
)


def session_status(emulator: Emulator, session_id: str) -> str:
    answer = requests.get(
        f"{emulator.url}/v1/test-sessions/{session_id}", headers=auth_headers(emulator), timeout=5
    )
    answer.raise_for_status()
    status: str = answer.json()["status"]
    return status


def stats(emulator: Emulator) -> dict[str, Any]:
    data: dict[str, Any] = requests.get(
        f"{emulator.url}/_emulator/stats", headers=CONTROL_HEADERS, timeout=5
    ).json()
    return data


def partial_reports(tmp_path: Path, code: int, signal_name: str) -> Any:
    """The three reports of an interrupted run, checked; the outcome of results.json."""
    reports = tmp_path / "reports"
    outcome = load_outcome((reports / "results.json").read_text(encoding="utf-8"), "results.json")
    assert outcome.partial is True
    assert outcome.exitCode == code
    assert outcome.verdict == "interrupted"
    assert outcome.message == f"interrupted by {signal_name}"
    assert junit_xsd_errors(reports / "junit.xml") == []
    markdown = reports / "summary.md"
    assert 0 < markdown.stat().st_size < 1024 * 1024
    return outcome


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_signal_while_waiting_cancels_the_session(
    sig: signal.Signals, code: int, start_run: Callable[[str], RunProcess], emulator: Emulator, tmp_path: Path
) -> None:
    run = start_run(HANG_SPEC)
    link = run.wait_for_line("Test session 'interrupted while waiting' (eu-west-1): ")
    session_id = link.rsplit("/", 1)[-1]
    assert session_status(emulator, session_id) == "RUNNING"
    sent = time.monotonic()
    run.proc.send_signal(sig)
    assert run.finish() == code, run.output()
    assert time.monotonic() - sent < EXIT_LIMIT
    assert session_status(emulator, session_id) == "CANCELLED"
    assert stats(emulator)["sessionsTotal"] == 1
    outcome = partial_reports(tmp_path, code, sig.name)
    assert outcome.sessions[0].testSessionId == session_id
    assert outcome.sessions[0].status == "CANCELLED"
    # This run cancelled the check: it did not finish ("running"), whichever read saw the cancel
    # (test_a_check_the_signal_cancelled_has_one_verdict_whichever_read_saw_the_cancel).
    assert [(r.status, r.verdict) for r in outcome.sessions[0].results] == [("CANCELLED", "running")]
    assert f"exit code {code}" in "\n".join(run.lines)
    assert "Traceback" not in run.output()


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_signal_during_analyses_reports_them_interrupted(
    sig: signal.Signals, code: int, start_run: Callable[[str], RunProcess], emulator: Emulator, tmp_path: Path
) -> None:
    # Analyses stay pending for the whole test (1e6 simulated seconds).
    requests.patch(
        f"{emulator.url}/_emulator/settings",
        headers=CONTROL_HEADERS,
        json={"analysisDelaySeconds": 1e6},
        timeout=5,
    ).raise_for_status()
    run = start_run(ANALYSES_SPEC)
    link = run.wait_for_line("Test session 'interrupted during analyses' (eu-west-1): ")
    session_id = link.rsplit("/", 1)[-1]
    run.wait_for_line("Waiting for 3 root cause analyses of 'interrupted during analyses'")
    sent = time.monotonic()
    run.proc.send_signal(sig)
    assert run.finish() == code, run.output()
    assert time.monotonic() - sent < EXIT_LIMIT
    # The session had already ended: cancelling changes nothing, its verdicts stay in the reports.
    assert session_status(emulator, session_id) == "FAILED"
    assert stats(emulator)["sessionsTotal"] == 1
    outcome = partial_reports(tmp_path, code, sig.name)
    session = outcome.sessions[0]
    assert session.status == "FAILED"
    assert "failed" in {r.verdict for r in session.results}
    states = {(g.analysis.state, g.analysis.reason) for g in session.errorGroups if g.analysis}
    assert states == {("timeout", "interrupted")}
    assert "Traceback" not in run.output()


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_signal_while_the_trigger_is_in_flight_cancels_the_late_session(
    sig: signal.Signals, code: int, start_run: Callable[[str], RunProcess], emulator: Emulator, tmp_path: Path
) -> None:
    # The trigger answers 1.5 s after it arrives; the signal comes while it is held. (The fault counts
    # outlive the reset between tests: what counts is one more than before.)
    held = emulator.backend.faults.stats.get("trigger", {}).get("slow", 0)
    requests.post(
        f"{emulator.url}/_emulator/faults",
        headers=CONTROL_HEADERS,
        json=[{"route": "trigger", "kind": "slow", "delaySeconds": 1.5, "count": 1}],
        timeout=5,
    ).raise_for_status()
    run = start_run(HANG_SPEC)
    deadline = time.monotonic() + PHASE_LIMIT
    while emulator.backend.faults.stats.get("trigger", {}).get("slow", 0) == held:
        assert time.monotonic() < deadline and run.proc.poll() is None, run.output()
        time.sleep(0.02)
    run.proc.send_signal(sig)
    assert run.finish() == code, run.output()
    assert stats(emulator)["sessionsTotal"] == 1
    outcome = partial_reports(tmp_path, code, sig.name)
    session_id = outcome.sessions[0].testSessionId
    assert session_id, "the session the trigger started is in the reports"
    assert session_status(emulator, session_id) == "CANCELLED"


SHUTDOWN_LIMIT = 5.0  # seconds from the first signal to the exit, reports written (CI kills at ~10 s)


def slow_cancels(emulator: Emulator, seconds: float = 60.0) -> None:
    fault = {"route": "cancel", "kind": "slow", "phase": "before", "delaySeconds": seconds, "rate": 1.0}
    requests.post(
        f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, json=[fault], timeout=5
    ).raise_for_status()


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_a_slow_cancel_does_not_hold_the_shutdown(
    start_run: Callable[[str], RunProcess], emulator: Emulator, tmp_path: Path
) -> None:
    """The service takes a minute to answer the cancel: the run still ends within 5 s, with reports.

    SIGTERM only (what CI sends at a timeout): SIGINT takes the same handler (cli/common.py) and its
    own exit code is asserted by the SIGNALS tests above; each case costs the 5 s bound."""
    sig, code = signal.SIGTERM, 143
    slow_cancels(emulator)
    run = start_run(HANG_SPEC)
    run.wait_for_line("Test session 'interrupted while waiting' (eu-west-1): ")
    sent = time.monotonic()
    run.proc.send_signal(sig)
    assert run.finish() == code, run.output()
    assert time.monotonic() - sent < SHUTDOWN_LIMIT + 0.5, run.output()
    # "cancelling ..." is a line of its own, said at once.
    assert any(line.startswith("cancelling ... (interrupted by") for line in run.lines), run.output()
    partial_reports(tmp_path, code, sig.name)


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_a_second_signal_stops_at_once(
    start_run: Callable[[str], RunProcess], emulator: Emulator, tmp_path: Path
) -> None:
    slow_cancels(emulator)
    run = start_run(HANG_SPEC)
    run.wait_for_line("Test session 'interrupted while waiting' (eu-west-1): ")
    run.proc.send_signal(signal.SIGINT)
    run.wait_for_line("cancelling ...", timeout=5)
    second = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    assert run.finish() == 130, run.output()
    assert time.monotonic() - second < 1.5, run.output()
    assert any(line == "stopping now: writing what is known" for line in run.lines), run.output()
    partial_reports(tmp_path, 130, "SIGINT")


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_signal_before_the_trigger_ends_the_run_with_its_reports(
    sig: signal.Signals, code: int, emulator: Emulator, tmp_path: Path
) -> None:
    """A signal while the run still reads its commit (a slow git here), before anything was triggered:
    the run ends at once with the signal's code and the three reports naming it; nothing is triggered."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    slow_git = tmp_path / "bin" / "git"
    slow_git.parent.mkdir()
    marker = tmp_path / "git-started"
    slow_git.write_text(f"#!/bin/sh\necho $$ > {marker}\nexec sleep 30\n", encoding="utf-8")
    slow_git.chmod(0o755)
    spec = tmp_path / "testsession.yml"
    reports = REPORTS.format(dir=tmp_path / "reports")
    spec.write_text(HANG_SPEC.replace(METADATA, "") + reports, encoding="utf-8")
    env = child_env(
        TESTSESSION_BASE_URL=emulator.url,
        TESTSESSION_API_KEY=emulator.api_key,
        TESTSESSION_ACCOUNT_ID=emulator.account_id,
    )
    env["PATH"] = f"{slow_git.parent}:{env.get('PATH', '/usr/bin:/bin')}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "run", str(spec)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + PHASE_LIMIT
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the run never asked git for the commit"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=EXIT_LIMIT)
        assert proc.returncode == code, stderr
        assert f"interrupted by {sig.name}" in stderr and "Traceback" not in stderr
        outcome = load_outcome((tmp_path / "reports" / "results.json").read_text(), "results.json")
        assert outcome.exitCode == code and outcome.verdict == "interrupted"
        assert outcome.message == f"interrupted by {sig.name}"
        assert junit_xsd_errors(tmp_path / "reports" / "junit.xml") == []
        assert f"interrupted by {sig.name}" in (tmp_path / "reports" / "junit.xml").read_text()
        assert stats(emulator)["sessionsTotal"] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        if marker.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(marker.read_text().strip()), signal.SIGKILL)


class _SignalledClient(ApiClient):
    """The service's client of a run that a signal stops during its wait's first long poll, as run.py
    `_shutdown` does it: the stop code, then the stop event, then the cancel. `seen_by_poll`: the
    long poll then answers with the cancelled session (the cancel landed while it waited); else it
    ends without an answer first (408), and the wait sees the stop before its next read."""

    def __init__(self, emulator: Emulator, seen_by_poll: bool) -> None:
        super().__init__(emulator.url, emulator.api_key, emulator.account_id)
        self.seen_by_poll = seen_by_poll
        self.code: list[int] = []
        self.stop = threading.Event()

    def await_completion(self, test_session_id: str, max_wait_seconds: float = 30) -> TestSession | None:
        if not self.stop.is_set():
            self.code.append(ExitCode.INTERRUPTED)
            self.stop.set()
            self.cancel(test_session_id, within=5)
            if not self.seen_by_poll:
                return None
        return super().await_completion(test_session_id, max_wait_seconds)


@pytest.mark.parametrize("seen_by_poll", [True, False], ids=["seen-by-the-long-poll", "stop-seen-first"])
def test_a_check_the_signal_cancelled_has_one_verdict_whichever_read_saw_the_cancel(
    emulator: Emulator, seen_by_poll: bool
) -> None:
    # Under load the signal's cancel was seen either by the wait's long poll (its final read) or by
    # the read after the wait saw the stop (session.py `_ended_early`): the first said "cancelled"
    # (as if someone had cancelled the check in the service's UI), the second "running" (this run
    # ended it: it did not finish, the verdict of job/policy.py and of a checks file's run).
    events: list[Event] = []
    with _SignalledClient(emulator, seen_by_poll) as client:
        plan = SessionPlan(timeout_seconds=120, analyses=AnalysisPlan(enabled=False))
        code = client.code
        worker = SessionWorker(
            client, plan, Where("Deploy checks", "eu-west-1"), None, events.append, client.stop,
            lambda: ExitCode(code[0]) if code else None,
        )  # fmt: skip
        target = Target(checkId=[HANG_CHECK])
        request = TriggerRequest(name="deploy", runLocation="eu-west-1", target=target)
        outcome = worker.trigger_and_follow(request)
    assert outcome.exitCode == ExitCode.INTERRUPTED
    assert outcome.status == "CANCELLED"
    assert [(r.status, r.verdict) for r in outcome.results] == [("CANCELLED", "running")]
    # Nor did the console hear of it as a check that finished (cancelled) before the report said not.
    assert not [e for e in events if isinstance(e, ResultFinished)]
