"""The API is declared once (runner/models/operations.py): the emulator's OpenAPI document, its request
matching and the client's URLs and retries all follow the table."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from runner.client import ApiClient
from runner.core.errors import InvalidRequestError, NotFoundError, ServerError
from runner.emulator import Emulator
from runner.emulator.shell.hosts import CONTROL_HEADERS
from runner.models.operations import OPERATIONS, CallKind, Operation, find


@pytest.fixture(scope="module")
def document(module_emulator: Emulator) -> dict[str, Any]:
    answer = requests.get(f"{module_emulator.url}/openapi.json", timeout=5)
    assert answer.status_code == 200
    data: dict[str, Any] = answer.json()
    return data


def _schema_name(content: dict[str, Any] | None) -> str | None:
    if not content:
        return None
    schema = content["application/json"]["schema"]
    ref = schema.get("$ref") or next((s["$ref"] for s in schema.get("anyOf", []) if "$ref" in s), "")
    return str(ref).rsplit("/", 1)[-1] or None


@pytest.mark.parametrize("op", OPERATIONS, ids=[op.name for op in OPERATIONS])
def test_openapi_document_states_each_row_of_the_table(document: dict[str, Any], op: Operation[Any]) -> None:
    entry = document["paths"][op.template][op.method.lower()]
    assert entry["summary"] == op.summary
    assert set(entry["responses"]) == {str(s) for s in (op.status, *op.also, *op.errors)}
    success = entry["responses"][str(op.status)].get("content")
    assert _schema_name(success) == (op.response.__name__ if op.response else None)
    body = entry.get("requestBody", {}).get("content")
    assert _schema_name(body) == (op.request.__name__ if op.request else None)
    assert entry.get("deprecated", False) is op.deprecated
    path_params = [p["name"] for p in entry.get("parameters", []) if p["in"] == "path"]
    assert path_params == [param.name for param in op.params]
    # The query's parameters, with the default and bounds the emulator validates them with.
    query = {p["name"]: p["schema"] for p in entry.get("parameters", []) if p["in"] == "query"}
    assert list(query) == [q.name for q in op.query]
    for q in op.query:
        schema = query[q.name]
        assert (schema.get("default"), schema.get("minimum"), schema.get("maximum")) == (
            q.default,
            q.ge,
            q.le,
        )


@pytest.mark.parametrize("op", OPERATIONS, ids=[op.name for op in OPERATIONS])
def test_every_url_the_client_builds_is_matched_to_its_own_operation(op: Operation[Any]) -> None:
    path = op.url_path(*("12" for _ in op.params))
    assert find(op.method, path) is op
    longer = find(op.method, path + "/extra")  # GET /v1/checks/extra is a check: get_check's own
    assert longer is None or (longer is not op and longer.template.startswith(op.template + "/{"))


def test_ids_are_one_quoted_segment_and_empty_ones_are_refused() -> None:
    op = next(o for o in OPERATIONS if o.name == "delete_maintenance")
    assert op.url_path(" 0042", "../m 1") == "/v1/maintenance-windows/42/maintenances/..%2Fm%201"
    with pytest.raises(InvalidRequestError, match="maintenance window id: must be a positive whole number"):
        op.url_path("w1", "m1")
    with pytest.raises(InvalidRequestError, match="maintenance id: must be a non-empty string"):
        op.url_path(1, " ")


def test_a_delete_is_retried_after_a_500_and_a_create_is_not(module_emulator: Emulator) -> None:
    emu = module_emulator
    emu.backend.reset()
    fault = {"kind": "status", "status": 500, "phase": "before", "count": 1}
    answer = requests.post(
        f"{emu.url}/_emulator/faults",
        headers=CONTROL_HEADERS,
        json=[{**fault, "route": "delete_client_certificate"}, {**fault, "route": "create_dashboard"}],
        timeout=5,
    )
    assert answer.status_code == 200
    with ApiClient(emu.url, emu.api_key, emu.account_id, sleep=lambda s: None) as client:
        client.delete_client_certificate("cert-3001")  # IDEMPOTENT: the 500 is retried
        assert client.request_count == 2
        with pytest.raises(NotFoundError):  # and it is gone
            client.delete_client_certificate("cert-3001")
        with pytest.raises(ServerError):  # CREATE: a 500 may mean it was created
            client.create_dashboard({"header": "h"})
        assert client.request_count == 4


def test_only_a_get_is_a_read() -> None:
    # A delete or a cancel changes state: resent like a read, but never called one.
    assert {op.method for op in OPERATIONS if op.kind is CallKind.READ} == {"GET"}
    assert {op.method for op in OPERATIONS if op.kind is CallKind.IDEMPOTENT} == {"DELETE", "POST"}
