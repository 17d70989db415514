"""The emulator's state file (`--state`): real processes, real files. A failure seen by one run is known
to the next; a SIGKILL loses nothing committed; a second process is told who has the file; a file that
is not ours is refused with one line and exit 2, untouched."""

from __future__ import annotations

import json
import os
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import REPO_ROOT, auth_headers
from emulator_ids import ACCOUNT, KEY, OTHER_ACCOUNT, OTHER_KEY, PROFILE
from helpers import child_env, run_here

from runner.cli.main import main
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.state import store
from runner.state.store import APPLICATION_ID, StateFile

EXAMPLES = REPO_ROOT / "examples"
SPEC = EXAMPLES / "testsession.yml"


@pytest.fixture
def fast_world(tmp_path: Path) -> Path:
    """The default world (examples/emulator-world.yml) at speed 40: a run of the example spec takes a
    fraction of a second. Above speed 1 the simulated clock runs ahead of the wall clock, which the
    state file must carry over (a second run must not start before the first one's failures)."""
    world = yaml.safe_load((EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8"))
    world["settings"]["speed"] = 40
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    return path


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TESTSESSION_", "GITHUB_", "GITLAB_"))}
    clean.pop("CI", None)
    return {**clean, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1", **extra}


def cli(*args: str, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=cwd,
        env=env(**extra_env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def results(cwd: Path) -> dict[str, dict[str, Any]]:
    """results.json's results by check name."""
    outcome = json.loads((cwd / "testsession-reports" / "results.json").read_text(encoding="utf-8"))
    return {r["name"]: r for session in outcome["sessions"] for r in session["results"]}


def test_a_failure_of_the_first_run_is_known_in_the_second(tmp_path: Path, fast_world: Path) -> None:
    state = tmp_path / "cache" / "state.db"  # the directory is made on the first run
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    # Known or new comes from the error groups' firstSeen; the analyses are not needed for it. Both
    # runs in this process (helpers.run_here), each with its own emulator on the file: two processes
    # sharing one are test_local_checks_state's (and the tests below).
    run = ["run", str(SPEC), "--emulator", "--world", str(fast_world), "--no-rca"]
    first = run_here([*run, "--state", str(state)], child_env(), first_dir)
    assert first.returncode == 1, first.stdout + first.stderr  # Checkout flow fails, Profile errors
    # The second run names the file by the environment variable, as a pipeline sets it once.
    second = run_here(run, child_env(TESTSESSION_EMULATOR_STATE=str(state)), second_dir)
    assert second.returncode == 1, second.stdout + second.stderr
    before, after = results(first_dir), results(second_dir)

    # The default world seeds Checkout flow's failure three days before the emulator starts. The
    # first run saved that group; the second reads it back: the same group, first seen at the
    # same moment (a fresh emulator would seed it three days before its own, later, start).
    assert before["Checkout flow"]["known"] is True
    assert after["Checkout flow"]["known"] is True
    assert after["Checkout flow"]["errorGroupIds"] == before["Checkout flow"]["errorGroupIds"]
    assert after["Checkout flow"]["firstSeen"] == before["Checkout flow"]["firstSeen"]

    # Profile page script has no seed: new in the first run, known since the first run in the second.
    assert before["Profile page script"]["known"] is False
    assert after["Profile page script"]["known"] is True
    assert after["Profile page script"]["errorGroupIds"] == before["Profile page script"]["errorGroupIds"]
    assert after["Profile page script"]["firstSeen"] == before["Profile page script"]["firstSeen"]
    assert "[known since" in next(
        line for line in second.stdout.splitlines() if "Profile page script" in line
    )


# --- a real `testsession emulator --state` process ---------------------------------------------------


def start_emulator(state: Path, cwd: Path, speed: str = "5") -> tuple[subprocess.Popen[str], str]:
    """`testsession emulator --port 0 --state STATE` and its base URL (read from its export line)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "emulator", "--port", "0", "--speed", speed, "--state", str(state)],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            line = proc.stdout.readline()
            if line.startswith("export TESTSESSION_BASE_URL="):
                return proc, line.strip().split("=", 1)[1]
            if not line and proc.poll() is not None:
                break
    proc.kill()
    raise AssertionError(f"the emulator did not start: {proc.communicate()[1]}")


class Client:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = requests.Session()
        self.http.headers.update({"Authorization": f"Bearer {KEY}", "X-Service-Account": ACCOUNT})

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, self.base_url + path, timeout=10, **kwargs)
        assert response.status_code < 300, response.text
        return response.json()


def wait_until(read: Any, done: Any, seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_sigkill_mid_session_loses_nothing_committed(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    proc, url = start_emulator(state, tmp_path)
    try:
        api = Client(url)
        # Profile page script errors after 3 simulated seconds (0.6 s); the hanging export runs for 60.
        body = {"name": "ci", "runLocation": "eu-west-1", "target": {"matchTags": [["profile"], ["hang"]]}}
        session_id = api.call("POST", "/v1/test-sessions/trigger", json=body)["testSessionId"]

        def profile_failed(session: dict[str, Any]) -> bool:
            return any(r["checkId"] == PROFILE and r["status"] == "FAILED" for r in session["results"])

        seen = wait_until(lambda: api.call("GET", f"/v1/test-sessions/{session_id}"), profile_failed)
        assert profile_failed(seen) and seen["status"] == "RUNNING"
        (group_id,) = seen["errorGroupIds"]
        group = api.call("GET", f"/v1/test-session-error-groups/{group_id}")
        analysis_id = api.call("POST", f"/v1/root-cause-analyses/test-session-error-groups/{group_id}")["id"]
        analysis = wait_until(
            lambda: api.call("GET", f"/v1/root-cause-analyses/{analysis_id}"),
            lambda a: a["status"] == "COMPLETED",
        )
        assert analysis["status"] == "COMPLETED"
        assert api.call("GET", f"/v1/test-sessions/{session_id}")["status"] == "RUNNING"
    finally:
        proc.send_signal(signal.SIGKILL)  # no handler, no cleanup: what was committed must be enough
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    again, url = start_emulator(state, tmp_path)
    try:
        api = Client(url)
        session = api.call("GET", f"/v1/test-sessions/{session_id}")
        # The process that ran the session is gone: it reads back cancelled, what had finished kept.
        assert session["status"] == "CANCELLED" and session["stoppedAt"]
        by_check = {r["checkId"]: r for r in session["results"] if r["resultType"] == "FINAL"}
        assert by_check[PROFILE]["status"] == "FAILED" and by_check[PROFILE]["errorGroupIds"] == [group_id]
        hang = next(r for check, r in by_check.items() if check != PROFILE)
        assert hang["status"] == "CANCELLED" and hang["aborted"] is True
        assert session["testSessionLink"] == f"{url}/sessions/{session_id}"  # links follow the new port
        # The completion long poll answers at once: the session is final.
        completion = api.call("GET", f"/v1/test-sessions/{session_id}/completion?maxWaitSeconds=5")
        assert completion["status"] == "CANCELLED"
        kept = api.call("GET", f"/v1/test-session-error-groups/{group_id}")
        assert (kept["firstSeen"], kept["lastSeen"]) == (group["firstSeen"], group["lastSeen"])
        assert [a["id"] for a in kept["rootCauseAnalyses"]] == [analysis_id]
        assert api.call("GET", f"/v1/root-cause-analyses/{analysis_id}") == analysis
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=10)


class LockClock:
    """The state file lock's clock (store.time): each sleep moves it on at once, and is counted."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_second_process_is_told_which_pid_has_the_file(
    tmp_path: Path, fast_world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder is a process of its own (the lock is the file's, across processes); the second run
    is the CLI in this process (helpers.run_here), its wait on an injected clock: a bound asserted
    on the wall clock here (< 15 s for a child's start, 2 s wait, reports) failed at load 20."""
    state = tmp_path / "state.db"
    holder, _url = start_emulator(state, tmp_path)
    clock = LockClock()
    monkeypatch.setattr(store, "time", clock)
    try:
        run = ["run", str(SPEC), "--emulator", "--world", str(fast_world), "--state", str(state)]
        second = run_here(run, child_env(), tmp_path)
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=10)
    assert second.returncode == 2
    (line,) = second.stderr.splitlines()
    assert str(state) in line and f"in use by another testsession process (pid {holder.pid})" in line
    # Waited its bound (2 s, on its clock) and said so, nothing triggered.
    assert store.LOCK_WAIT_SECONDS <= clock.now <= store.LOCK_WAIT_SECONDS + 0.1
    # Every exit leaves the reports asked for: one error case that names the file in use.
    junit = (tmp_path / "testsession-reports" / "junit.xml").read_text(encoding="utf-8")
    assert "in use by another testsession process" in junit and "<testcase" in junit
    # Once the holder is gone, the file is free again (its lock went with the process).
    StateFile.open(state, wait_seconds=0).close()


# --- files that are not ours -----------------------------------------------------------------------


def sqlite_file(path: Path, *statements: str) -> Path:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda p: p.write_text("results: []\n", encoding="utf-8") and p,
            "not a testsession state file (not an SQLite database)",
        ),
        (
            lambda p: sqlite_file(p, "CREATE TABLE users (id INTEGER)", "CREATE TABLE orders (id INTEGER)"),
            "an SQLite database of another application: tables orders, users",
        ),
        (
            lambda p: sqlite_file(p, "PRAGMA application_id = 1196444487", "CREATE TABLE t (x)"),
            "an SQLite database of another application: application_id 0x47504b47",
        ),
        (
            lambda p: sqlite_file(p, f"PRAGMA application_id = {APPLICATION_ID}", "PRAGMA user_version = 7"),
            "a testsession state file of a newer schema (version 7; this testsession reads versions up to 2)",
        ),
        (
            lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8) and p,
            "cannot be used as a state file (file is not a database)",
        ),
    ],
    ids=["text", "foreign-tables", "foreign-application-id", "newer-schema", "damaged"],
)
def test_a_file_that_is_not_ours_is_refused_untouched(
    make: Any, says: str, tmp_path: Path, fast_world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path / "state.db")
    before = path.read_bytes()
    code = main(["run", str(SPEC), "--emulator", "--world", str(fast_world), "--state", str(path), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"testsession: error: {path}: " in err and says in err, err
    assert path.read_bytes() == before
    assert not (tmp_path / "state.db-wal").exists()


def test_state_needs_the_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(SPEC), "--state", "state.db"]) == 2
    assert "--state needs --emulator" in capsys.readouterr().err


# --- in one process: reset, restart ------------------------------------------------------------------


def finished(emu: Emulator, check_id: str) -> dict[str, Any]:
    headers = auth_headers(emu)
    body = {"name": "ci", "runLocation": "eu-west-1", "target": {"checkId": [check_id]}}
    started = requests.post(f"{emu.url}/v1/test-sessions/trigger", json=body, headers=headers, timeout=10)
    assert started.status_code == 201, started.text
    session_id = started.json()["testSessionId"]
    done = requests.get(
        f"{emu.url}/v1/test-sessions/{session_id}/completion?maxWaitSeconds=10", headers=headers, timeout=15
    )
    assert done.status_code == 200, done.text
    result: dict[str, Any] = done.json()
    return result


def test_a_reset_keeps_the_files_history_and_a_restart_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_ACCOUNT_HEADER"):
        monkeypatch.delenv(name, raising=False)
    state = tmp_path / "state.db"
    state.touch()  # an empty file is a new state file
    with Emulator(speed=40, state=state) as emu:
        headers = auth_headers(emu)
        first = finished(emu, PROFILE)
        (group_id,) = first["errorGroupIds"]
        group_url = f"/v1/test-session-error-groups/{group_id}"
        group = requests.get(emu.url + group_url, headers=headers, timeout=5)
        assert (
            requests.post(f"{emu.url}/_emulator/reset", headers=CONTROL_HEADERS, timeout=5).status_code == 204
        )
        # After the reset: the session still answers, and the same failure lands in the same group.
        kept = requests.get(
            f"{emu.url}/v1/test-sessions/{first['testSessionId']}", headers=headers, timeout=5
        )
        assert kept.json() == first
        assert finished(emu, PROFILE)["errorGroupIds"] == [group_id]
        old_origin = emu.url
    with Emulator(speed=40, state=state) as emu:
        assert emu.url != old_origin  # another port: the stored links follow
        headers = auth_headers(emu)
        again = requests.get(
            f"{emu.url}/v1/test-sessions/{first['testSessionId']}", headers=headers, timeout=5
        )
        assert again.json() == json.loads(json.dumps(first).replace(old_origin + "/", emu.url + "/"))
        # Another account's key sees no such session, as for a live one.
        other = {"Authorization": f"Bearer {OTHER_KEY}", "X-Service-Account": OTHER_ACCOUNT}
        missing = requests.get(
            f"{emu.url}/v1/test-sessions/{first['testSessionId']}", headers=other, timeout=5
        )
        assert missing.status_code == 404
        restored = requests.get(
            f"{emu.url}/v1/test-session-error-groups/{group_id}", headers=headers, timeout=5
        )
        assert restored.json()["firstSeen"] == group.json()["firstSeen"]
        assert finished(emu, PROFILE)["errorGroupIds"] == [group_id]


def test_the_file_keeps_the_newest_sessions_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.state import store as state_module

    for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_ACCOUNT_HEADER"):
        monkeypatch.delenv(name, raising=False)
    state = tmp_path / "state.db"
    with Emulator(speed=40, state=state) as emu:
        sessions = [finished(emu, PROFILE)["testSessionId"] for _ in range(3)]
    monkeypatch.setattr(state_module, "MAX_SESSIONS", 2)
    with Emulator(speed=40, state=state) as emu:
        headers = auth_headers(emu)
        codes = [
            requests.get(f"{emu.url}/v1/test-sessions/{s}", headers=headers, timeout=5).status_code
            for s in sessions
        ]
    assert codes == [404, 200, 200]
