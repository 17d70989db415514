"""The emulator under load, on 127.0.0.1 only, with bounded loops: tenant isolation on every route, a
read-only key on every write route, the rate limit under a concurrent flood, and twenty concurrent
`testsession run` executions against one emulator."""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import never_ending_world
from emulator_ids import (
    ACCOUNT,
    CHECK_ERROR_GROUP,
    CHECK_ERROR_GROUP_ANALYSIS,
    HOMEPAGE,
    OTHER_ACCOUNT,
    OTHER_ANALYSIS,
    OTHER_CHECK,
    OTHER_ERROR_GROUP,
    OTHER_KEY,
    READ_ONLY_KEY,
)

from runner.cli.main import main
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models.operations import NAMES, OPERATIONS, find

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

TRIGGER = "/v1/test-sessions/trigger"


def route_name(method: str, path: str) -> str | None:
    op = find(method, path)
    return op.name if op else None


def session_for(api: Any, key: str | None = None, account: str | None = None, tags: str = "smoke") -> Any:
    body = {"name": "load", "runLocation": "eu-west-1", "target": {"matchTags": [[tags]]}}
    response = api("POST", TRIGGER, key=key, account=account, json=body)
    assert response.status_code == 201, response.text
    return response.json()


def finished(api: Any, session_id: str, key: str | None = None, account: str | None = None) -> Any:
    path = f"/v1/test-sessions/{session_id}/completion?maxWaitSeconds=5"
    response = api("GET", path, key=key, account=account)
    assert response.status_code == 200, response.text
    return response.json()


def other_account_resources(api: Any) -> dict[str, str]:
    """Ids owned by the other account: a finished session with a test-session error group and analysis."""
    other = {"key": OTHER_KEY, "account": OTHER_ACCOUNT}
    session = finished(api, session_for(api, **other)["testSessionId"], **other)
    group = session["errorGroupIds"][0]
    analysis = api("POST", f"/v1/root-cause-analyses/test-session-error-groups/{group}", **other, json={})
    assert analysis.status_code == 202, analysis.text
    running = session_for(api, **other)  # for cancel: a session that is still there to cancel
    return {
        "session": session["testSessionId"],
        "running": running["testSessionId"],
        "group": group,
        "analysis": analysis.json()["id"],
    }


def cross_account_calls(ids: dict[str, str]) -> dict[str, list[tuple[str, str, Any]]]:
    """Per operation of OPERATIONS: requests naming the other account's resources, with valid bodies."""
    return {
        "trigger": [
            ("POST", TRIGGER, {"name": "x", "runLocation": "eu-west-1", "target": {"checkId": [OTHER_CHECK]}})
        ],
        "get_session": [("GET", f"/v1/test-sessions/{ids['session']}", None)],
        "completion": [("GET", f"/v1/test-sessions/{ids['running']}/completion?maxWaitSeconds=1", None)],
        "cancel": [("POST", f"/v1/test-sessions/{ids['running']}/cancel", None)],
        "get_test_session_error_group": [("GET", f"/v1/test-session-error-groups/{ids['group']}", None)],
        "get_error_group": [("GET", f"/v1/error-groups/{OTHER_ERROR_GROUP}", None)],
        "create_test_session_error_group_analysis": [
            ("POST", f"/v1/root-cause-analyses/test-session-error-groups/{ids['group']}", {}),
        ],
        "create_error_group_analysis": [
            ("POST", f"/v1/root-cause-analyses/error-groups/{OTHER_ERROR_GROUP}", {}),
        ],
        "get_analysis": [
            ("GET", f"/v1/root-cause-analyses/{OTHER_ANALYSIS}", None),
            ("GET", f"/v1/root-cause-analyses/{ids['analysis']}", None),
        ],
        "incident_update": [
            ("POST", "/v1/status-pages/incidents/inc-9001/incident-updates", {"description": "x"})
        ],
        "delete_maintenance_window": [("DELETE", "/v1/maintenance-windows/9001", None)],
        "delete_maintenance": [("DELETE", "/v1/maintenance-windows/9001/maintenances/m-9", None)],
        "delete_client_certificate": [("DELETE", "/v1/client-certificates/cert-9001", None)],
        "update_check": [("PUT", f"/v1/checks/{OTHER_CHECK}", {"name": "taken over"})],
        "get_check": [("GET", f"/v1/checks/{OTHER_CHECK}", None)],
    }


# create_dashboard names no resource: dashboards' customUrl/customDomain are one namespace for all
# accounts (a taken name is 409 for everyone), so there is no id of the other account to refuse.
# list_checks and list_variables name none either: they list the caller's own (checked below: never
# the other's).
NO_OWNED_ID = {"create_dashboard", "list_checks", "list_variables"}


def test_every_route_refuses_the_other_accounts_ids(api: Any, emulator: Any) -> None:
    ids = other_account_resources(api)
    calls = cross_account_calls(ids)
    assert set(calls) | NO_OWNED_ID == set(NAMES), "an operation has no isolation case here"
    checked = set()
    for route, requests_ in calls.items():
        for method, path, body in requests_:
            assert route_name(method, path.split("?")[0]) == route, (route, path)
            response = api(method, path, json=body)
            # The trigger finds none of its checks: production's no-match answer, 403 with its code.
            expected = (403, "Forbidden") if route == "trigger" else (404, "Not Found")
            assert response.status_code == expected[0], (route, response.status_code, response.text)
            assert response.json()["error"] == expected[1]
            assert OTHER_ACCOUNT not in response.text
            checked.add(route)
    assert checked == set(NAMES) - NO_OWNED_ID  # every operation that names an id was refused
    listed = api("GET", "/v1/checks?limit=100")
    assert listed.status_code == 200 and listed.json()
    assert OTHER_CHECK not in listed.text and OTHER_ACCOUNT not in listed.text
    # Nothing of the other account changed: its running session is not cancelled, its resources remain.
    other = {"key": OTHER_KEY, "account": OTHER_ACCOUNT}
    assert api("GET", f"/v1/test-sessions/{ids['running']}", **other).json()["status"] != "CANCELLED"
    assert api("DELETE", "/v1/maintenance-windows/9001/maintenances/m-9", **other).status_code == 204
    assert api("DELETE", "/v1/client-certificates/cert-9001", **other).status_code == 204
    state = emulator.backend.snapshot()
    assert state.incident_updates == []
    assert state.checks[OTHER_ACCOUNT][OTHER_CHECK].name == "Other team API"
    assert emulator.backend.stats()["sessionsCreated"] == {OTHER_ACCOUNT: 2}


def test_read_only_key_is_refused_on_every_write_route(api: Any, emulator: Any) -> None:
    own = session_for(api, tags="hang")  # still running, so a cancel would change it
    write_calls = {
        "trigger": [("POST", TRIGGER, {"name": "x", "runLocation": "eu-west-1"})],
        "cancel": [("POST", f"/v1/test-sessions/{own['testSessionId']}/cancel", None)],
        "create_error_group_analysis": [
            ("POST", f"/v1/root-cause-analyses/error-groups/{CHECK_ERROR_GROUP}", {"userContext": "x"}),
        ],
        "create_test_session_error_group_analysis": [
            ("POST", f"/v1/root-cause-analyses/test-session-error-groups/{CHECK_ERROR_GROUP}", {}),
        ],
        "incident_update": [
            ("POST", "/v1/status-pages/incidents/inc-1001/incident-updates", {"description": "x"})
        ],
        "delete_maintenance_window": [("DELETE", "/v1/maintenance-windows/2002", None)],
        "delete_maintenance": [("DELETE", "/v1/maintenance-windows/2001/maintenances/m-1", None)],
        "delete_client_certificate": [("DELETE", "/v1/client-certificates/cert-3001", None)],
        "create_dashboard": [("POST", "/v1/dashboards", {"header": "ro", "customUrl": "ro-dash"})],
        "update_check": [("PUT", f"/v1/checks/{HOMEPAGE}", {"name": "renamed"})],
    }
    writes = {op.name for op in OPERATIONS if op.method in ("POST", "PUT", "DELETE", "PATCH")}
    assert set(write_calls) == writes, "a write operation has no read-only case here"
    before = emulator.backend.stats()
    for route, calls in write_calls.items():
        for method, path, body in calls:
            assert route_name(method, path) == route
            response = api(method, path, key=READ_ONLY_KEY, json=body)
            assert response.status_code == 403, (route, response.status_code, response.text)
            assert response.json()["message"].endswith("read-only")
    # Reads still work with it, and nothing was written.
    assert api("GET", f"/v1/root-cause-analyses/{CHECK_ERROR_GROUP_ANALYSIS}", key=READ_ONLY_KEY).ok
    after = emulator.backend.stats()
    assert after["sessionsTotal"] == before["sessionsTotal"] == 1
    assert after["analysesCreated"] == before["analysesCreated"]
    state = emulator.backend.snapshot()
    assert state.incident_updates == [] and state.dashboards == {}
    assert api("GET", f"/v1/test-sessions/{own['testSessionId']}").json()["status"] == "RUNNING"
    # The same writes with the read-write key succeed: the 403s were the role, not missing resources.
    assert api("DELETE", "/v1/maintenance-windows/2001/maintenances/m-1").status_code == 204
    assert api("DELETE", "/v1/client-certificates/cert-3001").status_code == 204
    assert api("POST", f"/v1/test-sessions/{own['testSessionId']}/cancel").status_code == 204


def test_rate_limit_holds_under_a_concurrent_flood(emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    limit, window, total, threads = 50, 3, 200, 16
    # The window's clock is the test's: the flood is judged however long a loaded machine takes to
    # send it (it had to fit in one real window), and the window passes without sleeping through it.
    now = [1000.0]
    monkeypatch.setattr(emulator.backend._keys, "clock", lambda: now[0])
    patch = requests.patch(
        f"{emulator.url}/_emulator/settings",
        headers=CONTROL_HEADERS,
        json={"rateLimit": {"limit": limit, "windowSeconds": window}},
        timeout=5,
    )
    assert patch.status_code == 200
    headers = {"Authorization": f"Bearer {emulator.api_key}", "X-Service-Account": ACCOUNT}
    url = f"{emulator.url}/v1/error-groups/{CHECK_ERROR_GROUP}"
    local = threading.local()

    def one(_: int) -> tuple[int, str | None]:
        if not hasattr(local, "session"):
            local.session = requests.Session()
        response = local.session.get(url, headers=headers, timeout=30)
        return response.status_code, response.headers.get("Retry-After")

    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(one, range(total)))
    statuses = Counter(status for status, _ in answers)
    assert statuses == {200: limit, 429: total - limit}
    # The clock stood still: each 429 says the whole window is left.
    assert {retry_after for status, retry_after in answers if status == 429} == {str(window)}
    assert emulator.backend.stats()["rateLimited"] == total - limit
    # Another key has its own budget; and once the window passes, the key may call again.
    other = {"Authorization": f"Bearer {OTHER_KEY}", "X-Service-Account": OTHER_ACCOUNT}
    assert requests.get(f"{emulator.url}/v1/error-groups/{OTHER_ERROR_GROUP}", headers=other, timeout=5).ok
    now[0] += window - 0.5
    assert requests.get(url, headers=headers, timeout=5).status_code == 429  # still inside the window
    now[0] += 0.5
    assert requests.get(url, headers=headers, timeout=5).status_code == 200


def test_twenty_concurrent_runs_each_get_their_own_session_and_exit_code(
    emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no spec file, no git repository
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for name in ("GITHUB_ACTIONS", "GITLAB_CI", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TESTSESSION_API_KEY", emulator.api_key)
    # Per run: (tag, extra flags, expected exit code). smoke passes, checkout fails, hang times out.
    plans = [("smoke", [], 0), ("checkout", [], 1), ("smoke", [], 0), ("hang", ["--timeout", "1"], 3)]
    runs = [plans[i % len(plans)] for i in range(20)]

    def run(index: int) -> int:
        tag, extra, _ = runs[index]
        argv = [
            "run", "--location", "eu-west-1", "--tag", tag, "--name", f"run-{index}", *extra,
            "--junit", str(tmp_path / f"junit-{index}.xml"), "--markdown", "",
            "--json", str(tmp_path / f"results-{index}.json"),
            "--base-url", emulator.url, "--account-id", emulator.account_id,
        ]  # fmt: skip
        return main(argv)

    with ThreadPoolExecutor(20) as pool:
        codes = list(pool.map(run, range(20)))
    capsys.readouterr()
    assert codes == [expected for _, _, expected in runs]
    session_ids = set()
    for index, (_, _, expected) in enumerate(runs):
        results = json.loads((tmp_path / f"results-{index}.json").read_text(encoding="utf-8"))
        assert results["exitCode"] == expected
        (session,) = results["sessions"]
        assert session["name"] == f"run-{index}"
        session_ids.add(session["testSessionId"])
        if expected == 3:
            assert session["status"] == "CANCELLED"
    assert len(session_ids) == 20
    stats = emulator.backend.stats()
    assert stats["sessionsTotal"] == 20 and stats["sessionsCreated"] == {emulator.account_id: 20}
    assert stats["rateLimited"] == 0
    assert set(emulator.backend.snapshot().sessions) == session_ids
