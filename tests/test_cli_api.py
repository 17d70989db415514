"""`testsession <resource> <operation>` end to end against the emulator: stdout JSON, stderr, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import never_ending_world
from helpers import child_env

from runner.cli.main import main
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

READ_ONLY_KEY = "tsk_demo_readonly_8e2c4a6f"
HOMEPAGE = "0b9a3c4d-1111-4a5b-8c6d-000000000001"
CHECKOUT = "0b9a3c4d-1111-4a5b-8c6d-000000000003"
CHECK_ERROR_GROUP = "7d1e2f3a-2222-4b5c-9d6e-000000000001"
REPO_ROOT = Path(__file__).resolve().parent.parent
UNKNOWN_SESSION = "00000000-0000-4000-8000-000000000000"  # well formed, but no session has it


@pytest.fixture
def emulator(module_emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    """Overrides conftest's: one server per module, reset per test, credentials in the environment."""
    module_emulator.backend.reset()
    monkeypatch.setenv("TESTSESSION_BASE_URL", module_emulator.url)
    monkeypatch.setenv("TESTSESSION_API_KEY", module_emulator.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", module_emulator.account_id)
    return module_emulator


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(emulator: Emulator, capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def requests_total(emulator: Emulator) -> int:
    time.sleep(0.02)  # the emulator counts a request just after answering it
    return int(emulator.backend.stats()["requestsTotal"])


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def trigger(cli: Run, tmp_path: Path, tags: str) -> dict[str, Any]:
    body = write(
        tmp_path, "body.yml", f"name: cli\nrunLocation: eu-west-1\ntarget:\n  matchTags: [[{tags}]]\n"
    )
    code, out, _ = cli("sessions", "trigger", "--file", body)
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    return data


# --- sessions ------------------------------------------------------------------------------------


def test_sessions_trigger_get_wait(cli: Run, emulator: Emulator, tmp_path: Path) -> None:
    started = trigger(cli, tmp_path, "smoke, api")
    assert started["status"] == "RUNNING" and started["name"] == "cli"
    session_id = started["testSessionId"]

    code, out, err = cli("sessions", "get", session_id)
    assert (code, err) == (0, "")
    assert json.loads(out)["testSessionId"] == session_id
    assert out.startswith('{\n  "testSessionId"')  # pretty, two-space indent

    code, out, _ = cli("sessions", "wait", session_id, "--timeout", "10")
    assert code == 0
    assert json.loads(out)["status"] == "PASSED"
    assert emulator.backend.stats()["sessionsTotal"] == 1


def test_sessions_trigger_reads_json_from_stdin(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"name": "from stdin", "runLocation": "eu-west-1", "target": {"checkId": [CHECKOUT]}}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(body)))
    code, out, _ = cli("sessions", "trigger", "--file", "-")
    assert code == 0
    assert json.loads(out)["name"] == "from stdin"


def test_sessions_wait_times_out_with_exit_3_and_cancel(cli: Run, emulator: Emulator, tmp_path: Path) -> None:
    session_id = trigger(cli, tmp_path, "hang")["testSessionId"]
    code, out, err = cli("sessions", "wait", session_id, "--timeout", "1")
    assert code == 3
    assert out == ""
    assert session_id in err and "still running" in err

    code, out, err = cli("sessions", "cancel", session_id)
    assert (code, out, err) == (0, "", "")
    code, out, _ = cli("sessions", "get", session_id)
    assert json.loads(out)["status"] == "CANCELLED"


# --- error groups and analyses -------------------------------------------------------------------


def test_error_groups_and_rca(cli: Run, tmp_path: Path) -> None:
    session_id = trigger(cli, tmp_path, "checkout")["testSessionId"]
    code, out, _ = cli("sessions", "wait", session_id, "--timeout", "10")
    failed = json.loads(out)
    assert code == 0 and failed["status"] == "FAILED"
    group_id = failed["errorGroupIds"][0]

    code, out, _ = cli("test-session-error-groups", "get", group_id)
    assert code == 0 and json.loads(out)["id"] == group_id

    code, out, _ = cli("error-groups", "get", CHECK_ERROR_GROUP)
    assert code == 0 and json.loads(out)["checkId"] == CHECKOUT

    code, out, _ = cli(
        "rca", "create", "--test-session-error-group", group_id, "--context", "cart v2 deployed"
    )
    pending = json.loads(out)
    assert code == 0 and pending["status"] == "PENDING"

    code, out, _ = cli("rca", "get", pending["id"], "--wait", "--timeout", "10")
    completed = json.loads(out)
    assert code == 0 and completed["status"] == "COMPLETED"
    assert completed["analysis"]["rootCause"]
    assert completed["errorGroupId"] == group_id

    code, out, _ = cli("rca", "create", "--error-group", CHECK_ERROR_GROUP)
    assert code == 0 and json.loads(out)["status"] == "PENDING"


def test_rca_create_needs_exactly_one_group(
    cli: Run, emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["rca", "create"],
        ["rca", "create", "--error-group", "a", "--test-session-error-group", "b"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "--error-group" in err
    assert requests_total(emulator) == 0


def test_rca_context_limit_is_checked_before_sending(cli: Run, emulator: Emulator) -> None:
    code, _, err = cli("rca", "create", "--error-group", CHECK_ERROR_GROUP, "--context", "c" * 257)
    assert code == 2
    assert "--context: userContext: at most 256 characters" in err
    assert requests_total(emulator) == 0


# --- incidents, deletes ----------------------------------------------------------------------------


def test_incident_add_update(cli: Run) -> None:
    code, out, _ = cli(
        "incidents",
        "add-update",
        "inc-1001",
        "--description",
        "Fix rolled out",
        "--status",
        "MONITORING",
        "--notify",
    )
    assert code == 0
    update = json.loads(out)
    assert update["description"] == "Fix rolled out"
    assert update["status"] == "MONITORING" and update["notifySubscribers"] is True


def test_incident_bad_status_is_refused_before_sending(cli: Run, emulator: Emulator) -> None:
    code, _, err = cli("incidents", "add-update", "inc-1001", "--description", "x", "--status", "FIXED")
    assert code == 2
    assert "incident update: status: expected one of 'INVESTIGATING'" in err
    assert requests_total(emulator) == 0


def test_deletes_print_nothing(cli: Run) -> None:
    assert cli("maintenance-windows", "delete-maintenance", "2001", "m-1") == (0, "", "")
    assert cli("maintenance-windows", "delete", "2001") == (0, "", "")
    assert cli("client-certificates", "delete", "cert-3001") == (0, "", "")
    code, out, err = cli("maintenance-windows", "delete", "2001")  # gone now: the user's id to fix
    assert (code, out) == (2, "")
    assert "no maintenance window with id 2001" in err and "404" in err and "Maintenance window" in err
    assert len(err.strip().splitlines()) == 1


# --- dashboards, checks -------------------------------------------------------------------------


def test_dashboards_create_and_409(cli: Run, tmp_path: Path) -> None:
    body = write(tmp_path, "dash.json", json.dumps({"header": "Release", "customUrl": "release-cli"}))
    code, out, _ = cli("dashboards", "create", body)
    assert code == 0
    assert json.loads(out)["customUrl"] == "release-cli"
    # Taken: the user must choose another, so exit 2, naming the URL that is taken.
    code, out, err = cli("dashboards", "create", body)
    assert (code, out) == (2, "")
    assert "customUrl 'release-cli' is already taken" in err and "409" in err and "choose another" in err


def test_checks_update(cli: Run, tmp_path: Path) -> None:
    body = write(tmp_path, "check.yml", "description: updated by cli\nfrequency: 10\nfrequencyOffset: 50\n")
    code, out, err = cli("checks", "update", HOMEPAGE, body, "--no-auto-assign-alerts")
    assert code == 0
    check = json.loads(out)
    assert check["id"] == HOMEPAGE and check["frequency"] == 10 and check["frequencyOffset"] == 50
    assert check["autoAssignAlerts"] is False
    assert "deprecated" in err and "PUT /v1/checks/api/{id}" in err


# --- bad input files: one line naming the file, the field and the rule; nothing sent ------------------


@pytest.mark.parametrize(
    ("argv", "text", "expected"),
    [
        (
            ["sessions", "trigger", "--file"],
            "name: ''\nrunLocation: eu-west-1\n",
            "name: must not be empty",
        ),
        (
            ["sessions", "trigger", "--file"],
            "name: n\nrunLocation: eu-west-1\nenvironmentVariables:\n" + "  - {key: K}\n" * 51,
            "environmentVariables: at most 50 items",
        ),
        (
            ["dashboards", "create"],
            "header: h\ncustomUrl: x\nchecksPerPage: 21\n",
            "checksPerPage: must be less than or equal to 20",
        ),
        (
            ["checks", "update", HOMEPAGE],
            "frequency: 0\nfrequencyOffset: 15\n",
            "frequencyOffset must be 10, 20 or 30",
        ),
        (
            ["checks", "update", HOMEPAGE],
            "description: " + "d" * 511 + "\n",
            "description: at most 510",
        ),
        (["sessions", "trigger", "--file"], "name: [unclosed\n", "expected ',' or ']'"),
        (["sessions", "trigger", "--file"], "- just\n- a list\n", "must be a mapping"),
    ],
    ids=[
        "empty name",
        "51 env vars",
        "checksPerPage",
        "frequency 0 offset",
        "description 511",
        "bad yaml",
        "list",
    ],
)
def test_bad_bodies_exit_2_with_one_line(
    cli: Run, emulator: Emulator, tmp_path: Path, argv: list[str], text: str, expected: str
) -> None:
    path = write(tmp_path, "body.yml", text)
    code, out, err = cli(*argv, path)
    assert (code, out) == (2, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert path in lines[0] and expected in lines[0]
    assert requests_total(emulator) == 0


def test_missing_file_exits_2(cli: Run, emulator: Emulator, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yml")
    code, out, err = cli("dashboards", "create", missing)
    assert (code, out) == (2, "")
    assert err.strip() == f"testsession: error: {missing}: no such file"
    assert requests_total(emulator) == 0


# --- service errors -> one line and the exit code ---------------------------------------------------


def test_401_bad_key_exit_4_without_the_key(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_wrong_key_abcdef")
    code, out, err = cli("sessions", "get", UNKNOWN_SESSION)
    assert (code, out) == (4, "")
    assert "401 Unauthorized: Bad Token" in err
    assert "tsk_wrong_key_abcdef" not in err


def test_403_read_only_key_exit_4(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", READ_ONLY_KEY)
    code, _, err = cli("client-certificates", "delete", "cert-3001")
    assert code == 4
    assert "403 Forbidden" in err and "read-only" in err


def test_404_for_an_id_the_user_named_exit_2(cli: Run) -> None:
    """The user must act (a wrong id), not the service: exit 2, naming the id."""
    code, _, err = cli("error-groups", "get", "no-such-group")
    assert code == 2
    assert err.startswith("testsession: error: no error group with id no-such-group in account ")
    assert "404" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("sessions", "get", UNKNOWN_SESSION)
    assert code == 2 and f"no test session with id {UNKNOWN_SESSION}" in err


def test_a_malformed_session_id_is_refused_before_any_request(
    emulator: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["sessions", "get", "not-a-uuid"])
    assert info.value.code == 2 and "not a test session id: 'not-a-uuid'" in capsys.readouterr().err
    assert emulator.backend.stats()["requestsTotal"] == 0


def test_400_from_the_service_exit_2(cli: Run, tmp_path: Path) -> None:
    body = write(tmp_path, "body.yml", "name: n\nrunLocation: moon-base-1\n")
    code, _, err = cli("sessions", "trigger", "--file", body)
    assert code == 2
    assert "400 Bad Request" in err and "runLocation" in err


def test_429_exit_4(cli: Run, emulator: Emulator) -> None:
    # Retry-After 0 keeps the test fast; the client retries 4 times, then gives up.
    fault = {"route": "get_error_group", "kind": "rate_limit", "retryAfterSeconds": 0, "count": 10}
    assert (
        requests.post(
            f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, json=[fault], timeout=5
        ).status_code
        == 200
    )
    code, out, err = cli("error-groups", "get", CHECK_ERROR_GROUP)
    assert (code, out) == (4, "")
    assert "429 Too Many Requests" in err and "gave up after 5 attempts" in err


def test_402_exit_4(
    world_factory: Callable[..., Emulator],
    default_world: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    default_world["accounts"][0]["plan"] = {"testSessions": True, "analyses": False}
    emu = world_factory(default_world)
    monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
    code = main(["rca", "create", "--error-group", CHECK_ERROR_GROUP, "--base-url", emu.url,
                 "--account-id", emu.account_id])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 4
    assert "402" in err and "plan" in err


def test_missing_credentials_exit_2(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTSESSION_API_KEY")
    code, _, err = cli("sessions", "get", UNKNOWN_SESSION)
    assert code == 2
    assert "TESTSESSION_API_KEY" in err


# --- help and a real process ----------------------------------------------------------------------


def test_help_lists_every_command_and_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    groups = {
        "sessions": ["trigger", "get", "wait", "cancel"],
        "error-groups": ["get"],
        "test-session-error-groups": ["get"],
        "rca": ["get", "create"],
        "incidents": ["add-update"],
        "maintenance-windows": ["delete", "delete-maintenance"],
        "client-certificates": ["delete"],
        "dashboards": ["create"],
        "checks": ["update"],
        "variables": ["list"],
    }
    for group, commands in groups.items():
        for command in commands:
            with pytest.raises(SystemExit) as info:
                main([group, command, "--help"])
            assert info.value.code == 0
            out = capsys.readouterr().out
            assert "env: TESTSESSION_BASE_URL" in out and "TESTSESSION_API_KEY" in out, (group, command)


def test_a_real_process(emulator: Emulator) -> None:
    env = child_env(
        TESTSESSION_BASE_URL=emulator.url,
        TESTSESSION_API_KEY=emulator.api_key,
        TESTSESSION_ACCOUNT_ID=emulator.account_id,
    )
    done = subprocess.run(
        [sys.executable, "-m", "runner.cli.main", "error-groups", "get", CHECK_ERROR_GROUP],
        capture_output=True, text=True, env=env, timeout=30, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["id"] == CHECK_ERROR_GROUP

    done = subprocess.run(
        [sys.executable, "-m", "runner.cli.main", "sessions", "get", UNKNOWN_SESSION],
        capture_output=True, text=True, env=env, timeout=30, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
