"""Emulator auth, tenant isolation, rate limit and the error shape of every failure."""

from __future__ import annotations

from typing import Any

import requests
from emulator_ids import (
    OTHER_ACCOUNT,
    OTHER_ANALYSIS,
    OTHER_CHECK,
    OTHER_ERROR_GROUP,
    OTHER_KEY,
    READ_ONLY_KEY,
)

from runner.emulator.shell.hosts import CONTROL_HEADERS

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

SESSIONS = "/v1/test-sessions/trigger"
BODY = {"name": "ci", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke"]]}}


def test_missing_unknown_and_revoked_keys_are_401_bad_token(emulator: Any, api: Any) -> None:
    response = requests.get(f"{emulator.url}/v1/error-groups/x", timeout=5)
    assert response.status_code == 401
    body = response.json()
    assert body["statusCode"] == 401 and body["error"] == "Unauthorized" and body["message"] == "Bad Token"
    assert isinstance(body["attributes"], dict)
    assert api("GET", "/v1/error-groups/x", key="tsk_not_a_real_key").status_code == 401
    response = requests.get(
        f"{emulator.url}/v1/error-groups/x", headers={"Authorization": "Basic abc"}, timeout=5
    )
    assert response.status_code == 401
    revoke = requests.post(
        f"{emulator.url}/_emulator/keys/revoke",
        headers=CONTROL_HEADERS,
        json={"key": READ_ONLY_KEY},
        timeout=5,
    )
    assert revoke.status_code == 204
    assert api("GET", "/v1/error-groups/x", key=READ_ONLY_KEY).status_code == 401
    assert "tsk_" not in api("GET", "/v1/error-groups/x", key=READ_ONLY_KEY).text  # the key is not echoed


def test_account_header_missing_or_foreign_is_403(emulator: Any) -> None:
    auth = {"Authorization": f"Bearer {emulator.api_key}"}
    response = requests.post(emulator.url + SESSIONS, json=BODY, headers=auth, timeout=5)
    assert response.status_code == 403 and response.json()["error"] == "Forbidden"
    foreign = {**auth, "x-service-account": OTHER_ACCOUNT}  # header names are case-insensitive
    assert requests.post(emulator.url + SESSIONS, json=BODY, headers=foreign, timeout=5).status_code == 403


def test_read_only_key_reads_but_cannot_write(api: Any, emulator: Any) -> None:
    session = api("POST", SESSIONS, json=BODY).json()
    path = f"/v1/test-sessions/{session['testSessionId']}"
    assert api("GET", path, key=READ_ONLY_KEY).status_code == 200
    for method, write in (
        ("POST", SESSIONS),
        ("POST", f"{path}/cancel"),
        ("DELETE", "/v1/client-certificates/cert-3001"),
        ("PUT", "/v1/checks/0b9a3c4d-1111-4a5b-8c6d-000000000001"),
    ):
        response = api(method, write, key=READ_ONLY_KEY, json={})
        assert response.status_code == 403, (method, write)
        assert response.json()["message"].endswith("read-only")
    assert emulator.backend.stats()["sessionsTotal"] == 1


def test_resources_of_another_account_are_404(api: Any) -> None:
    other = api("POST", SESSIONS, key=OTHER_KEY, account=OTHER_ACCOUNT, json=BODY).json()
    assert other["results"][0]["checkId"] == OTHER_CHECK
    for method, path in (
        ("GET", f"/v1/test-sessions/{other['testSessionId']}"),
        ("GET", f"/v1/test-sessions/{other['testSessionId']}/completion?maxWaitSeconds=1"),
        ("POST", f"/v1/test-sessions/{other['testSessionId']}/cancel"),
        ("GET", f"/v1/error-groups/{OTHER_ERROR_GROUP}"),
        ("POST", f"/v1/root-cause-analyses/error-groups/{OTHER_ERROR_GROUP}"),
        ("GET", f"/v1/root-cause-analyses/{OTHER_ANALYSIS}"),
        ("DELETE", "/v1/maintenance-windows/9001"),
        ("DELETE", "/v1/maintenance-windows/9001/maintenances/m-9"),
        ("DELETE", "/v1/client-certificates/cert-9001"),
        ("PUT", f"/v1/checks/{OTHER_CHECK}"),
    ):
        response = api(method, path, json={})
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["error"] == "Not Found"
    update = api("POST", "/v1/status-pages/incidents/inc-9001/incident-updates", json={"description": "x"})
    assert update.status_code == 404
    # The other account still sees its own resources.
    own = api("GET", f"/v1/error-groups/{OTHER_ERROR_GROUP}", key=OTHER_KEY, account=OTHER_ACCOUNT)
    assert own.status_code == 200


def test_rate_limit_429_with_retry_after(emulator: Any, api: Any) -> None:
    patch = requests.patch(
        f"{emulator.url}/_emulator/settings",
        headers=CONTROL_HEADERS,
        json={"rateLimit": {"limit": 3}},
        timeout=5,
    )
    assert patch.status_code == 200 and patch.json()["rateLimit"]["limit"] == 3
    statuses = [api("GET", "/v1/error-groups/none").status_code for _ in range(3)]
    assert statuses == [404, 404, 404]
    response = api("GET", "/v1/error-groups/none")
    assert response.status_code == 429
    body = response.json()
    assert body["error"] == "Too Many Requests"
    assert body["attributes"]["limit"] == 3 and body["attributes"]["windowSeconds"] == 60
    assert 1 <= body["attributes"]["retryAfterSeconds"] <= 60
    assert response.headers["Retry-After"] == str(body["attributes"]["retryAfterSeconds"])
    # Per key: another account's key is not limited by this one's traffic; control routes never are.
    assert api("GET", "/v1/error-groups/none", key=OTHER_KEY, account=OTHER_ACCOUNT).status_code == 404
    for _ in range(5):
        assert (
            requests.get(f"{emulator.url}/_emulator/stats", headers=CONTROL_HEADERS, timeout=5).status_code
            == 200
        )
    stats = emulator.backend.stats()
    assert stats["rateLimited"] == 1 and stats["requests"]["get_error_group"] == {"404": 4, "429": 1}


def test_unknown_routes_methods_and_errors_share_the_error_shape(emulator: Any, api: Any) -> None:
    response = api("GET", "/v1/nothing-here")
    assert response.status_code == 404 and response.json() == {
        "statusCode": 404,
        "error": "Not Found",
        "message": "Not Found",
    }
    response = api("DELETE", "/v1/dashboards")
    assert response.status_code == 405 and response.json()["error"] == "Method Not Allowed"


def test_injected_fault_reaches_the_client_and_is_counted(emulator: Any, api: Any) -> None:
    fault = [{"route": "get_error_group", "kind": "status", "status": 503, "count": 1}]
    assert (
        requests.post(
            f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, json=fault, timeout=5
        ).status_code
        == 200
    )
    assert (
        len(requests.get(f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, timeout=5).json()) == 1
    )
    assert api("GET", "/v1/error-groups/none").status_code == 503
    assert api("GET", "/v1/error-groups/none").status_code == 404
    assert (
        requests.delete(f"{emulator.url}/_emulator/faults", headers=CONTROL_HEADERS, timeout=5).status_code
        == 204
    )
    assert emulator.backend.stats()["requests"]["get_error_group"] == {"503": 1, "404": 1}
    bad = requests.post(
        f"{emulator.url}/_emulator/faults",
        headers=CONTROL_HEADERS,
        json=[{"route": "nope", "kind": "status"}],
        timeout=5,
    )
    assert bad.status_code == 400 and "route" in bad.json()["message"]
