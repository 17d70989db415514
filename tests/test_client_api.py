"""ApiClient end to end against the emulator: every method, every error status, client-side limits."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from conftest import never_ending_world
from helpers import emulator_stats, sessions_created
from hostile import SESSION_A, HostileServer, json_answer, session_json

from runner.client import ApiClient
from runner.core.errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InvalidRequestError,
    NoMatchingChecksError,
    NotFoundError,
    PaymentRequiredError,
    PermissionDeniedError,
    RateLimitedError,
    exit_code_for,
)
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.models import (
    CheckUpdate,
    DashboardRequest,
    IncidentUpdateRequest,
    Target,
    TestSession,
    TriggerRequest,
)

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

# Ids of the default world (runner/emulator/world.yml).
READ_ONLY_KEY = "tsk_demo_readonly_8e2c4a6f"
OTHER_ACCOUNT = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
OTHER_KEY = "tsk_other_team_6d4b2f8a"
CHECKOUT = "0b9a3c4d-1111-4a5b-8c6d-000000000003"
HOMEPAGE = "0b9a3c4d-1111-4a5b-8c6d-000000000001"
CHECK_ERROR_GROUP = "7d1e2f3a-2222-4b5c-9d6e-000000000001"
CHECK_ERROR_GROUP_ANALYSIS = "9e8d7c6b-3333-4c5d-8e9f-000000000001"
OTHER_ERROR_GROUP = "7d1e2f3a-2222-4b5c-9d6e-000000000009"


@pytest.fixture
def client(emulator: Emulator) -> Iterator[ApiClient]:
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, backoff_base=0.01) as api_client:
        yield api_client


@pytest.fixture
def emulator(module_emulator: Emulator) -> Emulator:
    """Overrides conftest's: one server for the module (fast), fresh state for each test."""
    module_emulator.backend.reset()
    return module_emulator


def trigger_checkout(client: ApiClient) -> TestSession:
    return client.trigger(
        TriggerRequest(name="checkout", runLocation="eu-west-1", target=Target(checkId=[CHECKOUT]))
    )


def wait_final(client: ApiClient, session_id: str) -> TestSession:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        final = client.await_completion(session_id, max_wait_seconds=5)
        if final is not None:
            return final
    raise AssertionError("session did not finish")


# --- every method, success ---------------------------------------------------------------------


def test_session_lifecycle_trigger_get_await(client: ApiClient, emulator: Emulator) -> None:
    started = client.trigger(
        {"name": "smoke", "runLocation": "eu-west-1", "target": {"matchTags": [["smoke", "api"]]}}
    )
    assert started.status == "RUNNING"
    assert started.name == "smoke"
    assert {r.checkId for r in started.results} == {HOMEPAGE, "0b9a3c4d-1111-4a5b-8c6d-000000000002"}

    again = client.get_session(started.testSessionId)
    assert again.testSessionId == started.testSessionId
    links = {r.testSessionResultId: r.testSessionResultLink for r in started.results}
    assert all(links[r.testSessionResultId] == r.testSessionResultLink for r in again.results)

    final = wait_final(client, started.testSessionId)
    assert final.status == "PASSED" and final.is_final and final.stoppedAt is not None
    assert sessions_created(emulator) == 1
    assert emulator_stats(emulator, client.request_count)["requestsTotal"] == client.request_count


def test_await_completion_returns_none_while_running_and_cancel_stops_it(
    client: ApiClient, emulator: Emulator
) -> None:
    session = client.trigger(
        {"name": "hang", "runLocation": "eu-west-1", "target": {"matchTags": [["hang"]]}}
    )
    assert client.await_completion(session.testSessionId, max_wait_seconds=1) is None
    assert emulator_stats(emulator, 2)["requests"]["completion"] == {"408": 1}

    assert client.cancel(session.testSessionId) is None
    cancelled = client.get_session(session.testSessionId)
    assert cancelled.status == "CANCELLED"
    assert client.await_completion(session.testSessionId, max_wait_seconds=1) is not None
    # Cancelling again is harmless (idempotent).
    client.cancel(session.testSessionId)


def test_error_groups_and_analyses(client: ApiClient) -> None:
    failed = wait_final(client, trigger_checkout(client).testSessionId)
    assert failed.status == "FAILED" and failed.errorGroupIds
    group = client.get_test_session_error_group(failed.errorGroupIds[0])
    assert group.id == failed.errorGroupIds[0]
    assert group.rawErrorMessage and "503" in group.rawErrorMessage
    assert group.checkId == CHECKOUT

    pending = client.create_test_session_error_group_analysis(group.id, user_context="deployed cart v2")
    assert pending.status == "PENDING" and not pending.is_completed
    deadline = time.monotonic() + 5
    analysis = client.get_analysis(pending.id)
    while not analysis.is_completed and time.monotonic() < deadline:
        time.sleep(0.05)
        analysis = client.get_analysis(pending.id)
    assert analysis.is_completed
    assert analysis.analysis is not None and analysis.analysis.rootCause
    assert analysis.errorGroupId == group.id

    check_group = client.get_error_group(CHECK_ERROR_GROUP)
    assert check_group.checkId == CHECKOUT
    assert [a.id for a in check_group.rootCauseAnalyses] == [CHECK_ERROR_GROUP_ANALYSIS]
    created = client.create_error_group_analysis(CHECK_ERROR_GROUP)
    assert created.status == "PENDING"
    assert client.get_error_group(CHECK_ERROR_GROUP).rootCauseAnalyses[0].id == created.id


def test_incident_update(client: ApiClient) -> None:
    update = client.add_incident_update(
        "inc-1001",
        IncidentUpdateRequest(description="Fix deployed", status="MONITORING", notifySubscribers=True),
    )
    assert update.id
    assert update.description == "Fix deployed"
    assert update.status == "MONITORING"
    assert update.notifySubscribers is True


def test_deletes(client: ApiClient, emulator: Emulator) -> None:
    assert client.delete_maintenance(window_id="2001", maintenance_id="m-1") is None
    assert client.delete_maintenance_window("2002") is None
    assert client.delete_client_certificate("cert-3001") is None
    with pytest.raises(NotFoundError):
        client.delete_maintenance_window("2002")
    with pytest.raises(NotFoundError):
        client.delete_maintenance("2001", "m-1")
    statuses = emulator_stats(emulator, client.request_count)["requests"]
    assert statuses["delete_maintenance"] == {"204": 1, "404": 1}
    assert statuses["delete_client_certificate"] == {"204": 1}


def test_dashboard_create_and_conflict(client: ApiClient) -> None:
    dashboard = client.create_dashboard(DashboardRequest(header="Release 42", customUrl="release-42"))
    assert dashboard.id and dashboard.customUrl == "release-42" and dashboard.header == "Release 42"
    with pytest.raises(ConflictError) as info:
        client.create_dashboard({"header": "Again", "customUrl": "release-42"})
    assert info.value.status == 409
    assert "customUrl" in info.value.message
    assert exit_code_for(info.value) == ExitCode.SERVICE


def test_update_check_warns_and_sends_auto_assign(client: ApiClient) -> None:
    with pytest.warns(DeprecationWarning, match=r"PUT /v1/checks/api/\{id\}.*PUT /v1/checks/browser/\{id\}"):
        check = client.update_check(
            HOMEPAGE,
            CheckUpdate(description="homepage", frequency=5, frequencyOffset=10, locations=["eu-west-1"]),
            auto_assign_alerts=False,
        )
    assert check.id == HOMEPAGE
    assert check.frequency == 5 and check.frequencyOffset == 10
    assert check.locations == ["eu-west-1"]
    assert (check.model_extra or {}).get("autoAssignAlerts") is False


def test_lenient_parsing_keeps_unknown_fields() -> None:
    """A service newer than this client: fields it does not name and a status it does not know, on
    the session and on a result, are kept (and dumped again), never fatal."""
    answer = session_json(SESSION_A, status="QUEUED_FOR_REVIEW", result_status="SKIPPED_BY_POLICY")
    answer["costCenter"] = {"team": "checkout", "budget": 12}
    answer["results"][0]["carbonGrams"] = 0.42
    with (
        HostileServer({("GET", f"/v1/test-sessions/{SESSION_A}"): json_answer(answer)}) as server,
        ApiClient(server.url, "tsk_lenient_0123", "acct", max_retries=0) as client,
    ):
        session = client.get_session(SESSION_A)
    assert session.status == "QUEUED_FOR_REVIEW"
    assert session.model_extra == {"costCenter": {"team": "checkout", "budget": 12}}
    (result,) = session.results
    assert result.status == "SKIPPED_BY_POLICY" and result.model_extra == {"carbonGrams": 0.42}
    dumped = session.model_dump(mode="json")
    assert dumped["costCenter"] == {"team": "checkout", "budget": 12}
    assert dumped["results"][0]["carbonGrams"] == 0.42


# --- error statuses ----------------------------------------------------------------------------


def assert_no_key(exc: BaseException, key: str) -> None:
    assert key not in str(exc)
    assert key not in repr(exc.args)


def test_401_bad_key(emulator: Emulator) -> None:
    with (
        ApiClient(emulator.url, "tsk_not_a_real_key_123", emulator.account_id) as bad,
        pytest.raises(AuthenticationError) as info,
    ):
        bad.get_session("whatever")
    exc = info.value
    assert (exc.status, exc.error, exc.message) == (401, "Unauthorized", "Bad Token")
    assert exc.method == "GET" and exc.path == "/v1/test-sessions/whatever"
    assert exit_code_for(exc) == ExitCode.SERVICE
    assert_no_key(exc, "tsk_not_a_real_key_123")
    assert bad.request_count == 1  # never retried


def test_403_read_only_key_and_foreign_account(emulator: Emulator) -> None:
    with ApiClient(emulator.url, READ_ONLY_KEY, emulator.account_id) as read_only:
        read_only.get_error_group(CHECK_ERROR_GROUP)  # reading is allowed
        with pytest.raises(PermissionDeniedError) as info:
            read_only.trigger({"name": "x", "runLocation": "eu-west-1"})
        assert info.value.status == 403 and "read-only" in info.value.message
        assert read_only.request_count == 2
    with ApiClient(emulator.url, emulator.api_key, OTHER_ACCOUNT) as foreign:
        with pytest.raises(PermissionDeniedError) as info:
            foreign.get_error_group(CHECK_ERROR_GROUP)
        assert exit_code_for(info.value) == ExitCode.SERVICE
        assert_no_key(info.value, emulator.api_key)
    assert sessions_created(emulator) == 0


def test_404_unknown_and_other_accounts_ids(client: ApiClient) -> None:
    with pytest.raises(NotFoundError) as info:
        client.get_session("00000000-0000-4000-8000-000000000000")
    assert info.value.status == 404 and info.value.error == "Not Found"
    with pytest.raises(NotFoundError):
        client.get_error_group(OTHER_ERROR_GROUP)  # exists, but in another account
    # No match is production's 403 with errorCode ERR_NO_MATCHING_CHECKS, kept in the error.
    with pytest.raises(NoMatchingChecksError, match=r"403 Forbidden \[ERR_NO_MATCHING_CHECKS\]") as nomatch:
        client.trigger(
            {"name": "none", "runLocation": "eu-west-1", "target": {"matchTags": [["no-such-tag"]]}}
        )
    assert nomatch.value.error_code == "ERR_NO_MATCHING_CHECKS" and nomatch.value.service_body
    assert client.request_count == 3
    assert exit_code_for(info.value) == ExitCode.SERVICE


def test_400_validation_from_the_service(client: ApiClient, emulator: Emulator) -> None:
    # Passes the client's limits (min length 1) but names no location the service knows.
    with pytest.raises(BadRequestError) as info:
        client.trigger({"name": "x", "runLocation": "moon-base-1"})
    assert info.value.status == 400
    assert "runLocation" in info.value.message
    assert exit_code_for(info.value) == ExitCode.USAGE
    assert client.request_count == 1
    assert sessions_created(emulator) == 0


def test_402_plan_without_sessions_or_analyses(
    world_factory: Callable[..., Emulator], default_world: Any
) -> None:
    default_world["accounts"][0]["plan"] = {"testSessions": False, "analyses": False}
    emu = world_factory(default_world)
    with ApiClient(emu.url, emu.api_key, emu.account_id) as api_client:
        with pytest.raises(PaymentRequiredError) as info:
            api_client.trigger({"name": "x", "runLocation": "eu-west-1"})
        assert info.value.status == 402
        with pytest.raises(PaymentRequiredError):
            api_client.create_error_group_analysis(CHECK_ERROR_GROUP)
        assert api_client.request_count == 2
    assert exit_code_for(info.value) == ExitCode.SERVICE


def test_429_from_the_service_limit(emulator: Emulator) -> None:
    emulator.backend.update_settings(limit=2, window_seconds=30)
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id, max_retries=0) as api_client:
        api_client.get_error_group(CHECK_ERROR_GROUP)
        api_client.get_error_group(CHECK_ERROR_GROUP)
        with pytest.raises(RateLimitedError) as info:
            api_client.get_error_group(CHECK_ERROR_GROUP)
    exc = info.value
    assert exc.status == 429
    assert exc.retry_after is not None and 1 <= exc.retry_after <= 30
    assert exc.attributes["limit"] == 2
    assert exit_code_for(exc) == ExitCode.SERVICE


# --- client-side validation: nothing is sent ---------------------------------------------------

VALID_TRIGGER = {"name": "n", "runLocation": "eu-west-1"}
VALID_DASHBOARD = {"header": "h", "customUrl": "brand-new"}

CASES: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "trigger",
        "empty name",
        {**VALID_TRIGGER, "name": ""},
        "trigger body: name: must not be empty",
    ),
    (
        "trigger",
        "empty runLocation",
        {**VALID_TRIGGER, "runLocation": ""},
        "trigger body: runLocation: must not be empty",
    ),
    (
        "trigger",
        "51 env vars",
        {**VALID_TRIGGER, "environmentVariables": [{"key": "K"}] * 51},
        "trigger body: environmentVariables: at most 50 items",
    ),
    (
        "trigger",
        "maxRetries 0",
        {**VALID_TRIGGER, "retryStrategy": {"maxRetries": 0}},
        "trigger body: retryStrategy.maxRetries: must be greater than or equal to 1 (got 0)",
    ),
    (
        "trigger",
        "maxRetries 11",
        {**VALID_TRIGGER, "retryStrategy": {"maxRetries": 11}},
        "trigger body: retryStrategy.maxRetries: must be less than or equal to 10 (got 11)",
    ),
    (
        "trigger",
        "maxDurationSeconds 601",
        {**VALID_TRIGGER, "retryStrategy": {"maxDurationSeconds": 601}},
        "trigger body: retryStrategy.maxDurationSeconds: must be less than or equal to 600",
    ),
    ("trigger", "unknown field", {**VALID_TRIGGER, "nmae": "typo"}, "trigger body: nmae: unknown field"),
    (
        "dashboard",
        "width",
        {**VALID_DASHBOARD, "width": "800PX"},
        "dashboard: width: expected one of 'FULL' or",
    ),
    (
        "dashboard",
        "refreshRate",
        {**VALID_DASHBOARD, "refreshRate": 30},
        "dashboard: refreshRate: expected one of 60",
    ),
    (
        "dashboard",
        "paginationRate",
        {**VALID_DASHBOARD, "paginationRate": 120},
        "dashboard: paginationRate: expected one of 30",
    ),
    (
        "dashboard",
        "checksPerPage 0",
        {**VALID_DASHBOARD, "checksPerPage": 0},
        "dashboard: checksPerPage: must be greater than or equal to 1",
    ),
    (
        "dashboard",
        "checksPerPage 21",
        {**VALID_DASHBOARD, "checksPerPage": 21},
        "dashboard: checksPerPage: must be less than or equal to 20",
    ),
    (
        "check",
        "locations",
        {"locations": ["eu-west-1", "mars-1"]},
        "check update: locations[1]: expected one of",
    ),
    ("check", "runtimeId", {"runtimeId": "2021.01"}, "check update: runtimeId: expected one of '2026.04'"),
    ("check", "checkType", {"checkType": "SOAP"}, "check update: checkType: expected one of 'AGENTIC'"),
    (
        "check",
        "description 511",
        {"description": "d" * 511},
        "check update: description: at most 510 characters",
    ),
    (
        "check",
        "groupOrder -1",
        {"groupOrder": -1},
        "check update: groupOrder: must be greater than or equal to 0 (got -1)",
    ),
    ("check", "frequency 3", {"frequency": 3}, "check update: frequency: expected one of 0, 1, 2, 5"),
    (
        "check",
        "frequencyOffset 0",
        {"frequencyOffset": 0},
        "check update: frequencyOffset: must be greater than or equal to 1",
    ),
    (
        "check",
        "offset above floor(f*10)",
        {"frequency": 10, "frequencyOffset": 101},
        "with frequency 10, frequencyOffset must be at most 100",
    ),
    (
        "check",
        "offset above ceil(f/60)",
        {"frequency": 120, "frequencyOffset": 3},
        "with frequency 120, frequencyOffset must be at most 2",
    ),
    (
        "check",
        "frequency 0 offset 15",
        {"frequency": 0, "frequencyOffset": 15},
        "with frequency 0, frequencyOffset must be 10, 20 or 30",
    ),
    (
        "check",
        "frequency 0 browser",
        {"frequency": 0, "checkType": "BROWSER"},
        "frequency 0 (sub-minute) is allowed for API checks only",
    ),
    (
        "incident",
        "empty description",
        {"description": ""},
        "incident update: description: must not be empty",
    ),
    (
        "incident",
        "unknown status",
        {"description": "x", "status": "FIXED"},
        "incident update: status: expected one of 'INVESTIGATING'",
    ),
]


def expect_warning(call: str) -> Any:
    return pytest.warns(DeprecationWarning) if call == "check" else contextlib.nullcontext()


@pytest.mark.parametrize(("call", "name", "body", "message"), CASES, ids=[c[1] for c in CASES])
def test_client_side_limits_send_nothing(
    emulator: Emulator, call: str, name: str, body: dict[str, Any], message: str
) -> None:
    client = ApiClient(emulator.url, emulator.api_key, emulator.account_id)
    with pytest.raises(InvalidRequestError) as info, expect_warning(call):
        if call == "trigger":
            client.trigger(body)
        elif call == "dashboard":
            client.create_dashboard(body)
        elif call == "check":
            client.update_check(HOMEPAGE, body)
        else:
            client.add_incident_update("inc-1001", body)
    assert message in str(info.value)
    assert exit_code_for(info.value) == ExitCode.USAGE
    assert client.request_count == 0
    client.close()
    time.sleep(0.02)  # a request, had one been sent, would be counted by now
    assert emulator_stats(emulator)["requestsTotal"] == 0


def test_analysis_context_limit_sends_nothing(client: ApiClient, emulator: Emulator) -> None:
    expected = "analysis request: userContext: at most 256"
    with pytest.raises(InvalidRequestError, match=expected):
        client.create_error_group_analysis(CHECK_ERROR_GROUP, user_context="c" * 257)
    assert emulator_stats(emulator)["requestsTotal"] == 0


def test_every_request_carries_the_headers(emulator: Emulator) -> None:
    # A key of the right account but a missing account header is a 403: the header is what makes it pass.
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id) as good:
        assert good.get_error_group(CHECK_ERROR_GROUP).id == CHECK_ERROR_GROUP
    raw = requests.get(
        f"{emulator.url}/v1/error-groups/{CHECK_ERROR_GROUP}",
        headers={"Authorization": f"Bearer {emulator.api_key}"},
        timeout=5,
    )
    assert raw.status_code == 403


def test_other_accounts_key_sees_its_own_world(emulator: Emulator) -> None:
    with ApiClient(emulator.url, OTHER_KEY, OTHER_ACCOUNT) as other:
        assert other.get_error_group(OTHER_ERROR_GROUP).id == OTHER_ERROR_GROUP
        with pytest.raises(NotFoundError):
            other.get_error_group(CHECK_ERROR_GROUP)


def test_api_errors_are_api_error_subclasses(client: ApiClient) -> None:
    with pytest.raises(ApiError):
        client.get_analysis("00000000-0000-4000-8000-00000000dead")
