"""Emulator analyses, incident updates, deletions, dashboards, the deprecated check update, openapi."""

from __future__ import annotations

from typing import Any

import requests
from emulator_ids import (
    CHECK_ERROR_GROUP,
    CHECK_ERROR_GROUP_ANALYSIS,
    CHECKOUT,
    HOMEPAGE,
    STARTER_ACCOUNT,
    STARTER_KEY,
)

from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models import RootCauseAnalysis

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True


def failed_group(api: Any) -> str:
    body = {"name": "ci", "runLocation": "eu-west-1", "target": {"checkId": [CHECKOUT]}}
    session = api("POST", "/v1/test-sessions/trigger", json=body).json()
    done = api("GET", f"/v1/test-sessions/{session['testSessionId']}/completion?maxWaitSeconds=10").json()
    return str(done["errorGroupIds"][0])


def test_analysis_of_a_test_session_error_group_goes_pending_then_completed(api: Any, emulator: Any) -> None:
    group_id = failed_group(api)
    # Pending until the test moves the clock: the world's 2 simulated seconds were 0.08 s at the test
    # speed, and a loaded machine's next request came later (200, completed, in a suite run).
    requests.patch(
        f"{emulator.url}/_emulator/settings",
        headers=CONTROL_HEADERS,
        json={"analysisDelaySeconds": 3600},
        timeout=5,
    ).raise_for_status()
    created = api(
        "POST",
        f"/v1/root-cause-analyses/test-session-error-groups/{group_id}",
        json={"userContext": "deployed v2"},
    )
    assert created.status_code == 202 and created.json()["status"] == "PENDING"
    analysis_id = created.json()["id"]
    pending = api("GET", f"/v1/root-cause-analyses/{analysis_id}")
    assert pending.status_code == 202 and pending.json() == {"id": analysis_id, "status": "PENDING"}
    requests.post(
        f"{emulator.url}/_emulator/clock/advance", headers=CONTROL_HEADERS, json={"seconds": 3601}, timeout=5
    )
    done = api("GET", f"/v1/root-cause-analyses/{analysis_id}")
    assert done.status_code == 200
    rca = RootCauseAnalysis.model_validate(done.json())
    assert rca.is_completed and rca.provider == "emulator" and rca.model
    assert rca.errorGroupId == group_id and rca.checkId == CHECKOUT and rca.checkType == "BROWSER"
    assert rca.analysis is not None and rca.analysis.rootCause and rca.analysis.classification
    second = api("POST", f"/v1/root-cause-analyses/test-session-error-groups/{group_id}").json()["id"]
    group = api("GET", f"/v1/test-session-error-groups/{group_id}").json()
    assert [a["id"] for a in group["rootCauseAnalyses"]] == [second, analysis_id]  # newest first
    assert group["rootCauseAnalyses"][1]["userContext"] == "deployed v2"
    assert group["rootCauseAnalyses"][1]["analysis"]["rootCause"]


def test_check_error_group_with_an_existing_analysis(api: Any) -> None:
    group = api("GET", f"/v1/error-groups/{CHECK_ERROR_GROUP}").json()
    assert group["checkId"] == CHECKOUT and group["rootCauseAnalyses"][0]["id"] == CHECK_ERROR_GROUP_ANALYSIS
    assert api("GET", f"/v1/root-cause-analyses/{CHECK_ERROR_GROUP_ANALYSIS}").status_code == 200
    created = api("POST", f"/v1/root-cause-analyses/error-groups/{CHECK_ERROR_GROUP}")
    assert created.status_code == 202
    # The kinds of group are separate: a check group is not a test-session group.
    assert api("GET", f"/v1/test-session-error-groups/{CHECK_ERROR_GROUP}").status_code == 404
    assert (
        api("POST", f"/v1/root-cause-analyses/test-session-error-groups/{CHECK_ERROR_GROUP}").status_code
        == 404
    )


def test_analysis_errors(api: Any) -> None:
    assert api("GET", "/v1/root-cause-analyses/unknown").status_code == 404
    assert api("POST", "/v1/root-cause-analyses/error-groups/unknown").status_code == 404
    response = api(
        "POST", f"/v1/root-cause-analyses/error-groups/{CHECK_ERROR_GROUP}", json={"userContext": "x" * 257}
    )
    assert response.status_code == 400 and "userContext" in response.json()["message"]
    response = api(
        "POST", "/v1/root-cause-analyses/error-groups/any", key=STARTER_KEY, account=STARTER_ACCOUNT
    )
    assert response.status_code == 402 and response.json()["error"] == "Payment Required"


def test_test_sessions_not_on_plan_is_402(world_factory: Any, default_world: dict[str, Any]) -> None:
    default_world["accounts"][0]["plan"] = {"testSessions": False, "analyses": True}
    emu = world_factory(default_world)
    headers = {"Authorization": f"Bearer {emu.api_key}", "X-Service-Account": emu.account_id}
    body = {"name": "x", "runLocation": "eu-west-1"}
    response = requests.post(f"{emu.url}/v1/test-sessions/trigger", json=body, headers=headers, timeout=5)
    assert response.status_code == 402


def test_incident_update(api: Any) -> None:
    body = {"description": "We are looking into it", "status": "INVESTIGATING", "notifySubscribers": True}
    response = api("POST", "/v1/status-pages/incidents/inc-1001/incident-updates", json=body)
    assert response.status_code == 200
    update = response.json()
    assert update["id"] and update["description"] == body["description"] and update["notifySubscribers"]
    assert api("POST", "/v1/status-pages/incidents/nope/incident-updates", json=body).status_code == 404
    bad = api("POST", "/v1/status-pages/incidents/inc-1001/incident-updates", json={"status": "DONE"})
    assert bad.status_code == 400 and "description" in bad.json()["message"]


def test_deletions(api: Any) -> None:
    assert api("DELETE", "/v1/maintenance-windows/2001/maintenances/m-1").status_code == 204
    assert api("DELETE", "/v1/maintenance-windows/2001/maintenances/m-1").status_code == 404
    assert api("DELETE", "/v1/maintenance-windows/2001").status_code == 204
    assert api("DELETE", "/v1/maintenance-windows/2001").status_code == 404
    assert api("DELETE", "/v1/maintenance-windows/2001/maintenances/m-2").status_code == 404
    response = api("DELETE", "/v1/client-certificates/cert-3001")
    assert response.status_code == 204 and response.content == b""
    assert api("DELETE", "/v1/client-certificates/cert-3001").status_code == 404


def test_dashboards_and_taken_addresses(api: Any) -> None:
    response = api(
        "POST", "/v1/dashboards", json={"header": "Shop", "customUrl": "shop-new", "checksPerPage": 5}
    )
    assert response.status_code == 201
    dashboard = response.json()
    assert dashboard["id"] and dashboard["dashboardId"] and dashboard["customUrl"] == "shop-new"
    again = api("POST", "/v1/dashboards", json={"header": "Again", "customUrl": "shop-new"})
    assert again.status_code == 409 and again.json()["error"] == "Conflict"
    # Taken by the world, including by another account.
    assert api("POST", "/v1/dashboards", json={"header": "x", "customUrl": "other-status"}).status_code == 409
    taken_domain = {"header": "x", "customDomain": "status.shop.example.com"}
    assert api("POST", "/v1/dashboards", json=taken_domain).status_code == 409
    bad = api("POST", "/v1/dashboards", json={"header": "x", "customUrl": "y", "checksPerPage": 21})
    assert bad.status_code == 400 and "checksPerPage" in bad.json()["message"]


def test_check_update_and_frequency_rules(api: Any) -> None:
    path = f"/v1/checks/{HOMEPAGE}"
    response = api(
        "PUT", f"{path}?autoAssignAlerts=false", json={"name": "Homepage v2", "tags": ["smoke", "new"]}
    )
    assert response.status_code == 200 and response.headers["Deprecation"] == "true"
    check = response.json()
    assert check["id"] == HOMEPAGE and check["name"] == "Homepage v2" and check["autoAssignAlerts"] is False
    session = api(
        "POST",
        "/v1/test-sessions/trigger",
        json={"name": "x", "runLocation": "eu-west-1", "target": {"matchTags": [["new"]]}},
    )
    assert [r["name"] for r in session.json()["results"]] == ["Homepage v2"]
    # Both given: the model's rule. Frequency 1 allows offsets up to 10.
    assert api("PUT", path, json={"frequency": 1, "frequencyOffset": 11}).status_code == 400
    assert api("PUT", path, json={"frequency": 1, "frequencyOffset": 10}).status_code == 200
    # Only the offset given: checked against the stored frequency (1).
    response = api("PUT", path, json={"frequencyOffset": 20})
    assert response.status_code == 400 and "frequencyOffset" in response.json()["message"]
    # Only the frequency given: checked against the stored offset (10): 120 minutes allows at most 2.
    assert api("PUT", path, json={"frequency": 120}).status_code == 400
    assert api("PUT", path, json={"frequency": 0, "frequencyOffset": 20}).status_code == 200
    browser = api("PUT", f"/v1/checks/{CHECKOUT}", json={"frequency": 0, "frequencyOffset": 10})
    assert browser.status_code == 400 and "API checks only" in browser.json()["message"]
    assert api("PUT", path, json={"description": "x" * 511}).status_code == 400
    assert api("PUT", path, json={"description": "x" * 510}).status_code == 200  # production allows 510
    assert api("PUT", "/v1/checks/unknown", json={"name": "x"}).status_code == 404


def test_openapi_lists_every_operation_and_not_the_control_api(emulator: Any) -> None:
    spec = requests.get(f"{emulator.url}/openapi.json", timeout=5).json()
    operations = {(method.upper(), path) for path, item in spec["paths"].items() for method in item}
    assert operations == {
        ("POST", "/v1/test-sessions/trigger"),
        ("GET", "/v1/test-sessions/{testSessionId}"),
        ("GET", "/v1/test-sessions/{testSessionId}/completion"),
        ("POST", "/v1/test-sessions/{testSessionId}/cancel"),
        ("GET", "/v1/test-session-error-groups/{id}"),
        ("GET", "/v1/error-groups/{id}"),
        ("POST", "/v1/root-cause-analyses/test-session-error-groups/{id}"),
        ("POST", "/v1/root-cause-analyses/error-groups/{id}"),
        ("GET", "/v1/root-cause-analyses/{id}"),
        ("POST", "/v1/status-pages/incidents/{incidentId}/incident-updates"),
        ("DELETE", "/v1/maintenance-windows/{id}"),
        ("DELETE", "/v1/maintenance-windows/{id}/maintenances/{maintenanceId}"),
        ("DELETE", "/v1/client-certificates/{id}"),
        ("POST", "/v1/dashboards"),
        ("PUT", "/v1/checks/{id}"),
        ("GET", "/v1/checks"),
        ("GET", "/v1/checks/{id}"),
        ("GET", "/v1/variables"),
    }
    trigger = spec["paths"]["/v1/test-sessions/trigger"]["post"]
    assert "TriggerRequest" in str(trigger["requestBody"]) and "ErrorBody" in str(trigger["responses"]["400"])
    assert "422" not in trigger["responses"]
    assert spec["paths"]["/v1/checks/{id}"]["put"]["deprecated"] is True
