"""Every check run ends: a hanging check fails as timed out at its maximum run time, so an untargeted
session of the default world ends on its own (`run --emulator`, `sessions wait`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import HANG_CHECK, auth_headers, default_world_dict, never_ending_world

from runner.cli.main import main
from runner.emulator import Emulator
from runner.emulator.core.world import WorldError, parse_world

BODY = {"name": "untargeted", "runLocation": "eu-west-1"}


def trigger(emu: Emulator, body: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = requests.post(
        f"{emu.url}/v1/test-sessions/trigger", json=body or BODY, headers=auth_headers(emu), timeout=5
    )
    assert answer.status_code == 201, answer.text
    data: dict[str, Any] = answer.json()
    return data


def get(emu: Emulator, session_id: str) -> dict[str, Any]:
    answer = requests.get(f"{emu.url}/v1/test-sessions/{session_id}", headers=auth_headers(emu), timeout=5)
    data: dict[str, Any] = answer.json()
    return data


def advance(emu: Emulator, seconds: float) -> None:
    emu.backend.advance(seconds)


def final_of(session: dict[str, Any], check_id: str) -> dict[str, Any]:
    (row,) = [r for r in session["results"] if r["checkId"] == check_id and r["resultType"] == "FINAL"]
    return row


def test_hanging_check_fails_as_timed_out_at_its_maximum(world_factory: Any) -> None:
    emu = world_factory(speed=0.001)  # the test moves the clock itself
    session = trigger(emu, {**BODY, "target": {"matchTags": [["hang"]]}})
    advance(emu, 59)
    assert get(emu, session["testSessionId"])["status"] == "RUNNING"
    advance(emu, 1.5)  # the default world's hanging check stops at its own maxRunSeconds: 60
    done = get(emu, session["testSessionId"])
    assert done["status"] == "FAILED" and done["stoppedAt"]
    row = final_of(done, HANG_CHECK)
    assert row["status"] == "FAILED" and row["hasErrors"] and not row["hasFailures"]
    assert row["responseTime"] == 60_000
    assert "timed out" in row["errorMessage"] and "60 seconds" in row["errorMessage"]
    # The timeout is an error like any other: it has an error group with that message.
    (group_id,) = row["errorGroupIds"]
    group = requests.get(
        f"{emu.url}/v1/test-session-error-groups/{group_id}", headers=auth_headers(emu), timeout=5
    ).json()
    assert group["rawErrorMessage"] == row["errorMessage"]


def test_maximum_run_time_by_check_type_and_overrides(world_factory: Any) -> None:
    world = default_world_dict()
    account = world["accounts"][0]
    account["checks"] = [
        {"id": "api-hang", "name": "api hang", "checkType": "API", "tags": ["t"], "behaviour": "hang"},
        {"id": "browser-hang", "name": "b hang", "checkType": "BROWSER", "tags": ["t"], "behaviour": "hang"},
        {"id": "tcp-slow", "name": "slow", "checkType": "TCP", "tags": ["t"], "durationSeconds": 45},
        {
            "id": "own",
            "name": "own",
            "checkType": "API",
            "tags": ["t"],
            "behaviour": "hang",
            "maxRunSeconds": 7,
        },
    ]
    account["errorGroups"] = []
    world["settings"]["maxRunSeconds"] = {"TCP": 12}  # merged over the defaults
    emu = world_factory(world, speed=0.001)
    session = trigger(emu, {**BODY, "target": {"matchTags": [["t"]]}})
    advance(emu, 300)
    done = get(emu, session["testSessionId"])
    seconds = {r["checkId"]: r["responseTime"] / 1000 for r in done["results"]}
    # API 30 s and BROWSER 240 s as production; TCP from the world's settings; `own` from the check.
    assert seconds == {"api-hang": 30, "browser-hang": 240, "tcp-slow": 12, "own": 7}
    assert all(r["status"] == "FAILED" and "timed out" in r["errorMessage"] for r in done["results"])


def test_untargeted_session_of_the_default_world_ends_within_two_simulated_minutes(
    world_factory: Any,
) -> None:
    emu = world_factory(speed=0.001)
    session = trigger(emu)
    assert len(session["results"]) == 8  # every active check, the hanging one included
    advance(emu, 120)
    assert get(emu, session["testSessionId"])["status"] == "FAILED"


def test_a_world_can_keep_a_hanging_check_running_forever(world_factory: Any) -> None:
    emu = world_factory(never_ending_world(), speed=0.001)
    session = trigger(emu, {**BODY, "target": {"matchTags": [["hang"]]}})
    advance(emu, 100_000)
    assert get(emu, session["testSessionId"])["status"] == "RUNNING"


@pytest.mark.parametrize(
    ("settings", "check", "field"),
    [
        ({"maxRunSeconds": {"API": 0}}, {}, "settings.maxRunSeconds"),
        ({}, {"maxRunSeconds": -1}, "maxRunSeconds"),
        ({}, {"maxRunSeconds": "forever"}, "maxRunSeconds"),
    ],
)
def test_bad_maximum_run_times_are_world_errors(
    settings: dict[str, Any], check: dict[str, Any], field: str
) -> None:
    world = {
        "settings": settings,
        "accounts": [
            {"id": "a", "keys": [{"key": "tsk_12345678"}], "checks": [{"id": "c", "name": "c", **check}]}
        ],
    }
    with pytest.raises(WorldError, match=field):
        parse_world(world)


# --- the CLI: an untargeted session ends on its own ---------------------------------------------


def fast_default_world(tmp_path: Path) -> Path:
    """The default world at 200 simulated seconds per second: the 60 s timeout takes 0.3 s."""
    world = default_world_dict()
    world["settings"]["speed"] = 200
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_ACCOUNT_HEADER", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_untargeted_run_on_the_emulator_ends_on_its_own(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = fast_default_world(clean_env)
    results = clean_env / "results.json"
    argv = ["run", "--location", "eu-west-1", "--emulator", "--world", str(world), "--no-rca"]
    code = main([*argv, "--json", str(results), "--junit", "", "--markdown", ""])
    capsys.readouterr()
    assert code == 1  # failing checks, not 3 (timeout)
    data = json.loads(results.read_text(encoding="utf-8"))
    (session,) = data["sessions"]
    assert session["status"] == "FAILED"


def test_sessions_wait_of_an_untargeted_session_ends(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with Emulator(world=fast_default_world(clean_env)) as emu:
        monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
        monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
        monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emu.account_id)
        body = clean_env / "body.json"
        body.write_text(json.dumps(BODY), encoding="utf-8")
        assert main(["sessions", "trigger", "--file", str(body)]) == 0
        session_id = json.loads(capsys.readouterr().out)["testSessionId"]
        code = main(["sessions", "wait", session_id, "--timeout", "20"])
        out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["status"] == "FAILED"
