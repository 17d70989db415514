"""Known or new for checks that run for real, with one --state file and `--fail-on new` (trial25's
finding 5): a failure is known only when it is the same failure, the same status, the same failed
assertion with the same received value; session ids, ports and latencies do not make it new."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer, free_port
from conftest import CI_PREFIXES

from runner.cli.main import main
from runner.core.messages import clean_message, error_hash


def the_world(web: HttpServer) -> dict[str, Any]:
    def check(number: int, name: str, request: dict[str, Any], tag: str = "known") -> dict[str, Any]:
        return {"id": f"00000000-0000-4000-8000-00000000005{number}", "name": name, "checkType": "API",
                "tags": [tag], "request": request}  # fmt: skip

    return {
        "settings": {"analysisDelaySeconds": 0},
        "accounts": [{
            "id": "7d3e5c1a-2b4f-4a6e-9c8d-0e1f2a3b4c5d",
            "keys": [{"key": "tsk_known_real_0123456789"}],
            "checks": [
                # The session variable CART picks the status: 503 (a store down), then 404 (a route gone).
                check(1, "Cart API", {"url": web.url("/status/{{CART}}"), "assertions": [
                    {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]}),
                # Received: another duration every run, the same failure each time.
                check(2, "Fast enough", {"url": web.url("/slow?ms=20"), "assertions": [
                    {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "1"}]}),
                # Refused at another port every run (DOWN): the same failure each time. An error: never
                # forgiven by the gate, known or not, so it has a tag of its own.
                check(3, "Down", {"url": "http://127.0.0.1:{{DOWN}}/health"}, tag="down"),
            ],
        }],
    }  # fmt: skip


@pytest.fixture
def run(
    web: HttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Any:
    for name in list(os.environ):  # a run must not publish into the CI job running the tests
        if name.startswith((*CI_PREFIXES, "TESTSESSION_")) or name == "CI":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    world = tmp_path / "world.yml"
    world.write_text(yaml.safe_dump(the_world(web)), encoding="utf-8")

    def once(cart: str, tag: str = "known") -> tuple[int, dict[str, dict[str, Any]], str]:
        out = tmp_path / "out.json"
        code = main(["run", "--emulator", "--world", str(world), "--state", str(tmp_path / "state.db"),
                     "--tag", tag, "--location", "eu-west-1", "--env", f"CART={cart}", "--env",
                     f"DOWN={free_port()}", "--fail-on", "new", "--json", str(out), "--junit", "",
                     "--markdown", ""])  # fmt: skip
        console = capsys.readouterr()
        results = json.loads(out.read_text(encoding="utf-8"))
        outcomes = {r["name"]: r for s in results["sessions"] for r in s["results"]}
        return code, outcomes, console.out + console.err

    return once


def test_a_404_after_a_503_is_new_and_the_same_503_again_is_known(run: Any) -> None:
    code, first, console = run("503")
    assert code == 1, console
    assert first["Cart API"]["error"] == "STATUS_CODE EQUALS 200: received 503"
    assert not any(result["known"] for result in first.values())

    # The same failures again: another latency, another session. Known: the gate passes.
    code, again, console = run("503")
    assert again["Cart API"]["known"] is True and again["Fast enough"]["known"] is True, console
    assert again["Fast enough"]["error"].startswith("RESPONSE_TIME LESS_THAN 1: received ")
    assert code == 0, console

    # A 404 is another failure than yesterday's 503: new, and the gate fails.
    code, then, console = run("404")
    assert then["Cart API"]["error"] == "STATUS_CODE EQUALS 200: received 404"
    assert then["Cart API"]["known"] is False and then["Fast enough"]["known"] is True
    assert code == 1, console
    assert "received 404 [new]" in console


def test_a_network_error_at_another_port_is_the_same_failure(run: Any) -> None:
    _, first, console = run("503", tag="down")
    assert first["Down"]["known"] is False, console
    _, again, console = run("503", tag="down")
    assert again["Down"]["error"] != first["Down"]["error"]  # another port in the message
    assert again["Down"]["known"] is True, console  # grouped as `connection refused: <ip>:<port>`


def test_a_state_file_of_the_previous_version_keeps_exact_repeats_known(run: Any, tmp_path: Path) -> None:
    """Groups keyed before fingerprints (every number replaced, no fingerprint in the evidence): a
    failure whose message is the group's last one is still known, any other is new."""
    code, _, console = run("503")
    assert code == 1, console
    with sqlite3.connect(tmp_path / "state.db") as db:
        for group_id, raw, extra in db.execute("SELECT id, raw, extra FROM error_groups").fetchall():
            data = json.loads(extra)
            data.get("evidence", {}).pop("fingerprint", None)
            cleaned = clean_message(raw)
            db.execute(
                "UPDATE error_groups SET cleaned = ?, hash = ?, extra = ? WHERE id = ?",
                (cleaned, error_hash(cleaned), json.dumps(data), group_id),
            )
    code, again, console = run("503")
    assert again["Cart API"]["known"] is True, console  # the same message as the old group's last one
    assert again["Fast enough"]["known"] is False  # its old message held another duration
    code, then, console = run("404")
    assert then["Cart API"]["known"] is False and code == 1, console
