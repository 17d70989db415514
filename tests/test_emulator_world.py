"""World files (validation, ${VAR} expansion, loading over the control API) and the emulator command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import run_here

from runner.emulator.core.world import WorldError, load_world, parse_world, parse_world_text
from runner.emulator.shell.hosts import CONTROL_HEADERS


def minimal(**check: Any) -> dict[str, Any]:
    base = {"id": "c1", "name": "Check one", "behaviour": "pass", **check}
    return {"accounts": [{"id": "acc-1", "keys": [{"key": "tsk_minimal_key"}], "checks": [base]}]}


def test_default_world_and_example_copy_are_identical(repo_root: Path) -> None:
    packaged = repo_root / "runner" / "emulator" / "world.yml"
    assert packaged.read_text() == (repo_root / "examples" / "emulator-world.yml").read_text()
    world = load_world()
    assert len(world.accounts) >= 3 and not world.accounts[2].plan.analyses
    tags = {tag for check in world.accounts[0].checks for tag in check.tags}
    assert {"smoke", "api", "checkout", "hang", "all-outcomes"} <= tags


def test_credentials_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_from_env_12345")
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", "11111111-2222-4333-8444-555555555555")
    assert load_world().first_key() == ("tsk_from_env_12345", "11111111-2222-4333-8444-555555555555")
    monkeypatch.delenv("TESTSESSION_API_KEY")
    monkeypatch.delenv("TESTSESSION_ACCOUNT_ID")
    assert load_world().first_key()[0] == "tsk_demo_3f9a7c1e5b2d4086"


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        (minimal(behaviour="explode"), "accounts[0].checks[0].behaviour"),
        (minimal(colour="red"), "accounts[0].checks[0].colour: unknown field"),
        ({"accounts": []}, "accounts:"),
        ({"settings": {"speed": 0}, **minimal()}, "settings.speed"),
        (minimal(locations=["mars-1"]), "accounts[0].checks[0].locations"),
        ({"settings": {"faults": [{"route": "nope", "kind": "status"}]}, **minimal()}, "settings.faults[0]"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_world_errors_name_the_field(world: Any, expected: str) -> None:
    with pytest.raises(WorldError) as caught:
        parse_world(world, "my-world.yml")
    message = str(caught.value)
    assert message.startswith("my-world.yml: ") and expected in message and "\n" not in message


def test_world_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WorldError, match=r"missing\.yml: no such file"):
        load_world(tmp_path / "missing.yml")
    broken = tmp_path / "broken.yml"
    broken.write_text("accounts: [unclosed\n")
    with pytest.raises(WorldError, match=r"broken\.yml:2: not valid YAML"):
        load_world(broken)
    monkeypatch.delenv("NO_SUCH_VARIABLE_X", raising=False)
    with pytest.raises(WorldError, match="NO_SUCH_VARIABLE_X} is not set"):
        parse_world_text("accounts: [{id: '${NO_SUCH_VARIABLE_X}', keys: [{key: tsk_abcdefgh}]}]")
    # The spec's expander: a malformed reference is refused, never passed on as text.
    with pytest.raises(WorldError, match=r"accounts\[0\]\.name: malformed \$\{\.\.\.\}"):
        parse_world_text("accounts: [{id: a, name: '${1X}', keys: [{key: tsk_abcdefgh}]}]", environ={})
    monkeypatch.setenv("MY_KEY_VAR", "tsk_expanded_key")
    world = parse_world_text("accounts: [{id: '${ACC_ID:-acc-9}', keys: [{key: '${MY_KEY_VAR}'}]}]")
    assert world.first_key() == ("tsk_expanded_key", "acc-9")


def test_control_api_loads_a_world_and_resets(emulator: Any) -> None:
    control = f"{emulator.url}/_emulator"
    bad = requests.post(
        f"{control}/world",
        headers={**CONTROL_HEADERS, "Content-Type": "application/yaml"},
        data="accounts: []",
        timeout=5,
    )
    assert bad.status_code == 400 and bad.json()["message"] == "world:1: accounts: at least 1 item"
    new_world = minimal(behaviour="fail", errorMessage="boom", durationSeconds=0)
    assert (
        requests.post(f"{control}/world", headers=CONTROL_HEADERS, json=new_world, timeout=5).status_code
        == 204
    )
    headers = {"Authorization": "Bearer tsk_minimal_key", "X-Service-Account": "acc-1"}
    body = {"name": "x", "runLocation": "eu-west-1"}
    session = requests.post(f"{emulator.url}/v1/test-sessions/trigger", json=body, headers=headers, timeout=5)
    assert session.status_code == 201 and session.json()["results"][0]["name"] == "Check one"
    assert requests.post(f"{control}/reset", headers=CONTROL_HEADERS, timeout=5).status_code == 204
    # After a reset, the loaded world stays; its state (sessions) is gone.
    again = requests.get(
        f"{emulator.url}/v1/test-sessions/{session.json()['testSessionId']}", headers=headers, timeout=5
    )
    assert again.status_code == 404
    assert requests.get(f"{control}/stats", headers=CONTROL_HEADERS, timeout=5).json()["sessionsTotal"] == 0


def test_emulator_command_prints_url_and_stops_on_sigterm(repo_root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESTSESSION_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "runner", "emulator", "--port", "0", "--speed", "10"],
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first.startswith("export TESTSESSION_BASE_URL=http://127.0.0.1:")
        url = first.split("=", 1)[1]
        key = process.stdout.readline().strip().split("=", 1)[1]
        account = process.stdout.readline().strip().split("=", 1)[1]
        headers = {"Authorization": f"Bearer {key}", "X-Service-Account": account}
        response = requests.post(
            f"{url}/v1/test-sessions/trigger",
            json={"name": "x", "runLocation": "eu-west-1"},
            headers=headers,
            timeout=5,
        )
        assert response.status_code == 201
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_emulator_command_rejects_a_bad_world(repo_root: Path, tmp_path: Path) -> None:
    world = tmp_path / "w.yml"
    world.write_text("accounts: [{id: a, keys: []}]\n")
    # In this process (helpers.run_here): the claim is the exit code and the one line, not the process.
    result = run_here(["emulator", "--port", "0", "--world", str(world)], dict(os.environ), repo_root)
    assert result.returncode == 2
    assert result.stderr == f"{world}:1: accounts[0].keys: at least 1 item\n"
