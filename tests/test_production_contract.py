"""Where our API document is silent, the production contract of this API family (docs/production-contract.md):
its trigger rules hold on both sides (the tool refuses before sending, exit 2 naming file, line and field;
the emulator answers 400), and its answer shapes are read without losing data."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import auth_headers

from runner.cli.main import main
from runner.emulator import Emulator
from runner.job.verdicts import result_verdict
from runner.models import Dashboard, ErrorBody, ErrorGroup, IncidentUpdate, SessionResult, TestSession

CHECK = "0b9a3c4d-1111-4a5b-8c6d-000000000001"  # the default world's "Homepage loads"

# (name, spec lines after `runLocation`, the trigger body's offending part, the field named)
RULES = [
    ("env value missing", "environmentVariables:\n  - {key: A}\n", {"environmentVariables": [{"key": "A"}]},
     "environmentVariables[0].value"),
    ("env value empty", "environmentVariables:\n  - {key: A, value: ''}\n",
     {"environmentVariables": [{"key": "A", "value": ""}]}, "environmentVariables[0].value"),
    ("environment empty", "metadata:\n  environment: ''\n", {"metadata": {"environment": ""}},
     "metadata.environment"),
    ("environment null", "metadata:\n  environment: null\n", {"metadata": {"environment": None}},
     "metadata.environment"),
    ("onlyOn", "retryStrategy: {type: FIXED, onlyOn: [TIMEOUT]}\n",
     {"retryStrategy": {"type": "FIXED", "onlyOn": ["TIMEOUT"]}}, "retryStrategy.onlyOn[0]"),
    ("checkId", "target: {checkId: [homepage]}\n", {"target": {"checkId": ["homepage"]}},
     "target.checkId[0]"),
    ("empty tag", "target: {matchTags: [['']]}\n", {"target": {"matchTags": [[""]]}},
     "target.matchTags[0][0]"),
    ("retry type", "retryStrategy: {maxRetries: 2}\n", {"retryStrategy": {"maxRetries": 2}},
     "retryStrategy.type"),
    ("single retry maxRetries", "retryStrategy: {type: SINGLE_RETRY, maxRetries: 3}\n",
     {"retryStrategy": {"type": "SINGLE_RETRY", "maxRetries": 3}}, "retryStrategy"),
    ("single retry maxDurationSeconds", "retryStrategy: {type: SINGLE_RETRY, maxDurationSeconds: 60}\n",
     {"retryStrategy": {"type": "SINGLE_RETRY", "maxDurationSeconds": 60}}, "retryStrategy"),
]  # fmt: skip
IDS = [rule[0] for rule in RULES]


@pytest.mark.parametrize(("name", "spec", "body", "field"), RULES, ids=IDS)
def test_client_refuses_before_sending(
    name: str,
    spec: str,
    body: dict[str, Any],
    field: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "spec.yml"
    path.write_text("runLocation: eu-west-1\n" + spec, encoding="utf-8")
    monkeypatch.setenv("TESTSESSION_BASE_URL", "http://127.0.0.1:9")  # nothing listens: nothing is sent
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_never_used_1234")
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", "acc")
    monkeypatch.chdir(tmp_path)  # the usage error's reports land here, not in the repository
    assert main(["run", str(path)]) == 2  # refused before any request: no server listens there
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith((f"{path}:2: {field}: ", f"{path}:3: {field}: ")), line


@pytest.mark.parametrize(("name", "spec", "body", "field"), RULES, ids=IDS)
def test_emulator_answers_400_naming_the_field(
    module_emulator: Emulator, name: str, spec: str, body: dict[str, Any], field: str
) -> None:
    sent = {"name": "rule", "runLocation": "eu-west-1", "target": {"checkId": [CHECK]}, **body}
    answer = requests.post(
        f"{module_emulator.url}/v1/test-sessions/trigger",
        json=sent,
        headers=auth_headers(module_emulator),
        timeout=5,
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"].startswith(field.split("[")[0])


def test_valid_production_body_is_accepted_and_answered_without_null_metadata(
    module_emulator: Emulator,
) -> None:
    body = {
        "name": "ok",
        "runLocation": "eu-west-1",
        "target": {"checkId": [CHECK], "matchTags": [["smoke"]]},
        "environmentVariables": [{"key": "A", "value": "1"}, {"key": "S", "value": "", "secret": True}],
        "retryStrategy": {"type": "FIXED", "onlyOn": ["NETWORK_ERROR"]},
    }
    url = f"{module_emulator.url}/v1/test-sessions/trigger"
    answer = requests.post(url, json=body, headers=auth_headers(module_emulator), timeout=5)
    assert answer.status_code == 201 and "metadata" not in answer.json()
    with_env = {**body, "metadata": {"environment": "staging"}}
    answer = requests.post(url, json=with_env, headers=auth_headers(module_emulator), timeout=5)
    assert answer.json()["metadata"] == {"environment": "staging"}


# --- production-shaped answers are read whole ----------------------------------------------------


def test_error_group_with_user_context_objects_keeps_them() -> None:
    group = ErrorGroup.model_validate(
        {
            "id": "g1", "checkId": CHECK, "errorHash": "h", "rawErrorMessage": None,
            "cleanedErrorMessage": "boom", "firstSeen": "2026-01-01T00:00:00Z",
            "lastSeen": "2026-01-01T00:00:00Z", "archivedUntilNextEvent": False,
            "rootCauseAnalyses": [
                {"id": "a1", "created_at": "2026-01-01T00:00:00Z", "provider": "p", "model": "m",
                 "durationMs": 5, "analysis": {"classification": "C", "rootCause": "R", "userImpact": "U",
                                               "codeFix": None, "evidence": None, "referenceLinks": None},
                 "userContext": [{"text": "deployed v2", "type": "USER"}, {"text": "flag on", "type": "X"}]},
                {"id": "a2", "userContext": None},
                {"id": "a3", "userContext": "as our document says"},
            ],
        }
    )  # fmt: skip
    first, second, third = group.rootCauseAnalyses
    assert first.user_context_text == "deployed v2\nflag on"
    assert first.model_dump(mode="json")["userContext"][0] == {"text": "deployed v2", "type": "USER"}
    assert second.user_context_text is None and third.user_context_text == "as our document says"


def test_dashboard_with_numeric_id_and_key_objects() -> None:
    data = {
        "id": 4521, "dashboardId": "d-1", "header": "Status", "customUrl": "shop", "sortByStatus": True,
        "keys": [{"id": "k1", "maskedKey": "ab***", "rawKey": "", "created_at": "2026-01-01T00:00:00Z"}],
        "somethingNew": {"kept": True},
    }  # fmt: skip
    dashboard = Dashboard.model_validate(data)
    assert dashboard.id == 4521 and dashboard.sortByStatus is True and dashboard.showGroupNames is True
    dumped = dashboard.model_dump(mode="json")
    assert dumped["keys"][0]["maskedKey"] == "ab***" and dumped["somethingNew"] == {"kept": True}


def test_401_without_message_and_incident_update_with_description_only() -> None:
    body = ErrorBody.model_validate({"statusCode": 401, "error": "Unauthorized"})
    assert body.message is None and body.error == "Unauthorized"
    assert IncidentUpdate.model_validate({"description": "fixed"}).id is None


def test_unknown_result_status_is_kept_and_never_a_pass() -> None:
    session = TestSession.model_validate(
        {
            "testSessionId": "s",
            "status": "QUEUED",
            "results": [{"testSessionResultId": "r", "status": "SKIPPED"}],
        }
    )
    assert session.status == "QUEUED" and not session.is_final
    result: SessionResult = session.results[0]
    assert result.status == "SKIPPED" and result_verdict(result, retried=False) == "error"


def test_client_reports_a_401_without_message(world_factory: Any) -> None:
    from runner.client import ApiClient
    from runner.core.errors import AuthenticationError

    emu = world_factory()
    with (
        ApiClient(emu.url, "tsk_wrong_key_12345", emu.account_id, max_retries=0) as client,
        pytest.raises(AuthenticationError) as info,
    ):
        client.get_session("x")
    assert info.value.status == 401


def test_emulator_dashboard_answer_has_a_numeric_id_and_header_alone_is_enough(
    module_emulator: Emulator,
) -> None:
    answer = requests.post(
        f"{module_emulator.url}/v1/dashboards",
        json={"header": "Only a header"},
        headers=auth_headers(module_emulator),
        timeout=5,
    )
    assert answer.status_code == 201, answer.text
    data = answer.json()
    assert isinstance(data["id"], int) and data["dashboardId"] and data["showGroupNames"] is True


# --- the seven mismatches issue 21 found (production's OpenAPI, api-reference/openapi.json) -------


def test_null_environment_values_are_sent_as_null(module_emulator: Emulator) -> None:
    from runner.client import ApiClient
    from runner.models import TriggerRequest

    variables = [{"key": "A", "value": None}, {"key": "S", "value": None, "secret": True}]
    body = {"name": "nulls", "runLocation": "eu-west-1", "target": {"checkId": [CHECK]}}
    request = TriggerRequest.model_validate({**body, "environmentVariables": variables})
    # `value` is required by production (and nullable): it is sent, as null, not left out.
    assert [item["value"] for item in request.to_body()["environmentVariables"]] == [None, None]
    emu = module_emulator
    with ApiClient(emu.url, emu.api_key, emu.account_id) as client:
        assert client.trigger(request).status == "RUNNING"


def test_null_environment_value_in_a_spec_is_accepted(tmp_path: Path) -> None:
    from runner.spec import load_spec

    path = tmp_path / "spec.yml"
    path.write_text("runLocation: eu-west-1\nenvironmentVariables:\n  EMPTY: null\n", encoding="utf-8")
    (session,) = load_spec(str(path), {}).sessions
    assert session.environmentVariables[0].value is None


def test_single_retry_sends_only_what_its_branch_declares() -> None:
    from runner.models import RetryStrategy

    single = RetryStrategy(type="SINGLE_RETRY", baseBackoffSeconds=5)
    assert single.model_dump(mode="json", exclude_none=True) == {
        "type": "SINGLE_RETRY", "baseBackoffSeconds": 5.0, "sameRegion": True,
    }  # fmt: skip
    fixed = RetryStrategy(type="FIXED").model_dump(mode="json", exclude_none=True)
    assert fixed["maxRetries"] == 2 and fixed["maxDurationSeconds"] == 600


def test_test_session_error_group_has_environments_and_pwt_metadata(module_emulator: Emulator) -> None:
    from runner.client import ApiClient
    from runner.client.polling import wait_for_session

    emu = module_emulator
    failing = "0b9a3c4d-1111-4a5b-8c6d-000000000003"  # the default world's "Checkout flow" fails
    body = {
        "name": "env", "runLocation": "eu-west-1", "target": {"checkId": [failing]},
        "metadata": {"environment": "staging"},
    }  # fmt: skip
    with ApiClient(emu.url, emu.api_key, emu.account_id) as client:
        started = client.trigger(body)
        session = wait_for_session(client, started.testSessionId, time.monotonic() + 20)
        assert session is not None and session.errorGroupIds
        raw = requests.get(
            f"{emu.url}/v1/test-session-error-groups/{session.errorGroupIds[0]}",
            headers=auth_headers(emu),
            timeout=5,
        ).json()
        group = client.get_test_session_error_group(session.errorGroupIds[0])
    required = {"id", "environments", "errorHash", "rawErrorMessage", "cleanedErrorMessage", "firstSeen",
                "lastSeen", "archivedUntilNextEvent", "pwtMetadata"}  # fmt: skip
    assert required <= set(raw)
    assert "staging" in raw["environments"] and raw["pwtMetadata"] is None
    assert group.environments is not None and "staging" in group.environments


def test_dashboard_with_production_key_objects_is_accepted_both_sides(module_emulator: Emulator) -> None:
    from runner.models import DashboardRequest

    key = {"id": "5f0c6a3e-1111-4a5b-8c6d-000000000001", "rawKey": "raw-1234", "maskedKey": "raw-****",
           "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    body = {"header": "Private", "isPrivate": True, "keys": [key]}
    assert DashboardRequest.model_validate(body).keys[0].maskedKey == "raw-****"
    url, headers = f"{module_emulator.url}/v1/dashboards", auth_headers(module_emulator)
    answer = requests.post(url, json=body, headers=headers, timeout=5)
    assert answer.status_code == 201, answer.text
    assert answer.json()["keys"][0]["maskedKey"] == "raw-****"
    no_raw = {"header": "x", "keys": [{**key, "rawKey": None}]}
    refused = requests.post(url, json=no_raw, headers=headers, timeout=5)
    assert refused.status_code == 400 and refused.json()["message"].startswith("keys[0].rawKey")


def test_check_update_answer_has_no_null_frequency_offset(module_emulator: Emulator) -> None:
    url = f"{module_emulator.url}/v1/checks/{CHECK}"
    answer = requests.put(url, json={"name": "Homepage v3"}, headers=auth_headers(module_emulator), timeout=5)
    assert answer.status_code == 200, answer.text
    assert None not in answer.json().values() and "frequencyOffset" not in answer.json()
    answer = requests.put(
        url, json={"frequency": 10, "frequencyOffset": 5}, headers=auth_headers(module_emulator), timeout=5
    )
    assert answer.json()["frequencyOffset"] == 5
