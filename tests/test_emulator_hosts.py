"""The emulator serves only its own host, its control API only to requests a web page cannot send,
and /v1 checks the key before it reads a bounded body (issue 40, item 3). Over real HTTP, against an
emulator on a free port of loopback.

The probe behind it: `POST /_emulator/world` with `Host: attacker.example:PORT` and a text/plain body
replaced the world (204), and a trigger through the same name then read an internal page back; a 100 MB
session name was accepted (612 MB RSS), and ~440 MB were read before a 401.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from emulator_ids import ACCOUNT, KEY

from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS, AllowedHosts
from runner.emulator.shell.intake import MAX_BODY_BYTES

API = {"Authorization": f"Bearer {KEY}", "X-Service-Account": ACCOUNT}
TRIGGER = "/v1/test-sessions/trigger"
BODY = {"name": "hosts", "runLocation": "eu-west-1"}
ONE_CHECK_WORLD = """\
accounts:
  - id: 11111111-2222-4333-8444-555555555555
    keys: [{key: tsk_attacker_0123456789ab}]
    checks: [{id: c1, name: planted, behaviour: pass}]
"""


@pytest.fixture
def emulator(module_emulator: Emulator) -> Emulator:
    module_emulator.backend.reset()
    return module_emulator


def world_names(emu: Emulator) -> list[str]:
    return [account.id for account in emu.backend.world.accounts]


# --- the Host ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["attacker.example:{port}", "attacker.example", "127.0.0.1.nip.io:{port}", ""]
)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", TRIGGER, BODY),
        ("GET", "/v1/checks", None),
        ("GET", "/openapi.json", None),
        ("GET", "/", None),
    ],
)
def test_a_foreign_host_is_421_on_every_route(
    emulator: Emulator, host: str, method: str, path: str, body: Any
) -> None:
    headers = {**API, "Host": host.format(port=emulator.port)}
    answer = requests.request(method, emulator.url + path, json=body, headers=headers, timeout=5)
    assert answer.status_code == 421, answer.text
    error = answer.json()
    assert error["statusCode"] == 421 and error["error"] == "Misdirected Request"
    assert "Host" in error["message"]
    assert emulator.backend.stats()["sessionsTotal"] == 0


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST", "localhost."]
)
def test_the_emulators_own_names_are_served(emulator: Emulator, host: str) -> None:
    headers = {**API, "Host": host.format(port=emulator.port)}
    answer = requests.post(emulator.url + TRIGGER, json=BODY, headers=headers, timeout=5)
    assert answer.status_code == 201, answer.text


def test_a_name_given_with_allow_host_is_served_and_no_other() -> None:
    with Emulator(allow_hosts=("emulator.internal",)) as emu:
        given = {**API, "Host": f"emulator.internal:{emu.port}"}
        assert requests.post(emu.url + TRIGGER, json=BODY, headers=given, timeout=5).status_code == 201
        other = {**API, "Host": f"other.internal:{emu.port}"}
        assert requests.post(emu.url + TRIGGER, json=BODY, headers=other, timeout=5).status_code == 421


def test_which_names_a_bind_address_answers_to() -> None:
    loopback = AllowedHosts("127.0.0.1")
    assert loopback.allows("127.0.0.1:8484") and loopback.allows("[::1]:1") and loopback.allows("localhost")
    assert not loopback.allows("10.0.0.5:8484")  # an address it does not listen on
    assert not loopback.allows("user@localhost") and not loopback.allows("localhost/x")
    assert not loopback.allows("localhost:99999") and not loopback.allows(None)
    wildcard = AllowedHosts("0.0.0.0", ["emu"])
    assert wildcard.allows("10.0.0.5:8484") and wildcard.allows("[fe80::1]:80") and wildcard.allows("emu:80")
    assert not wildcard.allows("attacker.example")
    assert AllowedHosts("10.0.0.5").allows("10.0.0.5:8484")


def test_the_rebinding_probe_replaces_no_world_and_reads_no_page(emulator: Emulator) -> None:
    """The probe of issue 40 step by step: each step is refused, the world is the one loaded."""
    before = world_names(emulator)
    rebound = {"Host": f"attacker.example:{emulator.port}", "Content-Type": "text/plain"}
    loaded = requests.post(
        f"{emulator.url}/_emulator/world", data=ONE_CHECK_WORLD, headers=rebound, timeout=5
    )
    assert loaded.status_code == 421
    # Even with everything a script could add, through a name of the attacker's nothing answers.
    scripted = {**rebound, **CONTROL_HEADERS, "Content-Type": "application/yaml"}
    loaded = requests.post(
        f"{emulator.url}/_emulator/world", data=ONE_CHECK_WORLD, headers=scripted, timeout=5
    )
    assert loaded.status_code == 421
    assert world_names(emulator) == before
    attacker = {
        "Authorization": "Bearer tsk_attacker_0123456789ab",
        "Host": f"attacker.example:{emulator.port}",
    }
    read = requests.get(f"{emulator.url}/v1/test-sessions/x", headers=attacker, timeout=5)
    assert read.status_code == 421


# --- the control API --------------------------------------------------------------------------------


def test_a_simple_cross_site_request_to_the_control_api_is_refused(emulator: Emulator) -> None:
    """What a form or a no-cors fetch can send: POST with a text/plain (or form) body, no custom header."""
    before = world_names(emulator)
    url = f"{emulator.url}/_emulator/world"
    for content_type in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ):
        answer = requests.post(url, data=ONE_CHECK_WORLD, headers={"Content-Type": content_type}, timeout=5)
        assert answer.status_code == 403, answer.text
        assert "X-Testsession-Emulator" in answer.json()["message"]
    assert requests.post(f"{emulator.url}/_emulator/reset", timeout=5).status_code == 403
    assert world_names(emulator) == before


def test_a_control_body_must_be_json_or_a_worlds_yaml() -> None:
    with Emulator() as emulator:  # its own: the world loaded here outlives a reset
        _control_bodies(emulator)


def _control_bodies(emulator: Emulator) -> None:
    url = f"{emulator.url}/_emulator"
    plain = {**CONTROL_HEADERS, "Content-Type": "text/plain"}
    answer = requests.post(f"{url}/world", data=ONE_CHECK_WORLD, headers=plain, timeout=5)
    assert answer.status_code == 415 and answer.json()["statusCode"] == 415
    fault = json.dumps([{"route": "trigger", "kind": "status", "status": 503}])
    assert requests.post(f"{url}/faults", data=fault, headers=plain, timeout=5).status_code == 415
    assert requests.get(f"{url}/faults", headers=CONTROL_HEADERS, timeout=5).json() == []
    yaml_world = {**CONTROL_HEADERS, "Content-Type": "application/yaml"}
    assert (
        requests.post(f"{url}/world", data=ONE_CHECK_WORLD, headers=yaml_world, timeout=5).status_code == 204
    )
    assert world_names(emulator) == ["11111111-2222-4333-8444-555555555555"]


def test_a_control_request_from_another_origin_is_refused(emulator: Emulator) -> None:
    url = f"{emulator.url}/_emulator/reset"
    for origin in ("http://attacker.example", "null", f"http://localhost:{emulator.port + 1}"):
        answer = requests.post(url, headers={**CONTROL_HEADERS, "Origin": origin}, timeout=5)
        assert answer.status_code == 403, origin
        assert "origin" in answer.json()["message"]
    own = {**CONTROL_HEADERS, "Origin": emulator.url}
    assert requests.post(url, headers=own, timeout=5).status_code == 204


def test_a_preflight_is_never_granted(emulator: Emulator) -> None:
    asked = {
        "Origin": "http://attacker.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-testsession-emulator",
    }
    answer = requests.options(f"{emulator.url}/_emulator/reset", headers=asked, timeout=5)
    assert "access-control-allow-origin" not in {name.lower() for name in answer.headers}


# --- /v1 bodies -------------------------------------------------------------------------------------


def _send_head(emu: Emulator, headers: dict[str, str]) -> http.client.HTTPConnection:
    """A trigger's request line and headers, and no byte of its body yet."""
    connection = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=5)
    connection.putrequest("POST", TRIGGER)
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.endheaders()
    return connection


def test_a_100_mb_body_is_413_before_a_byte_of_it_is_read(emulator: Emulator) -> None:
    started = time.monotonic()
    connection = _send_head(
        emulator, {**API, "Content-Type": "application/json", "Content-Length": "100000000"}
    )
    try:
        answer = connection.getresponse()  # before the old code: a wait for 100 MB that never come
        assert answer.status == 413
        assert json.loads(answer.read())["message"] == f"request body larger than {MAX_BODY_BYTES} bytes"
    finally:
        connection.close()
    # Answered before the body: waiting for it would end only at the connection's 5 s timeout (an
    # error); a margin for a loaded machine below that, not a 3 s window.
    assert time.monotonic() - started < 5
    assert emulator.backend.stats()["sessionsTotal"] == 0


def test_a_chunked_body_is_counted_as_it_is_read(emulator: Emulator) -> None:
    connection = _send_head(
        emulator, {**API, "Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    )
    try:
        piece = b"x" * 65536
        for _ in range(MAX_BODY_BYTES // len(piece)):
            connection.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        connection.send(b"1\r\nx\r\n")  # one byte over the bound; the body never ends
        answer = connection.getresponse()
        assert answer.status == 413
    finally:
        connection.close()
    assert emulator.backend.stats()["sessionsTotal"] == 0


def test_without_a_key_the_body_is_never_read(emulator: Emulator) -> None:
    """401 on the headers alone: the 440 MB announced are never sent, and the answer still comes."""
    for headers in ({}, {"Authorization": "Bearer tsk_unknown_0123456789"}):
        connection = _send_head(
            emulator, {**headers, "Content-Type": "application/json", "Content-Length": "440000000"}
        )
        try:
            answer = connection.getresponse()
            assert answer.status == 401
            assert json.loads(answer.read())["message"] == "Bad Token"
        finally:
            connection.close()


def test_a_body_within_the_bound_is_the_routes_as_before(emulator: Emulator) -> None:
    body = {**BODY, "name": "n" * 100_000}
    answer = requests.post(emulator.url + TRIGGER, json=body, headers=API, timeout=5)
    assert answer.status_code == 201, answer.text
    assert answer.json()["name"] == body["name"]
    typed = {**API, "Content-Type": "application/json"}
    bad = requests.post(emulator.url + TRIGGER, data=b"{not json", headers=typed, timeout=5)
    assert bad.status_code == 400 and bad.json()["message"] == "body: invalid JSON"


def test_the_rate_limit_counts_a_request_once(emulator: Emulator) -> None:
    patch = {"rateLimit": {"limit": 3, "windowSeconds": 60}}
    assert requests.patch(
        f"{emulator.url}/_emulator/settings", json=patch, headers=CONTROL_HEADERS, timeout=5
    ).ok
    codes = [requests.get(f"{emulator.url}/v1/checks", headers=API, timeout=5).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def test_a_reset_connection_is_not_a_crash(emulator: Emulator) -> None:
    """A client that announces a body and goes away: the emulator answers the next request."""
    sock = socket.create_connection(("127.0.0.1", emulator.port), timeout=5)
    head = f"POST {TRIGGER} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
    sock.sendall((head + f"X-Service-Account: {ACCOUNT}\r\nContent-Length: 100\r\n\r\n{{").encode())
    sock.close()
    assert requests.get(f"{emulator.url}/v1/checks", headers=API, timeout=5).status_code == 200


@pytest.mark.timeout(60)
def test_the_emulator_command_answers_to_a_name_given_with_allow_host(repo_root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESTSESSION_")}
    argv = [sys.executable, "-m", "runner", "emulator", "--port", "0", "--allow-host", "emulator.test"]
    process = subprocess.Popen(
        argv, cwd=repo_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().removeprefix("export TESTSESSION_BASE_URL=")
        port = url.rsplit(":", 1)[1]
        given = requests.get(f"{url}/openapi.json", headers={"Host": f"emulator.test:{port}"}, timeout=5)
        assert given.status_code == 200
        other = requests.get(f"{url}/openapi.json", headers={"Host": f"attacker.example:{port}"}, timeout=5)
        assert other.status_code == 421
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
