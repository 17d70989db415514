"""Check definitions as production's GET /v1/checks/{id} returns them: what loads, what runs here."""

from __future__ import annotations

from typing import Any

import pytest

from runner.checks import Variable, VariableSources, run_check
from runner.models.check_definitions import (
    ApiCheckDefinition,
    CheckDefinition,
    DnsCheckDefinition,
    TcpCheckDefinition,
    UrlCheckDefinition,
    parse_check_definition,
)

# A check as production returns it (ChecksV1ApiCheck), fields we do not model included.
PRODUCTION_API_CHECK: dict[str, Any] = {
    "id": "0b9a3c4d-1111-4a5b-8c6d-000000000001",
    "name": "Homepage loads",
    "checkType": "API",
    "activated": True,
    "muted": False,
    "doubleCheck": True,
    "shouldFail": False,
    "locations": ["eu-west-1"],
    "tags": ["smoke"],
    "alertSettings": {"escalationType": "RUN_BASED", "runBasedEscalation": {"failedRunThreshold": 1}},
    "useGlobalAlertSettings": True,
    "groupId": None,
    "retryStrategy": {"type": "FIXED", "baseBackoffSeconds": 60, "maxRetries": 2, "sameRegion": True},
    "frequency": 10,
    "degradedResponseTime": None,
    "maxResponseTime": 5000,
    "request": {
        "method": "GET",
        "url": "https://shop.example.com/api/health",
        "followRedirects": True,
        "skipSSL": False,
        "ipFamily": "IPv4",
        "body": "",
        "bodyType": "NONE",
        "headers": [{"key": "Accept", "value": "application/json", "locked": False}],
        "queryParameters": [],
        "assertions": [
            {"source": "STATUS_CODE", "comparison": "EQUALS", "property": "", "target": "200", "regex": None},
            {"source": "JSON_BODY", "comparison": "GREATER_THAN", "property": "$.uptime", "target": 10},
        ],
        "basicAuth": None,
    },
    "setupSnippetId": None,
    "tearDownSnippetId": None,
    "localSetupScript": None,
    "localTearDownScript": None,
    "environmentVariables": [{"key": "TOKEN", "value": None, "locked": True, "secret": True}],
    "created_at": "2024-01-01T00:00:00.000Z",
    "projectBindings": {"owner": None},
}


def test_production_s_api_check_loads_typed_and_keeps_what_we_do_not_model() -> None:
    check = parse_check_definition(PRODUCTION_API_CHECK)
    assert isinstance(check, ApiCheckDefinition) and check.local_support() is None and check.problems() == []
    assert check.request.headers[0].key == "Accept" and check.request.assertions[1].target == "10"
    assert check.environmentVariables[0].secret and check.environmentVariables[0].value is None
    assert (check.model_extra or {})["alertSettings"]["escalationType"] == "RUN_BASED"
    assert check.response_limits_ms() == (10_000, 5000)  # null: production's default; 5000 as given


@pytest.mark.parametrize(
    ("check_type", "request_fields", "model", "limits"),
    [
        ("API", {"url": "http://x.test"}, ApiCheckDefinition, (10_000, 20_000)),
        ("URL", {"url": "http://x.test"}, UrlCheckDefinition, (3_000, 5_000)),
        ("TCP", {"hostname": "db", "port": 5432}, TcpCheckDefinition, (4_000, 5_000)),
        ("DNS", {"query": "x.test", "recordType": "A"}, DnsCheckDefinition, (500, 1_000)),
    ],
)
def test_each_runnable_type_has_its_model_and_production_s_defaults(
    check_type: str, request_fields: dict[str, Any], model: type[CheckDefinition], limits: tuple[int, int]
) -> None:
    check = parse_check_definition({"name": "c", "checkType": check_type, "request": request_fields})
    assert type(check) is model and check.response_limits_ms() == limits and check.problems() == []


def test_a_browser_check_without_a_script_or_with_an_unknown_runtime_says_so() -> None:
    check = parse_check_definition({"name": "b", "checkType": "BROWSER", "runtimeId": "2019.01"})
    assert check.local_support() is None
    assert check.problems() == [
        "script: required field is missing (the Playwright Test code)",
        "runtimeId: expected one of 2026.04, 2025.04, 2024.09, 2024.02, 2023.09, 2023.02, 2022.10 or null",
    ]


def test_tcp_body_is_production_s_other_name_for_data() -> None:
    check = parse_check_definition(
        {"name": "t", "checkType": "TCP", "request": {"hostname": "h", "port": 1, "body": "PING"}}
    )
    assert isinstance(check, TcpCheckDefinition) and check.request.payload == "PING"


@pytest.mark.parametrize(
    ("check_type", "why"),
    [
        *[(t, "only API, URL, TCP, DNS, ICMP, TRACEROUTE, GRPC, SSL, BROWSER, MULTI_STEP and PLAYWRIGHT "
              "checks can") for t in ("MOBILE", "NEW_KIND")],
        ("HEARTBEAT", "a heartbeat monitor is passive, production waits for your scheduled job to ping "
         "its URL within the period and grace and alerts when no ping comes; there is no request to make "
         "against a build (ping it from the job itself)"),
        ("AGENTIC", "production's AI agent carries out the check's prompt (and keeps the script it "
         "learned) in Checkly's own runtime, and no such agent runs here; a BROWSER or MULTI_STEP check "
         "with the same steps can"),
    ],
)  # fmt: skip
def test_types_that_cannot_run_here_are_recognised_and_reported(check_type: str, why: str) -> None:
    check = parse_check_definition({"name": "b", "checkType": check_type, "script": "await page.goto(url)"})
    assert type(check) is CheckDefinition and (check.model_extra or {}).get("script")
    reason = f"{check_type} checks cannot run locally: {why}"
    assert check.local_support() == reason
    attempt = run_check(check, max_run_seconds=30).final
    assert (attempt.error_class, attempt.error_kind, attempt.message) == (
        "CONFIGURATION_ERROR",
        "not_runnable_locally",
        reason,
    )


def test_setup_and_teardown_scripts_cannot_run_here() -> None:
    check = parse_check_definition(
        {**PRODUCTION_API_CHECK, "localSetupScript": "request.headers.x = 1", "setupSnippetId": 7}
    )
    assert (
        check.local_support()
        == "checks with setup or teardown scripts cannot run locally (localSetupScript, setupSnippetId)"
    )


def test_problems_name_the_field_and_what_is_allowed() -> None:
    cases = {
        "API": (
            {"method": "FETCH", "url": ""},
            ["request.url: required field is missing", "request.method: expected one of"],
        ),
        "URL": (
            {"url": "ftp://x", "assertions": [{"source": "HEADERS", "comparison": "EQUALS"}]},
            [
                "request.url: must start with http:// or https://",
                "request.assertions[0].source: expected one of STATUS_CODE",
            ],
        ),
        "TCP": (
            {
                "hostname": "h",
                "port": 70000,
                "assertions": [{"source": "RESPONSE_DATA", "comparison": "HAS_KEY"}],
            },
            [
                "request.port: expected a port number from 1 to 65535",
                "request.assertions[0].comparison: expected one of",
            ],
        ),
        "DNS": (
            {"query": "x", "recordType": "SRV", "protocol": "QUIC"},
            ["request.recordType: expected one of", "request.protocol: expected one of"],
        ),
    }
    for check_type, (request, expected) in cases.items():
        check = parse_check_definition({"name": "p", "checkType": check_type, "request": request})
        problems = check.problems()
        assert len(problems) == len(expected) and all(
            p.startswith(e) for p, e in zip(problems, expected, strict=True)
        )
        attempt = run_check(check, max_run_seconds=30).final
        assert attempt.error_kind == "invalid_definition" and attempt.message == "; ".join(problems)


def test_nulls_where_production_sends_them() -> None:
    request = {
        "url": "http://x.test",
        "headers": None,
        "assertions": None,
        "body": None,
        "followRedirects": None,
    }
    check = parse_check_definition(
        {
            "name": "n",
            "checkType": "API",
            "shouldFail": None,
            "tags": None,
            "environmentVariables": None,
            "request": request,
        }
    )
    assert isinstance(check, ApiCheckDefinition) and not check.shouldFail and check.request.followRedirects
    assert check.request.headers == [] and check.request.assertions == [] and check.request.body == ""


def test_a_definition_its_load_found_no_problem_in_is_not_looked_at_again_but_a_filled_copy_is() -> None:
    data = {"name": "TCP", "checkType": "TCP", "request": {"hostname": "127.0.0.1", "port": "{{P}}"}}
    checked = parse_check_definition(data, checked=True)
    assert checked.problems() == [] and parse_check_definition(data).problems() == []
    trusted = parse_check_definition({**data, "request": {"hostname": "h", "port": 0}}, checked=True)
    assert trusted.problems() == []  # the caller's word: its load found none
    # The port filled in at run time is a copy of the definition: its problems are found again.
    bad = VariableSources(session=(Variable("P", "not-a-port"),))
    final = run_check(checked, max_run_seconds=1, variables=bad).final
    assert final.error_kind == "invalid_definition" and final.message is not None
    assert final.message.startswith("request.port: expected a port number")
