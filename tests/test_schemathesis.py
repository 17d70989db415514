"""schemathesis against the emulator's own /openapi.json over real HTTP: no 5xx, and every answer matches
the status codes and schemas the document promises. Bounded: a few examples per operation."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis")
from conftest import never_ending_world  # noqa: E402
from helpers import examples  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    response_schema_conformance,
    status_code_conformance,
)

from runner.emulator import Emulator  # noqa: E402
from runner.emulator.shell.hosts import CONTROL_HEADERS  # noqa: E402

CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
# Generated examples per operation, on top of schemathesis' coverage phase (its ~1,400 boundary and
# wrong-type cases, the bulk of this test's ~9 s of CPU, run every time); `deep` runs 40.
MAX_EXAMPLES = examples(4)
REQUEST_TIMEOUT = 10  # a long poll waits at most maxWaitSeconds (<= 30) only on a RUNNING session


@pytest.fixture(scope="module")
def st_emulator() -> Iterator[Emulator]:
    """One emulator for the module; its rate limit raised so generated traffic never meets 429."""
    saved = {name: os.environ.pop(name, None) for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID")}
    emu = Emulator(world=never_ending_world(), speed=200.0).start()  # the hanging check stays running
    try:
        patch = requests.patch(
            f"{emu.url}/_emulator/settings",
            headers=CONTROL_HEADERS,
            json={"rateLimit": {"limit": 1_000_000}},
            timeout=5,
        )
        assert patch.status_code == 200
        yield emu
    finally:
        emu.stop()
        for name, value in saved.items():
            if value is not None:
                os.environ[name] = value


@pytest.fixture(scope="module")
def st_schema(st_emulator: Emulator) -> Any:
    return schemathesis.openapi.from_url(f"{st_emulator.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("st_schema")
# The operations in six test items, so that pytest-xdist spreads them over its workers: as one item
# (~14 s of CPU) it ran 80-108 s on a loaded 2-core machine, the whole suite's tail, and once met its
# 120 s timeout; in three, 62 s at load 15 (the trigger and PUT /v1/checks/{id} are the heavy ones, in
# shards 0 and 2). Shard 0 also takes any operation the table does not name (the route test fails then).
SHARDS = 6


def shard(k: int) -> Callable[[Any], bool]:
    from runner.models.operations import OPERATIONS

    labels = [(op.method, op.template) for op in OPERATIONS]

    def matches(ctx: Any) -> bool:
        label = (ctx.operation.method.upper(), ctx.operation.path)
        return (labels.index(label) if label in labels else 0) % SHARDS == k

    return matches


def test_openapi_document_lists_every_api_route(st_emulator: Emulator) -> None:
    from runner.models.operations import OPERATIONS

    document = requests.get(f"{st_emulator.url}/openapi.json", timeout=5).json()
    operations = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert operations == {(op.method, op.template) for op in OPERATIONS}
    assert not any(path.startswith("/_emulator") for _, path in operations)


CONFORMS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def conformance_test(k: int) -> Callable[..., None]:
    @schema.include(shard(k)).parametrize()
    @CONFORMS
    def test(case: Any, st_emulator: Emulator) -> None:
        conforms(case, st_emulator)

    test.__name__ = test.__qualname__ = f"test_api_conforms_to_its_openapi_document_{k}"
    return test


for _k in range(SHARDS):
    globals()[f"test_api_conforms_to_its_openapi_document_{_k}"] = conformance_test(_k)


def conforms(case: Any, st_emulator: Emulator) -> None:
    # Real credentials, so the generated bodies and ids reach the handlers instead of stopping at 401.
    case.headers = {
        **(case.headers or {}),
        "Authorization": f"Bearer {st_emulator.api_key}",
        "X-Service-Account": st_emulator.account_id,
    }
    response = case.call_and_validate(base_url=st_emulator.url, checks=CHECKS, timeout=REQUEST_TIMEOUT)
    # Each generated request reached its handler: valid or not, it was judged on its body and ids.
    assert response.status_code not in (401, 403), (case.method, case.path, response.text)


def test_every_route_answers_its_success_schema(st_schema: Any, st_emulator: Emulator) -> None:
    """Generated ids rarely exist, so the success answers are checked here with real ids, one per route."""
    from emulator_ids import CHECK_ERROR_GROUP, CHECK_ERROR_GROUP_ANALYSIS, HOMEPAGE

    headers = {"Authorization": f"Bearer {st_emulator.api_key}", "X-Service-Account": st_emulator.account_id}
    seen: set[str] = set()

    def call(method: str, path: str, status: int, **parts: Any) -> Any:
        case = st_schema[path][method].Case(headers=headers, **parts)
        response = case.call_and_validate(base_url=st_emulator.url, checks=CHECKS, timeout=REQUEST_TIMEOUT)
        assert response.status_code == status, (method, path, response.text)
        seen.add(f"{method} {path}")
        return response.json() if response.content else None

    trigger = {"name": "st", "runLocation": "eu-west-1", "target": {"matchTags": [["checkout"]]}}
    session = call("POST", "/v1/test-sessions/trigger", 201, body=trigger)
    sid = {"testSessionId": session["testSessionId"]}
    call("GET", "/v1/test-sessions/{testSessionId}", 200, path_parameters=sid)
    final = call(
        "GET", "/v1/test-sessions/{testSessionId}/completion", 200, path_parameters=sid,
        query={"maxWaitSeconds": 5},
    )  # fmt: skip
    assert final["status"] == "FAILED" and final["errorGroupIds"]
    group = {"id": final["errorGroupIds"][0]}
    call("GET", "/v1/test-session-error-groups/{id}", 200, path_parameters=group)
    call("GET", "/v1/error-groups/{id}", 200, path_parameters={"id": CHECK_ERROR_GROUP})
    pending = call(
        "POST", "/v1/root-cause-analyses/test-session-error-groups/{id}", 202, path_parameters=group,
        body={"userContext": "schemathesis"},
    )  # fmt: skip
    call("POST", "/v1/root-cause-analyses/error-groups/{id}", 202, path_parameters={"id": CHECK_ERROR_GROUP})
    call("GET", "/v1/root-cause-analyses/{id}", 200, path_parameters={"id": CHECK_ERROR_GROUP_ANALYSIS})
    assert pending["status"] == "PENDING"
    call(
        "POST", "/v1/status-pages/incidents/{incidentId}/incident-updates", 200,
        path_parameters={"incidentId": "inc-1001"}, body={"description": "Investigating"},
    )  # fmt: skip
    call("POST", "/v1/dashboards", 201, body={"header": "st", "customUrl": "st-dash"})
    call("PUT", "/v1/checks/{id}", 200, path_parameters={"id": HOMEPAGE}, body={"name": "Homepage v2"})
    call("GET", "/v1/checks/{id}", 200, path_parameters={"id": HOMEPAGE})
    listed = call("GET", "/v1/checks", 200, query={"limit": 2, "page": 1, "tag": ["smoke"]})
    assert len(listed) == 2
    call("GET", "/v1/variables", 200, query={"limit": 10, "page": 1})
    call(
        "DELETE", "/v1/maintenance-windows/{id}/maintenances/{maintenanceId}", 204,
        path_parameters={"id": "2001", "maintenanceId": "m-1"},
    )  # fmt: skip
    call("DELETE", "/v1/maintenance-windows/{id}", 204, path_parameters={"id": "2001"})
    call("DELETE", "/v1/client-certificates/{id}", 204, path_parameters={"id": "cert-3001"})
    hanging = {**trigger, "target": {"matchTags": [["hang"]]}}  # never ends on its own: still running
    running = call("POST", "/v1/test-sessions/trigger", 201, body=hanging)
    call("POST", "/v1/test-sessions/{testSessionId}/cancel", 204,
         path_parameters={"testSessionId": running["testSessionId"]})  # fmt: skip
    document = st_schema.raw_schema
    every = {f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item}
    assert seen == every
