"""Words that say what happened: a refused connection is not an answer of the service; world-file
errors point at FILE:LINE with a did-you-mean like spec errors; the live line never shows a check
as running under the line that reports its result; the emulator's reset undoes patched settings."""

from __future__ import annotations

import io
import re
import socket
from pathlib import Path
from typing import Any

import pytest
import requests

from runner.ci.console import Console
from runner.cli.main import main
from runner.client import ApiClient
from runner.core.errors import ConnectionRefusedByPeerError
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.job.events import EventQueue, Progress, ResultFinished, Where
from runner.job.outcome import ResultOutcome
from runner.job.policy import Gate


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_says_nothing_was_sent_not_that_the_service_answered() -> None:
    port = closed_port()
    events = EventQueue()
    client = ApiClient(
        f"http://127.0.0.1:{port}", "tsk_key_unused", "acc", max_retries=1, backoff_base=0.2,
        on_retry=events.retrying,
    )  # fmt: skip
    with client, pytest.raises(ConnectionRefusedByPeerError) as info:
        client.trigger({"name": "x", "runLocation": "eu-west-1"})
    assert f"could not connect to 127.0.0.1:{port} (nothing was sent)" in str(info.value)
    stream = io.StringIO()
    console = Console(stream=stream, environ={})
    while not events.empty():
        event = events.get_nowait()
        if event is not None:
            console.notify(event)
    (line,) = stream.getvalue().splitlines()
    assert re.fullmatch(
        rf"POST /v1/test-sessions/trigger: could not connect to 127\.0\.0\.1:{port} \(nothing was sent\); "
        r"retry 1 in 0\.\d s",
        line,
    ), line
    assert "answered" not in line


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _result(name: str, verdict: str) -> ResultOutcome:
    status = "RUNNING" if verdict == "running" else verdict.upper()
    return ResultOutcome(id=name, name=name, status=status, verdict=verdict, runLocation="eu-west-1")  # type: ignore[arg-type]


def test_the_live_line_drops_a_check_from_running_in_the_redraw_that_prints_its_result() -> None:
    screen = _Terminal()
    console = Console(stream=screen, environ={"TERM": "xterm"}, gate=Gate())
    where = Where("deploy", "eu-west-1")
    console.notify(Progress(where, 1.0, (_result("Fast", "running"), _result("Slow", "running")), 2, 0))
    assert screen.getvalue().endswith("· 0/2 done · running: Fast, Slow")
    before = len(screen.getvalue())
    console.notify(ResultFinished(where, _result("Fast", "passed")))
    redraw = screen.getvalue()[before:]
    line, status = redraw.split("\n")
    assert "PASSED" in line and "Fast" in line
    assert status.endswith("· 1/2 done · running: Slow"), status  # not "running: Fast, Slow"


# --- world files ----------------------------------------------------------------------------------

BAD_WORLD = """\
settings:
  speed: 5
accounts:
  - id: acc-1
    keys: [{key: tsk_world_key_1}]
    checks:
      - id: c1
        name: Homepage
        behavior: fail
        locations: [mars-1]
"""


def test_world_file_errors_name_file_line_and_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = tmp_path / "world.yml"
    world.write_text(BAD_WORLD)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--emulator", "--world", str(world), "--location", "eu-west-1", "--json", ""]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    # One short line: the did-you-mean, not the list of every key a check allows.
    assert (
        lines[0]
        == f"{world}:9: accounts[0].checks[0].behavior: unknown field 'behavior': did you mean 'behaviour'?"
    )
    # Once the field is right, the next problem points at its own line.
    world.write_text(BAD_WORLD.replace("behavior", "behaviour"))
    assert main(["run", "--emulator", "--world", str(world), "--location", "eu-west-1", "--json", ""]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"{world}:10: accounts[0].checks[0].locations: 'mars-1' is not in settings.locations"


def test_a_json_world_gets_lines_too(tmp_path: Path) -> None:
    from runner.emulator.core.world import WorldError, load_world

    world = tmp_path / "world.json"
    world.write_text(
        '{\n  "accounts": [\n    {"id": "a", "keys": [{"key": "tsk_json_key_1"}],\n     "plna": {}}\n  ]\n}\n'
    )
    with pytest.raises(WorldError) as info:
        load_world(world)
    assert str(info.value).startswith(
        f"{world}:4: accounts[0].plna: unknown field 'plna': did you mean 'plan'?"
    )


# --- the emulator's reset -------------------------------------------------------------------------


def test_reset_returns_patched_settings_to_the_loaded_worlds(world_factory: Any) -> None:
    emu: Emulator = world_factory(speed=None)  # the world's own speed
    control = f"{emu.url}/_emulator"
    before = requests.get(f"{control}/settings", headers=CONTROL_HEADERS, timeout=5).json()
    patch = {"speed": 77.0, "analysisDelaySeconds": 9.0, "rateLimit": {"limit": 3, "windowSeconds": 5}}
    patched = requests.patch(f"{control}/settings", headers=CONTROL_HEADERS, json=patch, timeout=5).json()
    assert (patched["speed"], patched["analysisDelaySeconds"], patched["rateLimit"]["limit"]) == (
        77.0,
        9.0,
        3,
    )
    fault = {"route": "trigger", "kind": "status", "status": 503}
    assert requests.post(f"{control}/faults", headers=CONTROL_HEADERS, json=[fault], timeout=5).ok
    assert requests.post(f"{control}/reset", headers=CONTROL_HEADERS, timeout=5).status_code == 204
    assert requests.get(f"{control}/settings", headers=CONTROL_HEADERS, timeout=5).json() == before
    assert requests.get(f"{control}/faults", headers=CONTROL_HEADERS, timeout=5).json() == []


def test_reset_keeps_the_speed_given_at_start(world_factory: Any) -> None:
    emu: Emulator = world_factory(speed=40.0)
    control = f"{emu.url}/_emulator"
    requests.patch(
        f"{control}/settings", headers=CONTROL_HEADERS, json={"speed": 2.0}, timeout=5
    ).raise_for_status()
    requests.post(f"{control}/reset", headers=CONTROL_HEADERS, timeout=5).raise_for_status()
    assert requests.get(f"{control}/settings", headers=CONTROL_HEADERS, timeout=5).json()["speed"] == 40.0
