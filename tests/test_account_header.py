"""The account header's name is configuration: the world for the emulator, TESTSESSION_ACCOUNT_HEADER or
--account-header for the tool (default X-Service-Account, as our API document says)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import default_world_dict

from runner.cli.main import main
from runner.client import ApiClient
from runner.core.errors import InvalidRequestError, PermissionDeniedError
from runner.emulator import Emulator
from runner.emulator.core.world import WorldError, parse_world

PRODUCTION = "x-checkly-account"


def production_world() -> dict[str, Any]:
    world = default_world_dict()
    world["settings"]["accountHeader"] = PRODUCTION
    return world


def get_session_status(emu: Emulator, headers: dict[str, str]) -> int:
    body = {"name": "h", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke"]]}}
    auth = {"Authorization": f"Bearer {emu.api_key}", **headers}
    return requests.post(
        f"{emu.url}/v1/test-sessions/trigger", json=body, headers=auth, timeout=5
    ).status_code


def test_default_emulator_reads_x_service_account_only(emulator: Emulator) -> None:
    assert get_session_status(emulator, {"X-Service-Account": emulator.account_id}) == 201
    assert get_session_status(emulator, {"x-service-account": emulator.account_id}) == 201  # any case
    assert get_session_status(emulator, {PRODUCTION: emulator.account_id}) == 403


def test_configured_emulator_reads_the_configured_header_only(world_factory: Any) -> None:
    emu = world_factory(production_world())
    assert get_session_status(emu, {PRODUCTION: emu.account_id}) == 201
    assert get_session_status(emu, {"X-Checkly-Account": emu.account_id}) == 201
    auth = {"Authorization": f"Bearer {emu.api_key}", "X-Service-Account": emu.account_id}
    answer = requests.get(f"{emu.url}/v1/test-sessions/nope", headers=auth, timeout=5)
    assert answer.status_code == 403 and PRODUCTION in answer.json()["message"]
    # The OpenAPI document names the header the emulator reads.
    document = requests.get(f"{emu.url}/openapi.json", timeout=5).json()
    parameters = document["paths"]["/v1/test-sessions/{testSessionId}"]["get"]["parameters"]
    assert PRODUCTION in {p["name"] for p in parameters if p["in"] == "header"}


def test_client_sends_the_configured_header(world_factory: Any) -> None:
    emu = world_factory(production_world())
    body = {"name": "h", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke"]]}}
    with ApiClient(emu.url, emu.api_key, emu.account_id, account_header=PRODUCTION) as client:
        assert client.trigger(body).status == "RUNNING"
    with (
        ApiClient(emu.url, emu.api_key, emu.account_id, max_retries=0) as client,
        pytest.raises(PermissionDeniedError),
    ):
        client.trigger(body)


def test_client_refuses_a_header_name_that_is_not_one() -> None:
    with pytest.raises(InvalidRequestError, match="account header"):
        ApiClient("http://127.0.0.1:9", "k", "a", account_header="X Account")


@pytest.mark.parametrize("name", ["X Account", "", "Authorization", "x-a:b"])
def test_world_refuses_a_bad_header_name(name: str) -> None:
    world = {
        "settings": {"accountHeader": name},
        "accounts": [{"id": "a", "keys": [{"key": "tsk_12345678"}]}],
    }
    with pytest.raises(WorldError, match=r"settings\.accountHeader"):
        parse_world(world)


@pytest.fixture
def cli_env(world_factory: Any, monkeypatch: pytest.MonkeyPatch) -> Emulator:
    emu: Emulator = world_factory(production_world())
    monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
    monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emu.account_id)
    return emu


def trigger_code(tmp_path: Path, *flags: str) -> int:
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"name": "h", "runLocation": "eu-west-1"}), encoding="utf-8")
    return main(["sessions", "trigger", "--file", str(body), *flags])


def test_cli_flag_and_environment_choose_the_header(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trigger_code(tmp_path) == 4  # X-Service-Account: the emulator says 403
    assert "x-checkly-account" in capsys.readouterr().err
    assert trigger_code(tmp_path, "--account-header", PRODUCTION) == 0
    monkeypatch.setenv("TESTSESSION_ACCOUNT_HEADER", PRODUCTION)
    assert trigger_code(tmp_path) == 0
    capsys.readouterr()


def test_cli_bad_header_name_is_a_usage_error(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trigger_code(tmp_path, "--account-header", "X Account") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--account-header" in err and "Traceback" not in err


def test_run_emulator_uses_the_worlds_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_ACCOUNT_HEADER", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    world = production_world()
    world["settings"]["speed"] = 25
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    argv = ["run", "--location", "eu-west-1", "--tag", "smoke", "--emulator", "--world", str(path)]
    assert main([*argv, "--json", "", "--junit", "", "--markdown", ""]) == 0
    capsys.readouterr()
