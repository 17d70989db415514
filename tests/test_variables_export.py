"""The account's environment variables: GET /v1/variables in production's shape (the emulator serves its
world's, a secret's value always null), the client's paging, `testsession variables list`, and
`testsession checks export` writing them into the world's account, secrets as references to this
machine's environment. End to end: export from an emulator, then `run --emulator --world exported.yml`
against an app on loopback, with the secret set (sent, never shown) and unset (the check that uses it
fails naming it, nothing is sent)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from checks_servers import Handler, HttpServer

from runner.cli.main import main
from runner.client import ApiClient
from runner.core.errors import AnswerTooLargeError
from runner.emulator import Emulator
from runner.emulator.core.world import parse_world_text

ACCOUNT = "5e1d0c9b-1111-4a2b-8c3d-4e5f6a7b8c9d"
KEY = "tsk_variables_export_key_19"
OTHER_ACCOUNT = "5e1d0c9b-2222-4a2b-8c3d-4e5f6a7b8c9d"
OTHER_KEY = "tsk_variables_other_key_23"
ORDER_KEY = "order-key-s3cr3t-value"  # the account's secret
OTHER_SECRET = "other-account-secret-99"


class RecordingHandler(Handler):
    """checks_servers' HTTP routes; each request's path and X-Order-Key header remembered."""

    def _route(self) -> None:
        self.server.seen.append((self.path, self.headers.get("X-Order-Key")))  # type: ignore[attr-defined]
        super()._route()

    do_GET = do_POST = _route


@pytest.fixture(scope="module")
def app() -> Iterator[HttpServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    server.counts = {}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield HttpServer(server, "http")
    finally:
        server.shutdown()
        server.server_close()


def account_world(base: str, tcp_port: int) -> dict[str, Any]:
    """Checks that need the account's variables: a plain base URL, a secret header, a TCP port."""
    ok = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]
    checks = [
        {"id": "6b2d0000-0000-4000-8000-000000000001", "name": "Order API", "checkType": "API",
         "tags": ["shop"], "request": {"method": "GET", "url": "{{SHOP_BASE}}/json", "assertions": ok,
                                       "headers": [{"key": "X-Order-Key", "value": "{{ORDER_KEY}}"}]}},
        {"id": "6b2d0000-0000-4000-8000-000000000002", "name": "Status page", "checkType": "URL",
         "tags": ["shop"], "request": {"url": "{{SHOP_BASE}}/status/200", "assertions": ok}},
        {"id": "6b2d0000-0000-4000-8000-000000000003", "name": "Line service", "checkType": "TCP",
         "tags": ["shop"], "request": {"hostname": "127.0.0.1", "port": "{{LINE_PORT}}", "data": "PING\n",
                                       "assertions": [{"source": "RESPONSE_DATA", "comparison": "CONTAINS",
                                                       "target": "PONG"}]}},
    ]  # fmt: skip
    variables = [
        {"key": "SHOP_BASE", "value": base},
        {"key": "ORDER_KEY", "value": ORDER_KEY, "secret": True},
        {"key": "LINE_PORT", "value": str(tcp_port), "locked": True},
        {"key": "NOTE", "value": "costs $${PRICE} today"},  # its own `${`: text, not a world reference
    ]
    return {
        "settings": {"speed": 25},
        "accounts": [
            {"id": ACCOUNT, "keys": [{"key": KEY}], "checks": checks, "environmentVariables": variables},
            {"id": OTHER_ACCOUNT, "keys": [{"key": OTHER_KEY}],
             "environmentVariables": [{"key": "OTHER", "value": OTHER_SECRET, "secret": True}]},
        ],
    }  # fmt: skip


@pytest.fixture(scope="module")
def emu(app: HttpServer, tcp_port: int) -> Iterator[Emulator]:
    with Emulator(world=account_world(app.url("").rstrip("/"), tcp_port), speed=25) as started:
        yield started


def get(emu: Emulator, path: str, key: str = KEY, account: str = ACCOUNT, **params: Any) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}", "X-Service-Account": account}
    return requests.get(f"{emu.url}{path}", headers=headers, params=params, timeout=5)


# --- GET /v1/variables and the client ------------------------------------------------------------------


def test_the_emulator_serves_the_accounts_variables_as_production_never_a_secret(emu: Emulator) -> None:
    listed = get(emu, "/v1/variables", limit=100)
    assert listed.status_code == 200, listed.text
    assert listed.json() == [
        {"key": "SHOP_BASE", "value": emu.backend.world.accounts[0].environmentVariables[0].value,
         "locked": False, "secret": False},
        {"key": "ORDER_KEY", "value": None, "locked": False, "secret": True},
        {"key": "LINE_PORT", "value": listed.json()[2]["value"], "locked": True, "secret": False},
        {"key": "NOTE", "value": "costs ${PRICE} today", "locked": False, "secret": False},
    ]  # fmt: skip
    assert ORDER_KEY not in listed.text and OTHER_SECRET not in listed.text and "OTHER" not in listed.text
    pages = [[v["key"] for v in get(emu, "/v1/variables", limit=3, page=p).json()] for p in (1, 2, 3)]
    assert pages == [["SHOP_BASE", "ORDER_KEY", "LINE_PORT"], ["NOTE"], []]
    assert len(get(emu, "/v1/variables").json()) == 4  # production's default page: 10
    for bad in ({"limit": 101}, {"limit": 0}, {"page": 0}):
        answer = get(emu, "/v1/variables", **bad)
        assert answer.status_code == 400 and next(iter(bad)) in answer.json()["message"]
    other = get(emu, "/v1/variables", key=OTHER_KEY, account=OTHER_ACCOUNT).json()
    assert other == [{"key": "OTHER", "value": None, "locked": False, "secret": True}]
    assert get(emu, "/v1/variables", key="tsk_no_such_key_12345").status_code == 401


def test_the_client_reads_every_page_within_its_bound(emu: Emulator) -> None:
    with ApiClient(emu.url, KEY, ACCOUNT) as client:
        every = client.list_variables(page_size=3)
        assert [v.key for v in every] == ["SHOP_BASE", "ORDER_KEY", "LINE_PORT", "NOTE"]
        assert client.request_count == 2  # 3 + 1
        assert every[1].secret and every[1].value is None and every[2].locked
        with pytest.raises(AnswerTooLargeError, match="more than 2 environment variables"):
            client.list_variables(page_size=1, max_variables=2)


class _Unpaged(BaseHTTPRequestHandler):
    """A service that ignores `limit` and `page`: every variable at once (as production's CLI asks)."""

    def do_GET(self) -> None:
        every = [{"key": k, "value": "v", "locked": False, "secret": False} for k in "abc"]
        body = json.dumps(every).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_service_that_sends_every_variable_at_once_is_read_once() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unpaged)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with ApiClient(url, "tsk_whatever_key", ACCOUNT) as client:
            assert [v.key for v in client.list_variables(page_size=2)] == ["a", "b", "c"]
            assert client.request_count == 1
    finally:
        server.shutdown()
        server.server_close()


# --- the command, the export, and the run on what it wrote -------------------------------------------------


@pytest.fixture
def account_env(emu: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Emulator:
    monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", ACCOUNT)
    for name in ("TESTSESSION_ACCOUNT_HEADER", "ORDER_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return emu


def test_variables_list_prints_them_without_a_secret_value(
    account_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["variables", "list"]) == 0
    out = capsys.readouterr().out
    listed = json.loads(out)
    assert [v["key"] for v in listed] == ["SHOP_BASE", "ORDER_KEY", "LINE_PORT", "NOTE"]
    assert listed[1] == {"key": "ORDER_KEY", "value": None, "locked": False, "secret": True}
    assert ORDER_KEY not in out


def exported(capsys: pytest.CaptureFixture[str], target: Path) -> tuple[str, str]:
    assert main(["checks", "export", "--format", "world", "--tag", "shop", "-o", str(target)]) == 0
    return target.read_text(encoding="utf-8"), capsys.readouterr().err


def test_export_writes_the_accounts_variables_and_reads_its_secrets_from_the_environment(
    account_env: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text, err = exported(capsys, tmp_path / "exported.yml")
    base = account_env.backend.world.accounts[0].environmentVariables[0].value
    assert f'      - {{key: "SHOP_BASE", value: "{base}"}}' in text
    secret = '      - {key: "ORDER_KEY", value: "${ORDER_KEY:-}", secret: true}  # secret: set ORDER_KEY'
    assert secret in text
    assert '{key: "LINE_PORT", value: "' in text and "locked: true}" in text
    assert '{key: "NOTE", value: "costs $${PRICE} today"}' in text  # loads back as the text it was
    assert ORDER_KEY not in text and ORDER_KEY not in err and OTHER_SECRET not in text
    assert "set ORDER_KEY in the environment before using the file: secret variable of the account" in err
    assert "neither a check nor the account defines" not in err  # every {{NAME}} is defined now
    account = parse_world_text(text, "exported.yml").accounts[0]
    loaded = {v.key: v for v in account.environmentVariables}
    assert loaded["ORDER_KEY"].secret and loaded["ORDER_KEY"].value is None  # unset: no value, not ""
    assert loaded["NOTE"].value == "costs ${PRICE} today" and loaded["LINE_PORT"].locked


def run_exported(
    target: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any], str]:
    results = tmp_path / "results.json"
    argv = ["run", "--emulator", "--world", str(target), "--location", "eu-west-1", "--tag", "shop"]
    code = main([*argv, "--no-rca", "--json", str(results), "--junit", "", "--markdown", ""])
    captured = capsys.readouterr()
    data = json.loads(results.read_text(encoding="utf-8"))
    outcomes = {r["name"]: r for s in data["sessions"] for r in s["results"]}
    return code, outcomes, captured.out + captured.err + results.read_text(encoding="utf-8")


def test_export_then_run_uses_the_accounts_variables_and_never_an_empty_secret(
    account_env: Emulator,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    app: HttpServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "exported.yml"
    exported(capsys, target)
    seen: list[tuple[str, str | None]] = app.server.seen  # type: ignore[attr-defined]

    # The secret set in this machine's environment: every check runs, the key is sent, never shown.
    monkeypatch.setenv("ORDER_KEY", ORDER_KEY)
    seen.clear()
    code, outcomes, shown = run_exported(target, tmp_path, capsys)
    assert code == 0, shown
    assert {name: r["verdict"] for name, r in outcomes.items()} == {
        "Order API": "passed", "Status page": "passed", "Line service": "passed",
    }  # fmt: skip
    assert ("/json", ORDER_KEY) in seen and ("/status/200", None) in seen
    assert ORDER_KEY not in shown

    # Unset: the check that uses it fails naming it, and nothing is sent in its place.
    monkeypatch.delenv("ORDER_KEY")
    seen.clear()
    code, outcomes, shown = run_exported(target, tmp_path, capsys)
    assert code == 1
    order = outcomes["Order API"]
    assert order["verdict"] == "error"
    assert order["error"].startswith("secret variable ORDER_KEY in request.headers[X-Order-Key] has no value")
    assert outcomes["Status page"]["verdict"] == outcomes["Line service"]["verdict"] == "passed"
    assert [path for path, _key in seen] == ["/status/200"]  # the order API was never called
