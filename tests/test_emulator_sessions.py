"""Emulator test sessions over real HTTP: outcomes, retries, environment rules, long poll, cancel."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

import pytest
import requests
from conftest import never_ending_world
from emulator_ids import ACCOUNT, BANNER, CHECKOUT, HOMEPAGE, LEGACY, PAYMENTS, PROFILE, SEARCH

from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models import STILL_RUNNING_MESSAGE, TestSession

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True


def trigger(api: Any, **body: Any) -> dict[str, Any]:
    response = api(
        "POST", "/v1/test-sessions/trigger", json={"name": "ci", "runLocation": "eu-west-1", **body}
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def complete(api: Any, session_id: str) -> dict[str, Any]:
    response = api("GET", f"/v1/test-sessions/{session_id}/completion?maxWaitSeconds=10")
    assert response.status_code == 200, response.text
    return dict(response.json())


def by_check(session: dict[str, Any], result_type: str = "FINAL") -> dict[str, dict[str, Any]]:
    return {r["checkId"]: r for r in session["results"] if r["resultType"] == result_type}


def test_all_outcomes_end_in_their_verdicts(api: Any, emulator: Any) -> None:
    started = trigger(api, target={"matchTags": [["all-outcomes"]]})
    assert started["status"] == "RUNNING" and started["stoppedAt"] is None
    assert {r["status"] for r in started["results"]} == {"RUNNING"}

    done = complete(api, started["testSessionId"])
    TestSession.model_validate(done)
    assert done["status"] == "FAILED" and done["stoppedAt"]
    final = by_check(done)
    assert set(final) == {HOMEPAGE, CHECKOUT, SEARCH, PAYMENTS, PROFILE}
    assert final[HOMEPAGE]["status"] == "PASSED" and not final[HOMEPAGE]["isDegraded"]
    assert final[SEARCH]["status"] == "PASSED" and final[SEARCH]["isDegraded"]
    assert final[CHECKOUT]["status"] == "FAILED" and final[CHECKOUT]["hasFailures"]
    assert final[PROFILE]["status"] == "FAILED" and final[PROFILE]["hasErrors"]
    assert final[PAYMENTS]["status"] == "FAILED"  # flaky, and no retry strategy was given
    assert final[HOMEPAGE]["responseTime"] == 2000
    failed_groups = {g for r in final.values() for g in r["errorGroupIds"]}
    assert len(failed_groups) == 3 and set(done["errorGroupIds"]) == failed_groups
    link = final[CHECKOUT]["testSessionResultLink"]
    assert link.startswith(emulator.url + "/sessions/")
    page = requests.get(link, timeout=5)
    assert page.status_code == 200 and "Checkout flow" in page.text


def test_passing_session_and_metadata(api: Any) -> None:
    metadata = {"environment": "staging", "branchName": "main", "github": {"reporting": True, "sha": "abc"}}
    done = complete(api, trigger(api, target={"matchTags": [["smoke"]]}, metadata=metadata)["testSessionId"])
    assert done["status"] == "PASSED" and done["errorGroupIds"] == []
    assert done["metadata"]["branchName"] == "main" and done["metadata"]["github"]["sha"] == "abc"
    assert len(done["results"]) == 2  # the deactivated smoke check is left out
    assert done["timeElapsed"] == 3000


def test_flaky_check_passes_on_retry_only_for_listed_error_classes(api: Any) -> None:
    retry = {"type": "FIXED", "baseBackoffSeconds": 1, "onlyOn": ["NETWORK_ERROR"], "maxRetries": 3}
    done = complete(
        api, trigger(api, target={"matchTags": [["all-outcomes"]]}, retryStrategy=retry)["testSessionId"]
    )
    attempts = by_check(done, "ATTEMPT")
    assert set(attempts) == {PAYMENTS}  # the assertion failure and the script error are not retried
    assert attempts[PAYMENTS]["status"] == "FAILED" and attempts[PAYMENTS]["errorGroupIds"]
    final = by_check(done)
    assert final[PAYMENTS]["status"] == "PASSED"
    assert final[PAYMENTS]["testSessionResultId"] != attempts[PAYMENTS]["testSessionResultId"]
    assert done["status"] == "FAILED"  # checkout still fails


def test_retries_are_bounded_by_max_retries_single_retry_and_duration(api: Any, emulator: Any) -> None:
    emulator.backend.update_settings(speed=200)

    def attempts(retry: dict[str, Any]) -> list[dict[str, Any]]:
        session = trigger(api, target={"checkId": [CHECKOUT]}, retryStrategy=retry)
        return complete(api, session["testSessionId"])["results"]

    results = attempts({"type": "FIXED", "baseBackoffSeconds": 0, "maxRetries": 2})
    assert [r["resultType"] for r in results] == ["ATTEMPT", "ATTEMPT", "FINAL"]
    assert all(r["status"] == "FAILED" for r in results)
    assert len(attempts({"type": "SINGLE_RETRY", "baseBackoffSeconds": 0})) == 2
    # Checkout takes 4 s: a retry would end after 8 s, beyond maxDurationSeconds.
    assert (
        len(attempts({"type": "FIXED", "baseBackoffSeconds": 0, "maxRetries": 5, "maxDurationSeconds": 7}))
        == 1
    )


def test_exponential_backoff_spaces_attempts(api: Any, emulator: Any) -> None:
    emulator.backend.update_settings(speed=200)
    retry = {"type": "EXPONENTIAL", "baseBackoffSeconds": 2, "maxRetries": 3}
    done = complete(api, trigger(api, target={"checkId": [CHECKOUT]}, retryStrategy=retry)["testSessionId"])
    starts = [datetime.fromisoformat(r["startedAt"].replace("Z", "+00:00")) for r in done["results"]]
    offsets = [round((s - starts[0]).total_seconds()) for s in starts]
    # 4 s runs with 2, 4 and 8 s between them: production's base ** n (constructs/retry-strategy.mdx).
    assert offsets == [0, 6, 14, 26]


def test_environment_variables_change_behaviour(api: Any) -> None:
    env = [
        {"key": "CHECKOUT_FIXED", "value": "true"},
        {"key": "BANNER_ENABLED", "value": "false", "secret": True},
    ]
    target = {"checkId": [CHECKOUT, BANNER]}
    final = by_check(complete(api, trigger(api, target=target, environmentVariables=env)["testSessionId"]))
    assert final[CHECKOUT]["status"] == "PASSED"
    assert final[BANNER]["status"] == "FAILED" and "#promo" in final[BANNER]["errorMessage"]
    final = by_check(complete(api, trigger(api, target=target)["testSessionId"]))
    assert final[CHECKOUT]["status"] == "FAILED" and final[BANNER]["status"] == "PASSED"


def test_target_filters(api: Any) -> None:
    both = trigger(api, target={"matchTags": [["smoke"]], "checkId": [HOMEPAGE, CHECKOUT]})
    assert [r["checkId"] for r in both["results"]] == [HOMEPAGE]
    groups = trigger(api, target={"matchTags": [["smoke", "api"], ["checkout"]]})
    assert len(groups["results"]) == 3
    assert len(trigger(api)["results"]) == 8  # everything active, the hanging check included
    response = api(
        "POST",
        "/v1/test-sessions/trigger",
        json={"name": "x", "runLocation": "eu-west-1", "target": {"checkId": [LEGACY]}},
    )
    assert response.status_code == 403 and response.json()["errorCode"] == "ERR_NO_MATCHING_CHECKS"
    allowed = trigger(api, target={"checkId": [LEGACY], "allowDeactivated": True})
    assert [r["checkId"] for r in allowed["results"]] == [LEGACY]


def test_trigger_errors(api: Any) -> None:
    response = api("POST", "/v1/test-sessions/trigger", json={"name": "x", "runLocation": "mars-1"})
    assert response.status_code == 400 and "runLocation" in response.json()["message"]
    response = api(
        "POST",
        "/v1/test-sessions/trigger",
        json={"name": "x", "runLocation": "eu-west-1", "target": {"matchTags": [["nope"]]}},
    )
    # As production answers it (the service's own CLI reads exactly this errorCode).
    assert response.status_code == 403
    assert response.json() == {
        "statusCode": 403,
        "error": "Forbidden",
        "message": "No checks matched the target",
        "errorCode": "ERR_NO_MATCHING_CHECKS",
    }


def test_validation_errors_are_400_with_field_and_rule(api: Any) -> None:
    response = api("POST", "/v1/test-sessions/trigger", json={"name": ""})
    body = response.json()
    assert response.status_code == 400 and body["error"] == "Bad Request" and body["statusCode"] == 400
    assert "name:" in body["message"] and "runLocation: required field is missing" in body["message"]
    assert "detail" not in body
    too_many = [{"key": f"K{i}", "value": "v"} for i in range(51)]
    response = api(
        "POST",
        "/v1/test-sessions/trigger",
        json={"name": "x", "runLocation": "eu-west-1", "environmentVariables": too_many},
    )
    assert response.status_code == 400 and "environmentVariables" in response.json()["message"]
    response = api(
        "POST", "/v1/test-sessions/trigger", data="{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["message"] == "body: invalid JSON"
    session = trigger(api, target={"matchTags": [["smoke"]]})
    response = api("GET", f"/v1/test-sessions/{session['testSessionId']}/completion?maxWaitSeconds=31")
    assert response.status_code == 400 and "maxWaitSeconds" in response.json()["message"]


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_long_poll_answers_408_then_200_promptly_after_the_end(world_factory: Any) -> None:
    emu = world_factory(speed=2)  # the slowest smoke check runs 3 simulated seconds: 1.5 s of real time
    headers = {"Authorization": f"Bearer {emu.api_key}", "X-Service-Account": emu.account_id}
    body = {"name": "x", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke"]]}}
    started = time.monotonic()
    session = requests.post(
        f"{emu.url}/v1/test-sessions/trigger", json=body, headers=headers, timeout=5
    ).json()
    triggered = time.monotonic()
    url = f"{emu.url}/v1/test-sessions/{session['testSessionId']}/completion?maxWaitSeconds=1"
    response = requests.get(url, headers=headers, timeout=5)
    assert response.status_code == 408
    assert response.json() == {
        "statusCode": 408,
        "error": "Request Timeout",
        "message": STILL_RUNNING_MESSAGE,
    }
    response = requests.get(url, headers=headers, timeout=5)
    answered = time.monotonic()
    assert response.status_code == 200 and response.json()["status"] == "PASSED"
    # The session ends 1.5 s after the trigger was handled; the answer follows at once: well before
    # the 2 s a poll that wakes only at its own maxWaitSeconds would take (0.25 s for the machine).
    assert answered - started > 1.49 and answered - triggered < 1.5 + 0.25


def test_hanging_session_408s_until_cancelled_and_cancel_wakes_the_poll(api: Any) -> None:
    session = trigger(api, target={"matchTags": [["hang"]]})
    path = f"/v1/test-sessions/{session['testSessionId']}"
    assert api("GET", f"{path}/completion?maxWaitSeconds=1").status_code == 408
    answers: list[Any] = []
    waiter = threading.Thread(
        target=lambda: answers.append(api("GET", f"{path}/completion?maxWaitSeconds=20"))
    )
    waiter.start()
    time.sleep(0.2)
    cancelled_at = time.monotonic()
    assert api("POST", f"{path}/cancel").status_code == 204
    waiter.join(10)
    assert time.monotonic() - cancelled_at < 10  # woken by the cancel, not the 20 s wait's end
    body = answers[0].json()
    assert answers[0].status_code == 200 and body["status"] == "CANCELLED" and body["stoppedAt"]
    assert body["results"][0]["status"] == "CANCELLED" and body["results"][0]["aborted"]
    assert api("POST", f"{path}/cancel").status_code == 204  # cancelling again is harmless
    assert api("GET", path).json()["status"] == "CANCELLED"


def test_cancel_keeps_finished_results(api: Any, emulator: Any) -> None:
    session = trigger(api, target={"matchTags": [["smoke"], ["hang"]]})
    path = f"/v1/test-sessions/{session['testSessionId']}"
    emulator.backend.advance(5)  # the smoke checks (2-3 simulated s) are done; the hanging one never is
    api("POST", f"{path}/cancel")
    statuses = sorted(r["status"] for r in api("GET", path).json()["results"])
    assert statuses == ["CANCELLED", "PASSED", "PASSED"]


def test_clock_advance_finishes_a_session(world_factory: Any) -> None:
    emu = world_factory(speed=1)
    # Bounds, not measurements: a loaded machine once took over 5 s for the trigger (at load 16).
    wait = 30
    headers = {"Authorization": f"Bearer {emu.api_key}", "X-Service-Account": emu.account_id}
    body = {"name": "x", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke"]]}}
    session = requests.post(
        f"{emu.url}/v1/test-sessions/trigger", json=body, headers=headers, timeout=wait
    ).json()
    assert (
        requests.post(
            f"{emu.url}/_emulator/clock/advance", headers=CONTROL_HEADERS, json={"seconds": 10}, timeout=wait
        ).status_code
        == 200
    )
    got = requests.get(
        f"{emu.url}/v1/test-sessions/{session['testSessionId']}", headers=headers, timeout=wait
    )
    assert got.json()["status"] == "PASSED"


def test_same_error_in_a_later_session_lands_in_the_same_group(api: Any, emulator: Any) -> None:
    first = complete(api, trigger(api, target={"checkId": [CHECKOUT]})["testSessionId"])
    group_id = first["errorGroupIds"][0]
    group = api("GET", f"/v1/test-session-error-groups/{group_id}").json()
    assert group["checkId"] == CHECKOUT and "503" in group["rawErrorMessage"] and group["errorHash"]
    assert group["cleanedErrorMessage"] and group["rootCauseAnalyses"] == []
    second = complete(api, trigger(api, target={"checkId": [CHECKOUT]})["testSessionId"])
    assert second["errorGroupIds"] == [group_id]
    again = api("GET", f"/v1/test-session-error-groups/{group_id}").json()
    assert again["firstSeen"] == group["firstSeen"] and again["lastSeen"] > group["lastSeen"]
    assert emulator.backend.stats()["sessionsCreated"] == {ACCOUNT: 2}


def test_snapshot_is_a_copy_of_the_state(api: Any, emulator: Any) -> None:
    started = trigger(api, target={"checkId": [HOMEPAGE]}, metadata={"environment": "staging"})
    state = emulator.backend.snapshot()
    record = state.sessions[started["testSessionId"]]
    assert (record.account_id, record.location, record.check_ids) == (ACCOUNT, "eu-west-1", (HOMEPAGE,))
    assert record.metadata == {"environment": "staging"} and record.end is not None
    record.metadata["environment"] = "changed"
    state.sessions.clear()
    again = emulator.backend.snapshot()
    assert again.sessions[started["testSessionId"]].metadata == {"environment": "staging"}
    assert api("GET", f"/v1/test-sessions/{started['testSessionId']}").json()["metadata"] == {
        "environment": "staging"
    }
