"""Bring your checks: GET /v1/checks and /v1/checks/{id} in production's shape, the client's paging, and
`testsession checks export` end to end: from an emulator whose world holds real checks of several types
(pointed at servers this module starts on loopback) to a world file that loads, holds no secret, and
serves the same checks again."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from checks_servers import Handler, HttpServer

from runner.cli.main import main
from runner.client import ApiClient
from runner.core.errors import AnswerTooLargeError, BadResponseError
from runner.emulator import Emulator
from runner.emulator.core.export import env_name, export_world
from runner.emulator.core.world import Mode, WorldCheck, parse_world_text

ACCOUNT = "8a7b6c5d-1111-4e2f-9a3b-4c5d6e7f8a9b"
KEY = "tsk_export_test_key_51c3"
OTHER_ACCOUNT = "8a7b6c5d-2222-4e2f-9a3b-4c5d6e7f8a9b"
OTHER_KEY = "tsk_export_other_key_77"
SECRET = "s3cr3t-shop-token-value"
IDS = {name: f"6a1c0000-0000-4000-8000-{n:012d}" for n, name in enumerate(
    ["cart", "echo", "status", "port", "dns", "checkout", "admin", "inventory", "heartbeat", "demo", "other"]
)}  # fmt: skip
LOCAL = ("cart", "echo", "status", "port")  # tagged `local`: everything they need is in the file
# Every check the `shop` tag selects, and why each one that is kept cannot run here.
NOT_RUNNABLE = {
    "checkout": "AGENTIC checks cannot run locally",
    "admin": "checks with setup or teardown scripts cannot run locally (localSetupScript)",
    "heartbeat": "HEARTBEAT checks cannot run locally",
}
SHOP = (*LOCAL, "dns", "checkout", "admin", "inventory", "heartbeat")


class CountingHandler(Handler):
    """checks_servers' HTTP routes, each request remembered: proof that a check really ran."""

    def _route(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        super()._route()

    do_GET = do_POST = do_HEAD = _route


@pytest.fixture(scope="module")
def app() -> Iterator[HttpServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingHandler)
    server.daemon_threads = True
    server.hits = []  # type: ignore[attr-defined]
    server.counts = {}  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield HttpServer(server, "http")
    finally:
        server.shutdown()
        server.server_close()


def shop_world(base: str, tcp_port: int) -> dict[str, Any]:
    """Real checks of every runnable type, with a secret, a check's own `${...}` text and an account
    variable; kept-but-not-runnable ones (AGENTIC, a setup script, HEARTBEAT); a scripted demo check;
    another account's check with the same tag."""
    ok = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]
    checks = [
        {
            "id": IDS["cart"], "name": "Cart API", "checkType": "API", "tags": ["shop", "local"],
            "locations": ["eu-west-1"], "frequency": 5,
            "request": {
                "method": "GET", "url": "{{BASE_URL}}/json",
                "headers": [{"key": "Authorization", "value": "Bearer {{SHOP_TOKEN}}"}],
                "assertions": [*ok, {"source": "JSON_BODY", "property": "$.data.id", "comparison": "EQUALS",
                                     "target": "42"}],
            },
            "degradedResponseTime": 500, "maxResponseTime": 2000,
            "environmentVariables": [
                {"key": "BASE_URL", "value": base},
                {"key": "SHOP_TOKEN", "value": SECRET, "secret": True},
            ],
        },
        {
            "id": IDS["echo"], "name": "Echo order", "checkType": "API", "tags": ["shop", "local"],
            "request": {
                "method": "POST", "url": f"{base}/echo", "bodyType": "JSON",
                # The check's own text, not a variable of the world file: it must survive the export.
                "body": '{"note": "$${not_an_env_var}"}',
                "queryParameters": [{"key": "q", "value": "1"}],
                "assertions": [
                    *ok, {"source": "TEXT_BODY", "comparison": "CONTAINS", "target": "not_an_env_var"}],
            },
        },
        {
            "id": IDS["status"], "name": "Status page", "checkType": "URL", "tags": ["shop", "local"],
            "request": {"url": f"{base}/status/200", "assertions": ok},
        },
        {
            "id": IDS["port"], "name": "Database port", "checkType": "TCP", "tags": ["shop", "local"],
            "request": {"hostname": "127.0.0.1", "port": tcp_port, "assertions": [
                {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "2000"}]},
            "degradedResponseTime": 1000, "maxResponseTime": 3000,
        },
        {
            "id": IDS["dns"], "name": "Shop DNS", "checkType": "DNS", "tags": ["shop"],
            "request": {"query": "app.test", "recordType": "A", "nameServer": "127.0.0.1", "port": 5399,
                        "protocol": "UDP", "assertions": [
                            {"source": "RESPONSE_CODE", "comparison": "EQUALS", "target": "NOERROR"}]},
        },
        {
            "id": IDS["checkout"], "name": "Checkout flow", "checkType": "AGENTIC", "tags": ["shop"],
            "script": "await page.goto(`$${process.env.BASE}/cart`)\nawait page.click('#pay')",
            "environmentVariables": [{"key": "card-number", "value": "4111111111111111", "secret": True}],
        },
        {
            "id": IDS["admin"], "name": "Admin API", "checkType": "API", "tags": ["shop"],
            "request": {"method": "GET", "url": f"{base}/json", "assertions": ok},
            "localSetupScript": "request.headers['X-Admin'] = 'yes'",
        },
        {
            "id": IDS["inventory"], "name": "Inventory API", "checkType": "API", "tags": ["shop"],
            "request": {"method": "GET", "url": "{{API_HOST}}/inventory", "assertions": ok},
        },
        {"id": IDS["heartbeat"], "name": "Nightly job", "checkType": "HEARTBEAT", "tags": ["shop"]},
        {"id": IDS["demo"], "name": "Scripted demo", "tags": ["demo"], "behaviour": "fail",
         "errorMessage": "boom"},
    ]  # fmt: skip
    return {
        "settings": {"speed": 25},
        "accounts": [
            {"id": ACCOUNT, "keys": [{"key": KEY}], "checks": checks},
            {
                "id": OTHER_ACCOUNT,
                "keys": [{"key": OTHER_KEY}],
                "checks": [{"id": IDS["other"], "name": "Other team", "tags": ["shop"], "behaviour": "pass"}],
            },
        ],
    }


@pytest.fixture(scope="module")
def world(app: HttpServer, tcp_port: int) -> dict[str, Any]:
    return shop_world(app.url("").rstrip("/"), tcp_port)


@pytest.fixture(scope="module")
def emu(world: dict[str, Any]) -> Iterator[Emulator]:
    with Emulator(world=world, speed=25) as started:
        yield started


def get(emu: Emulator, path: str, key: str = KEY, account: str = ACCOUNT, **params: Any) -> requests.Response:
    headers = {"Authorization": f"Bearer {key}", "X-Service-Account": account}
    return requests.get(f"{emu.url}{path}", headers=headers, params=params, timeout=5)


# --- the emulator serves GET /v1/checks and /v1/checks/{id} as production ------------------------------


def test_checks_are_listed_page_by_page_with_the_total_in_content_range(emu: Emulator) -> None:
    pages = [get(emu, "/v1/checks", limit=4, page=page) for page in (1, 2, 3, 4)]
    assert [p.headers["Content-Range"] for p in pages] == ["0-3/10", "4-7/10", "8-9/10", "*/10"]
    listed = [c["id"] for p in pages for c in p.json()]
    assert listed == [IDS[name] for name in (*SHOP, "demo")]
    assert IDS["other"] not in listed  # another account's check, with the same tag
    default = get(emu, "/v1/checks")
    assert len(default.json()) == 10 and default.headers["Content-Range"] == "0-9/10"  # production: limit 10
    assert [c["name"] for c in get(emu, "/v1/checks", tag=["demo", "local"]).json()] == [
        "Cart API", "Echo order", "Status page", "Database port", "Scripted demo",
    ]  # fmt: skip
    assert [c["name"] for c in get(emu, "/v1/checks", checkType="TCP").json()] == ["Database port"]
    assert [c["name"] for c in get(emu, "/v1/checks", search="API").json()] == [
        "Cart API", "Admin API", "Inventory API",
    ]  # fmt: skip
    only_api = get(emu, "/v1/checks", apiCheckUrlFilterPattern="127.0.0.1").json()
    assert [c["name"] for c in only_api] == ["Echo order", "Admin API"]  # not the URL check, nor {{BASE_URL}}
    for bad in ({"limit": 101}, {"limit": 0}, {"page": 0}):
        answer = get(emu, "/v1/checks", **bad)
        assert answer.status_code == 400 and next(iter(bad)) in answer.json()["message"]


def test_a_check_is_served_with_its_definition_and_never_a_secret_value(emu: Emulator) -> None:
    cart = get(emu, f"/v1/checks/{IDS['cart']}").json()
    assert cart["checkType"] == "API" and cart["frequency"] == 5 and cart["locations"] == ["eu-west-1"]
    assert cart["request"]["headers"] == [{"key": "Authorization", "value": "Bearer {{SHOP_TOKEN}}"}]
    assert (cart["degradedResponseTime"], cart["maxResponseTime"], cart["shouldFail"]) == (500, 2000, False)
    variables = {v["key"]: v for v in cart["environmentVariables"]}
    assert variables["SHOP_TOKEN"]["secret"] is True and variables["SHOP_TOKEN"]["value"] is None
    assert variables["BASE_URL"]["value"].startswith("http://127.0.0.1:")
    listed = get(emu, "/v1/checks", limit=100)
    assert SECRET not in listed.text and "4111111111111111" not in listed.text
    assert next(c for c in listed.json() if c["id"] == IDS["cart"]) == cart
    # A scripted demo check: what it has of production's shape, none of the emulator's own fields.
    demo = get(emu, f"/v1/checks/{IDS['demo']}").json()
    assert demo == {
        "id": IDS["demo"], "name": "Scripted demo", "checkType": "API", "activated": True, "tags": ["demo"],
        "locations": [], "frequency": 10, "shouldFail": False,
    }  # fmt: skip
    assert get(emu, f"/v1/checks/{IDS['other']}").status_code == 404  # another account's
    assert get(emu, "/v1/checks/no-such-check").json()["message"] == "Check not found"


def test_a_check_updated_by_put_is_served_as_updated_and_its_new_secret_never(emu: Emulator) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "X-Service-Account": ACCOUNT}
    path = f"{emu.url}/v1/checks/{IDS['status']}"
    try:
        pin = {"key": "PIN", "value": "9981", "secret": True}
        update = {"description": "new", "environmentVariables": [pin]}
        assert requests.put(path, json=update, headers=headers, timeout=5).status_code == 200
        served = get(emu, f"/v1/checks/{IDS['status']}").json()
        assert served["description"] == "new" and "autoAssignAlerts" not in served
        assert served["environmentVariables"] == [{**pin, "value": None, "locked": False}]
        stored = emu.backend.snapshot().checks[ACCOUNT][IDS["status"]]
        assert stored.environmentVariables[0].value == "9981"  # a session still has it
        bad = requests.put(path, json={"environmentVariables": [{"value": "x"}]}, headers=headers, timeout=5)
        assert bad.status_code == 400 and "environmentVariables" in bad.json()["message"]
    finally:
        emu.backend.reset()


# --- the client reads every page, within bounds ---------------------------------------------------------


def test_the_client_reads_every_page_and_filters_on_the_service(emu: Emulator) -> None:
    with ApiClient(emu.url, KEY, ACCOUNT) as client:
        every = client.list_checks(page_size=3)
        assert [c.id for c in every] == [c["id"] for c in get(emu, "/v1/checks", limit=100).json()]
        assert client.request_count == 4  # 3 + 3 + 3 + 1 of 10
        local = client.list_checks(tags=["local"])
        assert [c.name for c in local] == ["Cart API", "Echo order", "Status page", "Database port"]
        assert client.request_count == 5  # one page: fewer than the page size
        cart = client.get_check(IDS["cart"])
        assert cart.definition().local_support() is None
        assert cart.as_sent() == get(emu, f"/v1/checks/{IDS['cart']}").json()
        with pytest.raises(AnswerTooLargeError, match="more than 5 checks"):
            client.list_checks(page_size=2, max_checks=5)


class _OnePage(BaseHTTPRequestHandler):
    """A service that ignores `page`: always the same full page, no Content-Range."""

    def do_GET(self) -> None:
        body = json.dumps([{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_service_that_repeats_a_page_is_refused_not_read_forever() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OnePage)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with ApiClient(url, "tsk_whatever_key", ACCOUNT) as client:
            with pytest.raises(BadResponseError, match="page 2 holds only checks of earlier pages"):
                client.list_checks(page_size=2)
            assert client.request_count == 2
    finally:
        server.shutdown()
        server.server_close()


# --- testsession checks export ----------------------------------------------------------------------------


@pytest.fixture
def account_env(emu: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Emulator:
    """The credentials of the emulated "real" account, as a user of the export has them."""
    monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", ACCOUNT)
    for name in ("TESTSESSION_ACCOUNT_HEADER", "SHOP_TOKEN", "card_number"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return emu


def export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["checks", "export", "--format", "world", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_export_writes_a_world_that_loads_marks_what_cannot_run_and_holds_no_secret(
    account_env: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "exported.yml"
    code, out, err = export(capsys, "--tag", "shop", "-o", str(target))
    assert code == 0 and out == ""
    lines = err.splitlines()
    for name, reason in NOT_RUNNABLE.items():
        title = next(line for line in lines if line.startswith(f"{_name(name)} ("))
        assert f"kept, not runnable: {reason}" in title
    for name in (*LOCAL, "dns", "inventory"):
        assert f"{_name(name)} ({_type(name)}): runs locally" in lines
    assert f"9 checks exported to {target}: 6 run locally, 3 kept but not runnable" in err
    assert "set SHOP_TOKEN in the environment" in err and "set card_number in the environment" in err
    assert "neither a check nor the account defines: API_HOST" in err
    text = target.read_text()
    # Nothing secret in the file: no secret value, no API key; they are read from the environment.
    for secret in (SECRET, "4111111111111111", KEY):
        assert secret not in text and secret not in err
    assert '{key: "${TESTSESSION_API_KEY}", role: read-write}' in text
    assert "value: ${SHOP_TOKEN:-}" in text and "value: ${card_number:-}" in text
    assert IDS["demo"] not in text and IDS["other"] not in text  # not tagged shop / another account
    # The reason is a comment right above the check, which is marked.
    document = text.splitlines()
    at = document.index(f"      - id: {IDS['checkout']}")
    assert document[at - 1].startswith("      # Checkout flow (AGENTIC): kept, not runnable here: AGENTIC")
    assert yaml.safe_load(text)["settings"]["notRunnable"] == "fail"
    # It passes `testsession emulator --check`, as the user is told to run.
    assert main(["emulator", "--check", "--world", str(target)]) == 0
    assert f"{target}: ok, 1 account, 9 checks" in capsys.readouterr().out
    # Exported again: the same file (deterministic, so a re-export diffs only what changed).
    assert export(capsys, "--tag", "shop", "-o", str(tmp_path / "again.yml"))[0] == 0
    assert (tmp_path / "again.yml").read_text() == text


def _name(key: str) -> str:
    names = {"cart": "Cart API", "echo": "Echo order", "status": "Status page", "port": "Database port",
             "dns": "Shop DNS", "checkout": "Checkout flow", "admin": "Admin API",
             "inventory": "Inventory API", "heartbeat": "Nightly job"}  # fmt: skip
    return names[key]


def _type(key: str) -> str:
    return {"status": "URL", "port": "TCP", "dns": "DNS"}.get(key, "API")


def _world_check(check: WorldCheck) -> dict[str, Any]:
    """A world check's production fields (what export must carry over), not the emulator's own."""
    return check.model_dump(exclude={"runsLocally", "behaviour", "durationSeconds", "errorMessage", "when",
                                     "maxRunSeconds"})  # fmt: skip


def test_exported_checks_equal_the_originals_and_are_served_identically(
    account_env: Emulator,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    world: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "exported.yml"
    assert export(capsys, "--tag", "shop", "-o", str(target))[0] == 0
    text = target.read_text()
    original = {c.id: c for c in account_env.world.accounts[0].checks}
    # Unset, a secret loads without a value: the check fails naming it, nothing is sent in its place.
    unset = {c.id: c for c in parse_world_text(text, "exported.yml").accounts[0].checks}
    assert unset[IDS["cart"]].environmentVariables[1].value is None
    definition = unset[IDS["cart"]].plan.definition
    assert definition is not None and definition.environmentVariables[1].secret is True
    # Set, the exported checks are the originals, field by field and definition by definition.
    monkeypatch.setenv("SHOP_TOKEN", SECRET)
    monkeypatch.setenv("card_number", "4111111111111111")
    exported_world = parse_world_text(text, "exported.yml")
    exported = {c.id: c for c in exported_world.accounts[0].checks}
    assert list(exported) == [IDS[name] for name in SHOP]
    for check_id, check in exported.items():
        assert _world_check(check) == _world_check(original[check_id]), check.name
        reason = check.plan.reason
        name = next(key for key, value in IDS.items() if value == check_id)
        if name in NOT_RUNNABLE:
            assert check.runsLocally is False and reason is not None
        else:
            assert reason is None and check.plan.mode is Mode.REAL
            assert check.plan.definition == original[check_id].plan.definition
    assert exported[IDS["echo"]].request is not None
    assert exported[IDS["echo"]].request["body"] == '{"note": "${not_an_env_var}"}'  # its own text, kept
    # The exported world's emulator serves the same checks, byte for byte.
    with Emulator(world=exported_world, speed=25) as again:
        before = get(account_env, "/v1/checks", tag=["shop"], limit=100)
        after = get(again, "/v1/checks", limit=100)
        assert after.json() == before.json() and after.headers["Content-Range"] == "0-8/9"
        for check_id in exported:
            path = f"/v1/checks/{check_id}"
            assert get(again, path).json() == get(account_env, path).json()


def test_run_on_the_exported_world_runs_the_same_checks(
    account_env: Emulator,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    app: HttpServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """export -> `run --emulator --world exported.yml`: the same checks run for real against the app."""
    target = tmp_path / "exported.yml"
    assert export(capsys, "--tag", "local", "-o", str(target))[0] == 0
    monkeypatch.setenv("SHOP_TOKEN", SECRET)
    app.server.hits.clear()  # type: ignore[attr-defined]
    results = tmp_path / "results.json"
    argv = ["run", "--emulator", "--world", str(target), "--location", "eu-west-1", "--tag", "local"]
    code = main([*argv, "--no-rca", "--json", str(results), "--junit", "", "--markdown", ""])
    err = capsys.readouterr().err
    data = json.loads(results.read_text())
    outcomes = {r["checkId"]: r for s in data["sessions"] for r in s["results"]}
    assert set(outcomes) == {IDS[name] for name in LOCAL}  # the world loaded and the same checks matched
    hits = list(app.server.hits)  # type: ignore[attr-defined]
    assert code == 0, err
    assert all(r["verdict"] == "passed" for r in outcomes.values()), outcomes
    assert {"/json", "/echo?q=1", "/status/200"} <= set(hits)
    assert SECRET not in results.read_text() and SECRET not in err


def test_export_of_no_matching_check_writes_nothing(
    account_env: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = export(capsys, "--tag", "nothing-has-this", "-o", str(tmp_path / "w.yml"))
    assert code == 5 and out == ""
    assert err.strip() == (
        f"testsession: error: no check of account {ACCOUNT} has any of the tags nothing-has-this: "
        "nothing written"
    )
    assert not (tmp_path / "w.yml").exists()


def test_export_to_stdout_and_the_list_and_get_commands(
    account_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = export(capsys, "--tag", "demo", "--quiet")
    assert code == 0 and out.startswith("# World file written by `testsession checks export`")
    assert "Scripted demo (API): kept, not runnable: API check without a request" in err
    assert parse_world_text(out).accounts[0].checks[0].runsLocally is False
    assert main(["checks", "list", "--tag", "local", "--check-type", "URL"]) == 0
    assert [c["name"] for c in json.loads(capsys.readouterr().out)] == ["Status page"]
    assert main(["checks", "get", IDS["cart"]]) == 0
    shown = capsys.readouterr().out
    assert json.loads(shown)["request"]["url"] == "{{BASE_URL}}/json" and SECRET not in shown


# --- what the export writes, check by check ---------------------------------------------------------


def test_fields_of_an_impossible_shape_are_left_out_and_the_check_is_kept_marked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    checks = [
        {"id": "a", "name": "Bad", "checkType": "API", "request": {"url": "http://x", "headers": "no"}},
        {"id": "b", "name": "XML", "checkType": "API", "request": {"url": "http://x", "bodyType": "XML"}},
        {"id": "c", "name": "Tags", "checkType": "URL", "tags": [None], "request": {"url": "http://x"}},
        {"id": "d", "name": "New region", "checkType": "URL", "locations": ["mars-north-1"],
         "request": {"url": "https://x"}, "privateLocations": ["pl-1"], "muted": True},
        {"name": "no id"},
        {"id": "e", "name": "\x1b[31mRed\nline\u202e", "checkType": "MOBILE"},
    ]  # fmt: skip
    result = export_world(checks, account_id=ACCOUNT)
    reasons = {c.id: c.reason for c in result.checks}
    assert str(reasons["a"]).startswith("its definition does not fit production's shape")
    assert reasons["b"] == (
        "its request cannot run here: request.bodyType: expected one of JSON, FORM, RAW, GRAPHQL, NONE"
    )
    assert reasons["c"] is not None and "tags" in reasons["c"]
    assert reasons["d"] is None
    runnable = "API, URL, TCP, DNS, ICMP, TRACEROUTE, GRPC, SSL, BROWSER, MULTI_STEP and PLAYWRIGHT"
    assert reasons["e"] == f"MOBILE checks cannot run locally: only {runnable} checks can"
    assert result.left_out == ("a check without an id (no id): left out",)
    world = parse_world_text(result.text)  # loads: every marked check is skipped by the definition rules
    loaded = {c.id: c for c in world.accounts[0].checks}
    assert loaded["a"].request is None and loaded["a"].runsLocally is False
    assert loaded["c"].tags == [] and loaded["d"].locations == ["mars-north-1"]
    assert "mars-north-1" in world.settings.locations
    # A hostile name cannot leave its comment line: the YAML still holds exactly these checks.
    lines = result.text.splitlines()
    comment = lines[lines.index("      - id: e") - 1]
    assert comment.startswith("      # Red") and not {"\x1b", "\u202e"} & set(comment)
    assert loaded["e"].name == "\x1b[31mRed\nline\u202e"


def test_a_secret_is_read_from_a_valid_environment_variable_name() -> None:
    assert env_name("SHOP_TOKEN") == "SHOP_TOKEN"
    assert env_name("card-number") == "card_number"
    assert env_name("1st.key") == "_1st_key"


def test_hundreds_of_checks_export_to_a_world_that_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """More nodes than a spec's YAML budget (20,000): worlds have their own, larger one."""
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    assertions = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}] * 3
    checks = [
        {"id": f"c{i}", "name": f"API {i}", "checkType": "API", "tags": ["t"],
         "request": {"url": f"http://127.0.0.1:9/{i}", "assertions": assertions}}
        for i in range(600)
    ]  # fmt: skip
    result = export_world(checks, account_id=ACCOUNT)
    assert len(parse_world_text(result.text).accounts[0].checks) == 600


def test_export_writes_a_checks_file_that_run_checks_loads(
    account_env: Emulator, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from runner.checks.checksfile import load_checks_file

    target = tmp_path / "checks.yml"
    assert main(["checks", "export", "--tag", "shop", "-o", str(target)]) == 0
    err = capsys.readouterr().err
    assert f"9 checks exported to {target}: 6 run locally, 3 kept but not runnable" in err
    text = target.read_text()
    assert text.startswith("# Checks file written by `testsession checks export`")
    assert "testsession run --checks THIS_FILE" in text and KEY not in text and SECRET not in text
    document = yaml.safe_load(text)
    assert sorted(document) == ["checks", "variables"]
    loaded = load_checks_file(target, {"SHOP_TOKEN": SECRET})
    modes = {check.id: check.plan.mode for check in loaded.checks}
    assert len(modes) == 9
    assert [IDS[name] for name in NOT_RUNNABLE] == [i for i, m in modes.items() if m is Mode.NOT_RUNNABLE]
