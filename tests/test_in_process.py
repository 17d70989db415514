"""A run of a world reaches the emulator in this process (runner/emulator/core/answers.py, the one
table of handlers the HTTP shell's route calls too): the same answers as over HTTP, malformed
requests included, no FastAPI, uvicorn or requests loaded, and a world whose faults need a socket
still served over HTTP. A checks file's run reaches no emulator at all (runner/job/local.py)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from checks_servers import HttpServer
from helpers import child_env, run_here

from runner.emulator import Emulator
from runner.emulator.core.answers import serve
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models.operations import PREFIX


def _headers(emu: Emulator) -> dict[str, str]:
    return {"Authorization": f"Bearer {emu.api_key}", emu.account_header: emu.account_id}


def _both(emu: Emulator, method: str, path: str, **kwargs: Any) -> tuple[Any, Any]:
    """The same request over HTTP and in-process (against the same Backend): (status, body) each."""
    headers = _headers(emu)
    headers.update(kwargs.pop("headers", {}))
    params, body = kwargs.get("params"), kwargs.get("json")
    over_http = requests.request(method, emu.url + path, headers=headers, timeout=10, **kwargs)
    here = serve(emu.backend, method, path, params, body, headers)
    return (over_http.status_code, over_http.json() if over_http.content else None), (
        here.status,
        json.loads(here.body) if here.body else None,
    )


def test_the_in_process_answers_are_the_http_answers(emulator: Emulator) -> None:
    # The checkout checks only: they fail (error groups to compare) and end within a fraction of a
    # second; the whole default world waited 2.4 s for its hanging check's maximum run time.
    trigger = {"name": "parity", "runLocation": "eu-west-1", "target": {"matchTags": [["checkout"]]}}
    # The analysis below stays pending on both sides: the world's 2 simulated seconds are 0.08 s at
    # the test speed, less than a loaded machine may take between the two reads.
    requests.patch(
        f"{emulator.url}/_emulator/settings",
        headers=CONTROL_HEADERS,
        json={"analysisDelaySeconds": 3600},
        timeout=5,
    ).raise_for_status()
    started = requests.post(
        f"{emulator.url}{PREFIX}/test-sessions/trigger",
        json=trigger,
        headers={"Authorization": f"Bearer {emulator.api_key}", emulator.account_header: emulator.account_id},
        timeout=10,
    )
    assert started.status_code == 201, started.text
    session_id = started.json()["testSessionId"]
    deadline = time.monotonic() + 20
    while True:  # until the session is final: both sides then render the same, settled session
        completion = f"{PREFIX}/test-sessions/{session_id}/completion"
        http, here = _both(emulator, "GET", completion, params={"maxWaitSeconds": 1})
        if http[0] == 200 or time.monotonic() > deadline:
            break
    assert http == here and http[0] == 200
    assert _both(emulator, "GET", f"{PREFIX}/test-sessions/{session_id}") == (http, http)

    groups = [g for r in http[1]["results"] for g in r.get("errorGroupIds", [])]
    assert groups, "the default world's session has failures"
    group_http, group_here = _both(emulator, "GET", f"{PREFIX}/test-session-error-groups/{groups[0]}")
    assert group_http == group_here and group_http[0] == 200

    create = f"{PREFIX}/root-cause-analyses/test-session-error-groups/{groups[0]}"
    created = serve(emulator.backend, "POST", create, None, None, _headers(emulator))
    assert created.status == 202  # the row's status, as over HTTP
    analysis = json.loads(created.body)["id"]
    assert _same(_both(emulator, "GET", f"{PREFIX}/root-cause-analyses/{analysis}"), 202)

    # Errors: the same status and the same error body (statusCode, error, message).
    missing = "00000000-0000-4000-8000-000000000000"
    assert _same(_both(emulator, "GET", f"{PREFIX}/test-sessions/{missing}"), 404)
    bad_key = {"Authorization": "Bearer tsk_not_a_key_of_this_world"}
    assert _same(_both(emulator, "GET", f"{PREFIX}/test-sessions/{session_id}", headers=bad_key), 401)
    assert _same(_both(emulator, "POST", f"{PREFIX}/test-sessions/trigger", json={"name": 7}), 400)


def _same(pair: tuple[Any, Any], status: int) -> bool:
    http, here = pair
    assert http[0] == here[0] == status, pair
    assert http[1] == here[1], pair
    return True


MISSING = "00000000-0000-4000-8000-000000000000"
SESSION = f"{PREFIX}/test-sessions/{MISSING}"
TRIGGER = f"{PREFIX}/test-sessions/trigger"
# (method, path, query, raw body, status, message): each malformed the way a client or a fuzzer can.
MALFORMED = [
    ("GET", SESSION + "/completion", {"maxWaitSeconds": "99"}, None, 400,
     "query.maxWaitSeconds: must be less than or equal to 30"),
    ("GET", f"{PREFIX}/checks", {"limit": "0", "page": "x"}, None, 400,
     "query.limit: must be greater than or equal to 1; query.page: expected a whole number, got text"),
    ("GET", f"{PREFIX}/checks", {"apiCheckUrlFilterPattern": ""}, None, 400, None),
    ("POST", TRIGGER, None, b'{"name": ', 400, "body: invalid JSON"),
    ("POST", TRIGGER, None, b'{"name": "x", "runLocation": "eu-west-1", "bogus": 1}', 400,
     "bogus: unknown field"),
    ("POST", TRIGGER, None, b'{"name": 7, "runLocation": "eu-west-1"}', 400,
     "name: expected a string, got a number"),
    ("POST", TRIGGER, None, b'{"runLocation": "eu-west-1"}', 400, "name: required field is missing"),
    ("POST", TRIGGER, None, b"", 400, "body: required (a JSON object)"),
    ("PUT", f"{PREFIX}/checks/c", {"autoAssignAlerts": "maybe"}, b'{"name": "x"}', 400, None),
    ("DELETE", f"{PREFIX}/maintenance-windows/0", None, None, 400, None),
    ("GET", SESSION, None, None, 404, "Test session not found"),
    ("GET", f"{PREFIX}/error-groups/{MISSING}", None, None, 404, None),
    ("GET", f"{PREFIX}/no-such-thing", None, None, 404, "Not Found"),
    ("GET", f"{PREFIX}/checks/a%2Fb", None, None, 404, None),  # one segment both ways: an unknown id
    ("DELETE", TRIGGER, None, None, 405, "Method Not Allowed"),
    ("POST", f"{PREFIX}/dashboards", None, b'{"header": 5}', 400, "header: expected a string, got a number"),
]  # fmt: skip


@pytest.mark.parametrize("case", MALFORMED, ids=lambda case: f"{case[0]} {case[1]} {case[4]}")
def test_a_malformed_request_gets_the_same_answer_in_process_and_over_http(
    module_emulator: Emulator, case: tuple[str, str, dict[str, str] | None, bytes | None, int, str | None]
) -> None:
    """Bad query bounds, bad JSON, unknown fields, wrong types, a missing key, an unknown id, an
    unknown path: the same status and the same body (every problem in one message) both ways."""
    method, path, query, raw, status, message = case
    headers = {**_headers(module_emulator), "Content-Type": "application/json"}
    sent = requests.request(
        method, module_emulator.url + path, params=query, data=raw, headers=headers, timeout=10
    )
    here = serve(module_emulator.backend, method, path, query, raw, headers)
    assert (sent.status_code, sent.json()) == (here.status, json.loads(here.body))
    assert here.status == status and sent.headers.get("Allow") == here.headers.get("Allow")
    body = json.loads(here.body)
    assert body["statusCode"] == status and body["error"] and body["message"]
    if message is not None:
        assert body["message"] == message


PROBE = """
import sys
from runner.cli.main import main
code = main(sys.argv[1:])
LIBRARIES = ("fastapi", "uvicorn", "starlette", "requests", "urllib3")
print("LOADED:" + ",".join(sorted(m for m in LIBRARIES if m in sys.modules)))
print("EMULATOR:" + ",".join(sorted(m for m in sys.modules if m.startswith("runner.emulator"))))
SERVICE = ("runner.client", "runner.job.remote", "runner.job.session")
print("CLIENT:" + ",".join(sorted(m for m in sys.modules if m.startswith(SERVICE))))
raise SystemExit(code)
"""


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, "run", *argv, "--no-rca", "-v"],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _checks(tmp_path: Path, web: HttpServer) -> None:
    status_200 = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]
    checks = [
        {"name": name, "checkType": "API", "request": {"method": "GET", "url": url, "assertions": status_200}}
        for name, url in (("Health", web.url("/json")), ("Missing", web.url("/status/404")))
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")


def test_a_checks_file_runs_without_an_http_server(web: HttpServer, tmp_path: Path) -> None:
    _checks(tmp_path, web)
    ran = _run(tmp_path, "--checks", "checks.yml")
    assert ran.returncode == 1, ran.stderr
    assert "checks run in this process by the engine (no service, no emulator)" in ran.stderr
    # Nothing of FastAPI, uvicorn or Starlette, nor of requests: no request crosses a socket.
    assert "LOADED:\n" in ran.stdout + "\n", ran.stdout
    # Nor any module of the emulator: the engine's attempts go to the job directly.
    assert "EMULATOR:\n" in ran.stdout + "\n", ran.stdout
    # Nor the service's client and worker (job/run.py takes the source it is given).
    assert "CLIENT:\n" in ran.stdout + "\n", ran.stdout
    data = json.loads((tmp_path / "testsession-reports" / "results.json").read_text(encoding="utf-8"))
    statuses = {r["name"]: r["status"] for s in data["sessions"] for r in s["results"]}
    assert statuses == {"Health": "PASSED", "Missing": "FAILED"} and data["exitCode"] == 1


def test_a_spec_with_a_checks_file_loads_nothing_of_the_emulator(web: HttpServer, tmp_path: Path) -> None:
    """`checks: FILE` in a spec is the same local run as --checks; a world is the emulator's (the
    probe sees its modules: the test can tell the two apart)."""
    _checks(tmp_path, web)
    (tmp_path / "spec.yml").write_text("checks: checks.yml\nrunLocation: local\n", encoding="utf-8")
    ran = _run(tmp_path, "spec.yml")
    assert ran.returncode == 1, ran.stderr
    assert "EMULATOR:\n" in ran.stdout + "\n" and "CLIENT:\n" in ran.stdout + "\n", ran.stdout
    world = {
        "accounts": [
            {
                "id": "a",
                "keys": [{"key": "tsk_test_0123456789"}],
                "checks": [{"id": "c", "name": "C", "durationSeconds": 0}],
            }
        ]
    }
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    (tmp_path / "world-spec.yml").write_text("runLocation: eu-west-1\n", encoding="utf-8")
    served = _run(tmp_path, "world-spec.yml", "--emulator", "--world", "world.yml")
    assert served.returncode == 0, served.stderr
    assert "EMULATOR:runner.emulator" in served.stdout, served.stdout
    assert "CLIENT:runner.client" in served.stdout, served.stdout  # the probe tells the two apart


def test_a_run_in_this_process_leaves_the_collector_as_it_found_it(web: HttpServer, tmp_path: Path) -> None:
    """A run pauses the cyclic collector for its start-up and freezes what that made (core/memory.py):
    a process that calls main() gets its collector back as it was, nothing left frozen."""
    _checks(tmp_path, web)
    before = gc.get_threshold()
    ran = run_here(["run", "--checks", "checks.yml", "--no-rca"], child_env(), tmp_path)
    assert ran.returncode == 1, ran.stderr  # Missing fails: the run went all the way
    assert gc.isenabled() and gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_world_with_faults_is_still_served_over_http(tmp_path: Path) -> None:
    """A fault acts on the connection (here: the first wait for the session's end answers 503), so the
    run goes through the HTTP shell, and the client's retry is what the user sees. (The completion,
    not a read of the running session: that read comes 2 s into a run, and the check had to last
    2.5 s for it.)"""
    world = {
        "settings": {"faults": [{"route": "completion", "kind": "status", "status": 503, "count": 1}]},
        "accounts": [{"id": "acc-1", "keys": [{"key": "tsk_minimal_key"}], "checks": [
            {"id": "c1", "name": "Check one", "behaviour": "pass", "durationSeconds": 0.2}]}],
    }  # fmt: skip
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    (tmp_path / "spec.yml").write_text("name: faults\nrunLocation: eu-west-1\n", encoding="utf-8")
    ran = _run(tmp_path, "spec.yml", "--emulator", "--world", "world.yml")
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    assert "emulator serving at http://127.0.0.1:" in said and "503" in said, said
    assert "LOADED:fastapi,requests,starlette,urllib3,uvicorn" in ran.stdout, ran.stdout


def test_edge_parameters_and_a_crash_answer_as_over_http(emulator: Emulator, monkeypatch: Any) -> None:
    """Statuses of the corners a run does not send today (a page, an empty filter, a check's error
    group), and an unexpected failure inside the service: a 500 in the service's shape, as the HTTP
    shell's crash handler answers it (the client retries a 500), never an exception out of the
    transport."""
    checks = f"{PREFIX}/checks"
    assert _same(_both(emulator, "GET", checks, params={"limit": 2, "page": 1}), 200)
    http, here = _both(emulator, "GET", checks, params={"apiCheckUrlFilterPattern": ""})
    assert http[0] == here[0] == 400
    missing = "00000000-0000-4000-8000-000000000000"
    assert _same(_both(emulator, "GET", f"{PREFIX}/error-groups/{missing}"), 404)

    def broken(*_args: Any) -> Any:
        raise OSError("database or disk is full")

    monkeypatch.setattr(emulator.backend, "get_session", broken)
    answer = serve(
        emulator.backend, "GET", f"{PREFIX}/test-sessions/{missing}", None, None, _headers(emulator)
    )
    assert answer.status == 500
    assert json.loads(answer.body) == {"statusCode": 500, "error": "Internal Server Error",
                                       "message": "Internal Server Error"}  # fmt: skip


def test_a_long_poll_waiting_when_the_emulator_stops_is_answered_at_once() -> None:
    """The completion long poll waits on a thread of the shell's pool: when the server stops it is
    answered (408: ask again) instead of holding the stop, or the process, for up to 30 s."""
    from conftest import never_ending_world

    emu = Emulator(world=never_ending_world()).start()
    try:
        body = {"name": "stop", "runLocation": "eu-west-1", "target": {"matchTags": [["hang"]]}}
        started = requests.post(
            f"{emu.url}{PREFIX}/test-sessions/trigger", json=body, headers=_headers(emu), timeout=10
        )
        assert started.status_code == 201, started.text
        path = f"{emu.url}{PREFIX}/test-sessions/{started.json()['testSessionId']}/completion"
        answers: list[requests.Response] = []
        poll = threading.Thread(
            target=lambda: answers.append(
                requests.get(path, params={"maxWaitSeconds": 30}, headers=_headers(emu), timeout=40)
            )
        )
        poll.start()
        deadline = time.monotonic() + 10
        while not emu.backend._listeners and time.monotonic() < deadline:  # the poll is waiting
            time.sleep(0.01)
        assert emu.backend._listeners
    finally:
        emu.stop()
    poll.join(10)
    assert not poll.is_alive() and answers[0].status_code == 408, answers
