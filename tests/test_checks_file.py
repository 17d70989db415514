"""`testsession run --checks FILE`: the user's checks in production's shape, run against a local build
with the embedded engine, no account, key, world or spec; the demo never taken for the build."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer, free_port, start_http
from helpers import run_here

from runner.checks.checksfile import parse_checks
from runner.checks.declared import Mode, WorldError

# Every property production's OpenAPI gives ChecksV1ApiCheck (api-reference/openapi.json of
# github:checkly/docs), with values of production's shapes.
API_CHECK_PROPERTIES = sorted([
    "activated", "aiAutoRepairEnabled", "alertChannelSubscriptions", "alertChannels", "alertSettings",
    "checkType", "created_at", "degradedResponseTime", "description", "doubleCheck", "frequency",
    "frequencyOffset", "groupId", "groupOrder", "id", "intent", "localSetupScript", "localTearDownScript",
    "locations", "logicalId", "maxResponseTime", "member", "muted", "name", "pending", "privateLocations",
    "project", "projectBindings", "request", "retryStrategy", "runParallel", "runtimeId", "setupSnippetId",
    "shouldFail", "tags", "tearDownSnippetId", "triggerIncident", "updated_at", "useGlobalAlertSettings",
])  # fmt: skip


def full_api_check(url: str) -> dict[str, Any]:
    return {
        "id": "0b9a3c4d-1111-4a5b-8c6d-000000000001",
        "name": "Health",
        "checkType": "API",
        "activated": True,
        "muted": False,
        "doubleCheck": True,
        "shouldFail": False,
        "locations": ["eu-west-1", "us-east-1"],
        "privateLocations": ["my-dc"],
        "tags": ["smoke"],
        "alertSettings": {"escalationType": "RUN_BASED", "runBasedEscalation": {"failedRunThreshold": 1}},
        "useGlobalAlertSettings": True,
        "groupId": None,
        "groupOrder": None,
        "runtimeId": "2025.04",
        "alertChannelSubscriptions": [{"alertChannelId": 1, "activated": True}],
        "retryStrategy": {
            "type": "SINGLE_RETRY",
            "baseBackoffSeconds": 0,
            "maxRetries": 1,
            "sameRegion": True,
        },
        "triggerIncident": None,
        "runParallel": False,
        "description": "The shop answers",
        "intent": {"goal": "the shop is up", "requiredOutcomes": [], "mustPreserve": []},
        "aiAutoRepairEnabled": None,
        "created_at": "2024-01-01T00:00:00.000Z",
        "updated_at": None,
        "alertChannels": [],
        "project": None,
        "logicalId": "health",
        "member": True,
        "pending": None,
        "projectBindings": {"owner": None},
        "frequency": 10,
        "frequencyOffset": None,
        "degradedResponseTime": 10000,
        "maxResponseTime": 20000,
        "setupSnippetId": None,
        "tearDownSnippetId": None,
        "localSetupScript": None,
        "localTearDownScript": None,
        "request": {
            "method": "GET",
            "url": url,
            "followRedirects": True,
            "skipSSL": False,
            "ipFamily": "IPv4",
            "body": "",
            "bodyType": "NONE",
            "headers": [{"key": "Accept", "value": "application/json", "locked": False}],
            "queryParameters": [],
            "assertions": [
                {
                    "source": "STATUS_CODE",
                    "comparison": "EQUALS",
                    "property": "",
                    "target": "200",
                    "regex": None,
                }
            ],
            "basicAuth": None,
        },
    }


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = start_http()
    try:
        yield server
    finally:
        server.stop()


def bare_env() -> dict[str, str]:
    """A newcomer's shell: no TESTSESSION_* variable, not in CI."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


def run(
    tmp_path: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[int, str, str, dict[str, Any]]:
    ran = run_here(["run", *argv, "--no-rca"], env or bare_env(), tmp_path)
    results = tmp_path / "testsession-reports" / "results.json"
    data = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    return ran.returncode, ran.stdout, ran.stderr, data


def test_a_full_production_api_check_loads_unchanged_and_runs(web: HttpServer, tmp_path: Path) -> None:
    check = full_api_check(web.url("/json"))
    assert sorted(check) == API_CHECK_PROPERTIES
    loaded = parse_checks([check], "checks.json", {}).checks[0]
    assert loaded.plan.mode is Mode.REAL
    assert loaded.kept["description"] == "The shop answers" and loaded.kept["privateLocations"] == ["my-dc"]
    assert loaded.retryStrategy is not None and loaded.retryStrategy.type == "SINGLE_RETRY"

    (tmp_path / "checks.json").write_text(json.dumps([check]), encoding="utf-8")
    code, out, err, data = run(tmp_path, "--checks", "checks.json")
    assert code == 0, err
    assert "PASSED" in out and "Health (API, local)" in out
    assert data["world"] == "checks"
    [result] = data["sessions"][0]["results"]
    assert result["verdict"] == "passed" and result["runLocation"] == "local"
    # Nothing links to the embedded service: its address is gone once the run is over.
    for name in ("results.json", "junit.xml", "summary.md"):
        text = (tmp_path / "testsession-reports" / name).read_text(encoding="utf-8")
        assert "/sessions/" not in text, name
    assert "/sessions/" not in out


def test_every_problem_of_the_file_in_one_run(tmp_path: Path) -> None:
    checks = [
        {"name": "One", "chekType": "API", "request": {"url": "http://127.0.0.1:1/"}},
        {"name": "Two", "request": {"url": "http://127.0.0.1:1/", "asertions": []}},
        {"name": "Three", "request": {"url": "http://127.0.0.1:1/", "methd": "GET"}, "descripton": "x"},
    ]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, _out, err, _ = run(tmp_path, "--checks", "checks.yml")
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("checks.yml:")]
    assert [line.split(": ", 2)[1] for line in lines] == [
        "[0].chekType", "[1].request.asertions", "[2].descripton", "[2].request.methd"
    ]  # fmt: skip
    assert "did you mean 'checkType'?" in lines[0] and "did you mean 'description'?" in lines[2]
    assert all("allowed:" not in line and len(line) < 120 for line in lines)


def test_variables_in_production_shape_and_a_masked_secret(web: HttpServer, tmp_path: Path) -> None:
    doc = {
        "checks": [
            {
                "name": "Echo",
                "checkType": "API",
                "request": {
                    "url": "{{BASE}}/echo",
                    "headers": [{"key": "Authorization", "value": "Bearer {{TOKEN}}"}],
                    "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "500"}],
                },
            }
        ],
        "variables": [
            {"key": "BASE", "value": web.url("").rstrip("/"), "locked": False, "secret": False},
            {"key": "TOKEN", "value": "${SHOP_TOKEN}", "locked": True, "secret": True},
        ],
    }
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, err, data = run(
        tmp_path, "--checks", "checks.yml", env={**bare_env(), "SHOP_TOKEN": "s3cr3t-shop-token"}
    )
    assert code == 1, err  # it asserts 500 against a 200: a real failure
    reports = "".join(
        (tmp_path / "testsession-reports" / n).read_text(encoding="utf-8")
        for n in ("results.json", "junit.xml", "summary.md")
    )
    assert data["sessions"][0]["results"][0]["verdict"] == "failed"
    assert "s3cr3t-shop-token" not in out + err + reports


def test_a_checks_own_retry_strategy_applies(web: HttpServer, tmp_path: Path) -> None:
    check = {
        "name": "Flaky",
        "checkType": "API",
        "retryStrategy": {
            "type": "FIXED",
            "baseBackoffSeconds": 0,
            "maxRetries": 2,
            "maxDurationSeconds": 60,
        },
        "request": {
            "url": web.url("/flaky?key=own-retry&fail=1"),
            "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}],
        },
    }
    (tmp_path / "checks.yml").write_text(yaml.safe_dump([check]), encoding="utf-8")
    code, out, err, data = run(tmp_path, "--checks", "checks.yml")
    [result] = data["sessions"][0]["results"]
    assert (result["verdict"], result["attempts"]) == ("flaky", 2), out + err
    assert code == 0


def test_a_spec_names_the_checks_file_and_its_gate_applies(tmp_path: Path) -> None:
    port = free_port()
    checks = [{"name": "Down", "checkType": "TCP", "request": {"hostname": "127.0.0.1", "port": port}}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    (tmp_path / "spec.yml").write_text("checks: checks.yml\nname: local build\n", encoding="utf-8")
    code, out, err, data = run(tmp_path, "spec.yml")
    assert code == 1, err
    assert f"nothing listens at 127.0.0.1:{port}: is the build started? (1 check)" in out
    assert data["sessions"][0]["name"] == "local build" and data["sessions"][0]["runLocation"] == "local"


def test_the_demo_is_never_taken_for_the_build(tmp_path: Path) -> None:
    spec = Path(__file__).parent.parent / "examples" / "testsession.yml"
    ci = {**bare_env(), "CI": "true"}
    code, out, err, data = run(tmp_path, str(spec), "--emulator", env=ci)
    assert code == 2 and "--checks FILE" in err and "--demo" in err and data["exitCode"] == 2
    # Two of the demo's checks (--tag smoke): the marks are the claim, not the whole demo's 9 s.
    # -q too: the console's DEMO line is one -q keeps (it printed nothing of it once).
    demo = ("--demo", "--tag", "smoke", "--timeout", "60", "-q")
    code, out, err, data = run(tmp_path, str(spec), *demo, env=ci)
    assert out.splitlines()[0].startswith("DEMO (the shipped demo world")
    assert data["world"] == "demo"
    reports = tmp_path / "testsession-reports"
    assert "DEMO" in (reports / "summary.md").read_text(encoding="utf-8").splitlines()[0]
    assert '<testsuite name="DEMO ' in (reports / "junit.xml").read_text(encoding="utf-8")


def test_a_check_of_a_runnable_type_needs_its_request_and_emulator_keys_are_refused() -> None:
    with pytest.raises(WorldError) as caught:
        parse_checks(
            [
                {"name": "A", "checkType": "API"},
                {"name": "B", "behaviour": "pass", "request": {"url": "http://x"}},
            ],
            "c.yml",
            {},
        )
    assert [p.split(": ", 2)[1] for p in caught.value.problems] == ["[0].request", "[1].behaviour"]


def test_a_check_that_cannot_run_says_how_to_leave_it_out_of_the_checks_file(tmp_path: Path) -> None:
    """A checks file has no behaviour: and no settings:, so the advice is the file's and --tag."""
    checks = [{"name": "Login page", "checkType": "BROWSER"}, {"name": "Beat", "checkType": "HEARTBEAT"}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    code, out, _err, data = run(tmp_path, "--checks", "checks.yml")
    errors = {r["name"]: r["error"] for s in data["sessions"] for r in s["results"]}
    assert code == 1 and set(errors) == {"Login page", "Beat"}, out
    for error in errors.values():
        assert error.endswith("leave it out of the checks file, or run other tags (--tag)"), error
        assert "behaviour" not in error and "settings.notRunnable" not in error, error
    assert "BROWSER check without a script (give it a script: to run it)" in errors["Login page"]


def test_a_misspelled_check_type_is_refused_at_load_and_an_unknown_one_kept(tmp_path: Path) -> None:
    """`PLAYWRITE` is a typo (exit 2, the type it means); a type production may add later is kept and
    fails closed when it runs, as any check that cannot run here."""
    typo = [{"name": "Suite", "checkType": "PLAYWRITE"}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(typo), encoding="utf-8")
    code, _out, err, _ = run(tmp_path, "--checks", "checks.yml")
    assert code == 2 and "[0].checkType: unknown check type 'PLAYWRITE': did you mean 'PLAYWRIGHT'?" in err
    (tmp_path / "checks.yml").write_text(yaml.safe_dump([{"name": "Later", "checkType": "QUANTUM"}]))
    code, out, _err, data = run(tmp_path, "--checks", "checks.yml")
    [result] = [r for s in data["sessions"] for r in s["results"]]
    assert code == 1 and result["verdict"] == "error" and "cannot run on this machine" in result["error"], out


def test_every_problem_of_every_check_at_once_whatever_its_kind(tmp_path: Path) -> None:
    """A wrong checkType hid a misspelt field, a misspelt field hid a bad comparison: each pass of
    `validate` told one. Now every problem of every check, one line each, in one pass."""
    text = (
        "checks:\n"
        "  - name: One\n"
        "    checkType: APII\n"
        "    request: {url: 'http://127.0.0.1:1/', method: GET}\n"
        "  - name: Two\n"
        "    checkType: API\n"
        "    frequncy: 5\n"
        "    request: {url: 'http://127.0.0.1:1/', method: GET}\n"
        "  - name: Three\n"
        "    checkType: API\n"
        "    request:\n"
        "      url: 'http://127.0.0.1:1/'\n"
        "      method: GET\n"
        "      assertions: [{source: STATUS_CODE, comparison: EQUAL, target: '200'}]\n"
        "  - name: Four\n"
        "    checkType: API\n"
        "    frequncy: 5\n"
        "    request:\n"
        "      url: 'http://127.0.0.1:1/'\n"
        "      method: GET\n"
        "      assertions: [{source: STATUS_CODE, comparison: EQUAL, target: '200'}]\n"
    )
    path = tmp_path / "checks.yml"
    path.write_text(text, encoding="utf-8")
    expected = [
        ("3", "checks[0].checkType"),
        ("7", "checks[1].frequncy"),
        ("14", "checks[2].request.assertions[0].comparison"),
        ("17", "checks[3].frequncy"),
        ("21", "checks[3].request.assertions[0].comparison"),
    ]
    for argv in (["validate", str(path)], ["run", "--checks", str(path), "--no-rca"]):
        ran = run_here(argv, bare_env(), tmp_path)
        assert ran.returncode == 2, ran.stderr
        lines = [
            line[len(str(path)) + 1 :] for line in ran.stderr.splitlines() if line.startswith(f"{path}:")
        ]
        found = [tuple(line.split(": ", 2)[:2]) for line in lines if line[:1].isdigit()]
        assert sorted(set(found)) == sorted(expected), ran.stderr
