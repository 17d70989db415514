"""How a world file's check definitions are read (trial 25, findings 2-4): a check says what it is, a
request holds only production's keys, and a value of the wrong type is a world error. Every such
problem is one `FILE:LINE: field: what is allowed` line and exit 2 (with the reports for `run`), the
control API's 400; never a traceback, never a check that quietly becomes a scripted `pass`."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import CI_PREFIXES

from runner.cli.main import main
from runner.emulator.core.export import export_world
from runner.emulator.core.world import Mode, WorldError, parse_world_text
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models.check_definitions import (
    ApiRequest,
    Assertion,
    BasicAuth,
    DnsRequest,
    IcmpRequest,
    KeyValue,
    PlaywrightCheckDefinition,
    TcpRequest,
    TracerouteRequest,
    UrlRequest,
    parse_check_definition,
)

ACCOUNT = "7d3e5c1a-2b4f-4a6e-9c8d-0e1f2a3b4c5d"
HEAD = f"""settings: {{speed: 1, analysisDelaySeconds: 0}}
accounts:
  - id: {ACCOUNT}
    name: t
    keys: [{{key: tsk_world_definitions_key, role: read-write}}]
    checks:
"""  # the first check's `- id:` is line 7
REAL = """      - id: real-1
        name: Real one
        checkType: API
        request:
          url: "http://127.0.0.1:9/"
          assertions: [{source: STATUS_CODE, comparison: EQUALS, target: "200"}]
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No CI variables, no credentials of the developer; the working directory is tmp_path."""
    for name in list(os.environ):
        if name.startswith((*CI_PREFIXES, "TESTSESSION_")) or name == "CI":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def world_file(tmp_path: Path, checks: str) -> Path:
    path = tmp_path / "world.yml"
    path.write_text(HEAD + checks, encoding="utf-8")
    return path


def check_gives(world: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["emulator", "--check", "--world", str(world)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, (captured.out + captured.err).strip().splitlines()


def run_gives(world: Path, tag: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, Any]]:
    """`run --emulator` over `world`: exit code, stderr, results.json (the junit is checked as written)."""
    code = main(["run", "--emulator", "--world", str(world), "--tag", tag, "--location", "eu-west-1"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    reports = Path("testsession-reports")
    ET.parse(reports / "junit.xml")  # written, and XML
    assert (reports / "summary.md").is_file()
    return code, captured.err, json.loads((reports / "results.json").read_text(encoding="utf-8"))


# --- finding 2: a check with no request never becomes a scripted pass ------------------------------


def test_a_browser_check_written_by_hand_fails_closed_like_one_marked_runs_locally_false(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = world_file(
        clean_env, "      - {id: b1, name: Checkout journey, checkType: BROWSER, tags: [browser]}\n"
    )
    assert check_gives(world, capsys) == (0, [f"{world}: ok, 1 account, 1 check"])
    code, _, results = run_gives(world, "browser", capsys)
    (result,) = results["sessions"][0]["results"]
    assert code == 1 and results["verdict"] == "failed"
    assert result["verdict"] == "error" and result["error"] == (
        "cannot run on this machine: BROWSER check without a script (give it a script: to run it, or a "
        "behaviour: to script it here); leave it out with settings.notRunnable: skip in the world, or target "
        "other tags"
    )


@pytest.mark.parametrize("check_type", ["BROWSER", "MULTI_STEP", "PLAYWRIGHT", "MOBILE"])
def test_only_an_explicit_behaviour_scripts_a_type_that_cannot_run_here(check_type: str) -> None:
    bare = f"      - {{id: c1, name: C, checkType: {check_type}}}\n"
    (check,) = parse_world_text(HEAD + bare).accounts[0].checks
    if check_type == "PLAYWRIGHT":  # a suite runs its project's tests with production's defaults
        definition = check.plan.definition
        assert check.plan.mode is Mode.REAL and isinstance(definition, PlaywrightCheckDefinition)
        assert (definition.testCommand, definition.browsers) == ("npx playwright test", ["chromium"])
        reason = None
    elif check_type in ("BROWSER", "MULTI_STEP"):  # they run with a script
        give = "give it a script: to run it, or a behaviour: to script it here"
        reason = f"{check_type} check without a script ({give})"
    else:
        runnable = "API, URL, TCP, DNS, ICMP, TRACEROUTE, GRPC, SSL, BROWSER, MULTI_STEP and PLAYWRIGHT"
        reason = (
            f"{check_type} checks cannot run locally: only {runnable} checks can "
            "(give it a behaviour: to script it here)"
        )
    assert check.plan.reason == reason
    (check,) = parse_world_text(HEAD + bare.replace("}", ", behaviour: pass}")).accounts[0].checks
    assert check.plan.mode is Mode.SCRIPTED and check.plan.reason is None


@pytest.mark.parametrize(
    "given", ["browsers: []", "installCommand: null, workingDir: null, browsers: null", "testCommand: null"]
)
def test_a_suites_null_or_empty_fields_are_production_defaults(given: str) -> None:
    """Production's null (or an empty list) is the field's default: a suite that says it still runs."""
    (check,) = (
        parse_world_text(HEAD + f"      - {{id: c1, name: C, checkType: PLAYWRIGHT, {given}}}\n")
        .accounts[0]
        .checks
    )
    definition = check.plan.definition
    assert check.plan.mode is Mode.REAL and isinstance(definition, PlaywrightCheckDefinition)
    assert (definition.testCommand, definition.browsers) == ("npx playwright test", ["chromium"])
    assert not {"browsers", "testCommand", "installCommand", "workingDir"} & definition.model_fields_set


@pytest.mark.parametrize(
    ("request_text", "got"),
    [
        ("        request:\n        #  url: http://127.0.0.1:18480/status/503\n", "null"),
        ("        request: null\n", "null"),
        ("        request: {}\n", "an empty mapping"),
    ],
    ids=["commented-out", "null", "empty"],
)
def test_a_request_left_null_or_empty_is_a_world_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str], request_text: str, got: str
) -> None:
    world = world_file(
        clean_env, "      - id: c2\n        name: Cart API\n        tags: [cart]\n" + request_text
    )
    line = (
        f"{world}:10: accounts[0].checks[0].request: expected the check's request (url:, assertions: ...), "
        f"got {got}; to script the check instead, leave request out and give behaviour:"
    )
    assert check_gives(world, capsys) == (2, [line])
    code, err, results = run_gives(world, "cart", capsys)
    assert code == 2 and err.strip() == line and results["message"] == line and results["exitCode"] == 2


def test_in_a_world_of_real_checks_a_check_says_request_or_behaviour(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = "      - {id: s1, name: Search API, checkType: API, tags: [s]}\n"
    world = world_file(clean_env, REAL + bare)
    line = (
        f"{world}:13: accounts[0].checks[1]: API check with neither request nor behaviour, in a world that "
        "runs checks for real: give request: to run it, or behaviour: to script it"
    )
    assert check_gives(world, capsys) == (2, [line])
    code, err, results = run_gives(world, "s", capsys)
    assert code == 2 and err.strip() == line and results["message"] == line
    # Said either way, it loads; and a world of scripted checks only (the demo world) keeps the
    # default `behaviour: pass`.
    parse_world_text(HEAD + REAL + bare.replace("}", ", behaviour: fail}"))
    (check,) = parse_world_text(HEAD + bare).accounts[0].checks
    assert check.plan.mode is Mode.SCRIPTED and check.behaviour == "pass"


# --- finding 3: a request holds only the keys production knows ---------------------------------------

TYPOS = [
    ("assertion", "request: {url: http://x.test, assertion: []}", "request.assertion", "assertions"),
    ("path", "request: {url: http://x.test, assertions: [{source: JSON_BODY, path: $.ok, comparison: "
     "NOT_EQUALS, target: 'false'}]}", "request.assertions[0].path", "property"),
    ("propery", "request: {url: http://x.test, assertions: [{source: JSON_BODY, propery: $.ok, comparison: "
     "EQUALS, target: x}]}", "request.assertions[0].propery", "property"),
    ("followRedirect", "request: {url: http://x.test, followRedirect: false}", "request.followRedirect",
     "followRedirects"),
    ("skipSsl", "request: {url: http://x.test, skipSsl: true}", "request.skipSsl", "skipSSL"),
    ("header vaule", "request: {url: http://x.test, headers: [{key: A, vaule: b}]}",
     "request.headers[0].vaule", "value"),
    ("query name", "request: {url: http://x.test, queryParameters: [{name: q, value: '1'}]}",
     "request.queryParameters[0].name", "key"),
    ("basicAuth user", "request: {url: http://x.test, basicAuth: {user: a, password: b}}",
     "request.basicAuth.user", "username"),
    ("tcp host", "checkType: TCP, request: {host: db, port: 5432}", "request.host", "hostname"),
    ("dns type", "checkType: DNS, request: {query: x.test, type: A}", "request.type", "recordType"),
    ("url headers", "checkType: URL, request: {url: http://x.test, headers: []}", "request.headers", None),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "path", "meant"), [t[1:] for t in TYPOS], ids=[t[0] for t in TYPOS])
def test_a_key_production_does_not_know_is_a_world_error_with_a_did_you_mean(
    fields: str, path: str, meant: str | None
) -> None:
    text = HEAD + f"      - {{id: t1, name: Typo, {fields}}}\n"
    with pytest.raises(WorldError) as caught:
        parse_world_text(text, "w.yml")
    key = path.rsplit(".", 1)[-1]
    line = f"w.yml:7: accounts[0].checks[0].{path}: unknown field {key!r}"
    if meant:  # one short line: the did-you-mean, not the list of every allowed key
        assert str(caught.value) == f"{line}: did you mean {meant!r}?"
    else:
        assert str(caught.value).startswith(f"{line}: allowed: ")


def test_the_trial_s_typos_stop_the_run_with_one_line_each_and_the_reports(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = """      - id: t3
        name: Status JSON
        tags: [typo]
        request:
          url: http://127.0.0.1:9/html-error
          assertion:
            - {source: JSON_BODY, property: "$.status", comparison: EQUALS, target: ok}
      - id: t5
        name: Login redirect must not happen
        tags: [typo]
        request:
          url: http://127.0.0.1:9/redirect
          followRedirect: false
"""
    world = world_file(clean_env, checks)
    code, lines = check_gives(world, capsys)
    assert code == 2 and [line.split(" allowed: ")[0] for line in lines] == [
        f"{world}:12: accounts[0].checks[0].request.assertion: unknown field 'assertion': "
        "did you mean 'assertions'?",
        f"{world}:19: accounts[0].checks[1].request.followRedirect: unknown field 'followRedirect': "
        "did you mean 'followRedirects'?",
    ]
    code, err, results = run_gives(world, "typo", capsys)
    assert code == 2 and err.strip().splitlines() == lines
    assert results["message"] == f"{lines[0]} (and 1 more problem)"


def test_production_s_answers_stay_lenient() -> None:
    check = parse_check_definition(
        {"name": "c", "checkType": "API", "request": {"url": "http://x.test", "newField": 1, "assertion": []}}
    )
    assert (check.request.model_extra or {}) == {"newField": 1, "assertion": []}


# Production's fields of each object a world's request holds (OpenAPI ChecksV1ApiRequest,
# ChecksV1UrlRequest, ChecksV1TcpRequest, ChecksV1DnsRequest, ChecksV1ApiAssertion (the URL, TCP and
# DNS assertions have the same keys), ChecksV1KeyValue, ChecksV1BasicAuth): what a world may hold.
PRODUCTION_FIELDS = {
    ApiRequest: {"method", "url", "followRedirects", "skipSSL", "ipFamily", "body", "bodyType", "headers",
                 "queryParameters", "assertions", "basicAuth"},
    UrlRequest: {"method", "url", "followRedirects", "skipSSL", "ipFamily", "assertions"},
    TcpRequest: {"url", "hostname", "port", "body", "data", "assertions", "ipFamily"},
    DnsRequest: {"query", "nameServer", "port", "recordType", "assertions", "protocol"},
    IcmpRequest: {"hostname", "ipFamily", "pingCount", "assertions"},  # ChecksV1IcmpRequest
    TracerouteRequest: {"url", "protocol", "port", "ipFamily", "maxHops", "maxUnknownHops", "ptrLookup",
                        "timeout", "assertions"},  # ChecksV1TracerouteRequestRead
    Assertion: {"source", "comparison", "property", "target", "regex"},
    KeyValue: {"key", "value", "locked"},
    BasicAuth: {"username", "password"},
}  # fmt: skip


def test_a_world_s_request_keys_are_exactly_production_s() -> None:
    assert {model: set(model.model_fields) for model in PRODUCTION_FIELDS} == PRODUCTION_FIELDS


def test_a_world_checks_export_wrote_from_production_s_full_definitions_loads_and_runs_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every field of production's schemas, the ones a run here does not use included (a header's
    `locked`, TCP's `url` naming the same host, an assertion's null `regex`, a null `basicAuth`)."""
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_world_definitions_key")
    assertion = {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "property": "", "target": "900",
                 "regex": None}  # fmt: skip
    checks = [
        {"id": "api", "name": "API", "checkType": "API", "request": {
            "method": "POST", "url": "http://x.test/a", "followRedirects": False, "skipSSL": False,
            "ipFamily": "IPv4", "body": "{}", "bodyType": "JSON",
            "headers": [{"key": "Accept", "value": "application/json", "locked": True}],
            "queryParameters": [{"key": "q", "value": "1", "locked": False}],
            "assertions": [{**assertion, "source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}],
            "basicAuth": None}},
        {"id": "url", "name": "URL", "checkType": "URL", "request": {
            "method": "GET", "url": "http://x.test/", "followRedirects": True, "skipSSL": True,
            "ipFamily": "IPv6",
            "assertions": [{**assertion, "source": "STATUS_CODE", "comparison": "EQUALS"}]}},
        {"id": "tcp", "name": "TCP", "checkType": "TCP", "request": {
            "url": "db.test", "hostname": "db.test", "port": 5432, "body": None, "data": "PING\n",
            "assertions": [assertion], "ipFamily": "IPv4"}},
        {"id": "dns", "name": "DNS", "checkType": "DNS", "request": {
            "query": "x.test", "nameServer": "1.1.1.1", "port": 53, "recordType": "A",
            "assertions": [assertion], "protocol": "UDP"}},
    ]  # fmt: skip
    exported = export_world(checks, account_id=ACCOUNT)
    assert [c.reason for c in exported.checks] == [None] * 4
    world = parse_world_text(exported.text)
    assert [c.plan.mode is Mode.REAL for c in world.accounts[0].checks] == [True] * 4


def test_an_unknown_key_in_production_s_answer_is_left_out_and_the_check_does_not_run_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run without a field production reads, a check could pass where production fails: it is kept,
    marked `runsLocally: false`, and the world loads."""
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_world_definitions_key")
    status = {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}
    checks = [{"id": "a", "name": "A", "checkType": "API", "request": {
        "url": "http://x.test", "retryOn5xx": True, "assertions": [{**status, "negate": True}]}}]  # fmt: skip
    exported = export_world(checks, account_id=ACCOUNT)
    (summary,) = exported.checks
    assert summary.reason == (
        "its request has fields this version does not know (left out): request.retryOn5xx, "
        "request.assertions[0].negate"
    )
    (check,) = parse_world_text(exported.text).accounts[0].checks
    assert check.runsLocally is False and check.plan.reason == "marked runsLocally: false"
    assert check.request == {"url": "http://x.test", "assertions": [status]}


@pytest.mark.parametrize(
    ("request_fields", "problem"),
    [
        ("checkType: URL, request: {url: http://x.test, method: POST}",
         "request.method: expected one of GET"),
        ("checkType: TCP, request: {hostname: db, port: 5432, url: other}",
         "request.url: TCP checks connect to hostname and port; leave url out (or the same as hostname)"),
        ("checkType: TCP, request: {hostname: db, port: 5432, data: a, body: b}",
         "request.body: the data to send goes in data; leave body out (or the same as data)"),
    ],
    ids=["url-method", "tcp-url", "tcp-body"],
)  # fmt: skip
def test_production_fields_a_run_here_would_ignore_are_refused_when_they_say_something_else(
    request_fields: str, problem: str
) -> None:
    with pytest.raises(WorldError) as caught:
        parse_world_text(HEAD + f"      - {{id: i1, name: I, {request_fields}}}\n", "w.yml")
    assert str(caught.value) == f"w.yml:7: accounts[0].checks[0].{problem}"


# --- finding 4: a value of the wrong type is a world error, not a traceback --------------------------

WRONG_TYPES = [
    ("url", "{url: 123}", "request.url: expected a string, got a number"),
    ("assertions text", "{url: http://x.test, assertions: oops}",
     "request.assertions: expected a list, got text"),
    ("assertions null", "{url: http://x.test, assertions: null}",
     "request.assertions: expected a list, got null (leave it out for none)"),
    ("assertion text", "{url: http://x.test, assertions: [STATUS_CODE]}",
     "request.assertions[0]: expected a mapping (key: value), got text"),
    ("target list",
     "{url: http://x.test, assertions: [{source: STATUS_CODE, comparison: EQUALS, target: [200]}]}",
     "request.assertions[0].target: expected a string, got a list"),
    ("regex number", "{url: http://x.test, assertions: [{source: TEXT_BODY, comparison: EQUALS, target: x, "
     "regex: 5}]}", "request.assertions[0].regex: expected a string, got a number"),
    ("headers text", "{url: http://x.test, headers: 'X-A: b'}", "request.headers: expected a list, got text"),
    ("followRedirects", "{url: http://x.test, followRedirects: maybe}",
     "request.followRedirects: expected true or false, got text"),
    ("basicAuth text", "{url: http://x.test, basicAuth: 'admin:pw'}",
     "request.basicAuth: expected a mapping (key: value), got text"),
    ("tcp port list", "{hostname: db, port: [5432]}",
     "request.port: expected a port number from 1 to 65535 (or a {{VARIABLE}} that gives one)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_text", "problem"), [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES]
)
def test_a_value_of_the_wrong_type_is_a_world_error(request_text: str, problem: str) -> None:
    check_type = "TCP" if "hostname" in request_text else "API"
    with pytest.raises(WorldError) as caught:
        parse_world_text(
            HEAD + f"      - {{id: w1, name: W, checkType: {check_type}, request: {request_text}}}\n", "w.yml"
        )
    assert str(caught.value) == f"w.yml:7: accounts[0].checks[0].{problem}"


def test_a_wrong_type_stops_check_and_run_with_exit_2_and_the_reports(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = world_file(clean_env, "      - {id: m2, name: Malformed, tags: [m], request: {url: 123}}\n")
    line = f"{world}:7: accounts[0].checks[0].request.url: expected a string, got a number"
    assert check_gives(world, capsys) == (2, [line])
    code, err, results = run_gives(world, "m", capsys)
    assert (
        code == 2
        and err.strip() == line
        and results["message"] == line
        and results["verdict"] == "usage-error"
    )


def test_a_bad_port_from_the_environment_in_the_shipped_example_is_exit_2(
    clean_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, repo_root: Path
) -> None:
    monkeypatch.setenv("SHOP_TCP_PORT", "8381x")
    examples = repo_root / "examples"
    world = examples / "local-checks.yml"
    code = main(["run", str(examples / "local-checks-spec.yml"), "--emulator", "--world", str(world)])
    captured = capsys.readouterr()
    lines = Path(world).read_text().splitlines()
    number = next(n for n, text in enumerate(lines, 1) if "port: ${SHOP_TCP_PORT" in text)
    line = f"{world}:{number}: accounts[0].checks[5].request.port: expected a port number from 1 to 65535"
    assert code == 2 and captured.err.strip() == line and "Traceback" not in captured.err
    results = json.loads(Path("testsession-reports/results.json").read_text(encoding="utf-8"))
    assert results["message"] == line


def test_the_control_api_answers_a_malformed_definition_with_400(emulator: Any) -> None:
    world = {"accounts": [{"id": "a", "keys": [{"key": "tsk_control_key_1"}], "checks": [
        {"id": "c", "name": "C",
         "request": {"url": "http://x.test", "headers": "X-A: b", "assertion": []}}]}]}  # fmt: skip
    answer = requests.post(f"{emulator.url}/_emulator/world", headers=CONTROL_HEADERS, json=world, timeout=10)
    assert answer.status_code == 400
    assert (
        answer.json()["message"].split("; ")[0]
        == "world:1: accounts[0].checks[0].request.headers: expected a list, got text"
    )
    assert (
        "request.assertion: unknown field 'assertion': did you mean 'assertions'?" in answer.json()["message"]
    )


def test_a_browser_checks_script_path_and_shared_files_reach_its_definition() -> None:
    check_text = (
        "      - {id: c1, name: C, checkType: BROWSER, script: 'test', scriptPath: __checks__/a.spec.ts,\n"
        "         sharedFiles: [{path: __checks__/h.ts, content: 'export {}'}],\n"
        "         playwrightConfig: {timeout: 5}}\n"
    )
    (check,) = parse_world_text(HEAD + check_text).accounts[0].checks
    definition = parse_check_definition(check.definition_data())
    assert definition.model_dump(include={"scriptPath", "playwrightConfig"}) == {
        "scriptPath": "__checks__/a.spec.ts",
        "playwrightConfig": {"timeout": 5},
    }
    assert [(f.path, f.content) for f in definition.sharedFiles] == [("__checks__/h.ts", "export {}")]
