"""Values read in bulk (a session's rows, a world's checks, the checks' definitions) are pydantic
models as pydantic makes them, and a checks file's checks (slots values, checksfile.FileCheck) hold
fields of their own: a user or a test changes one without changing another, and a field set later
is set on that value only."""

from __future__ import annotations

from runner.checks.checksfile import parse_checks
from runner.models import SessionResult, TestSession
from runner.models.check_definitions import KeyValue

ROW = {"testSessionResultId": "r1", "status": "FAILED", "name": "api check"}


def test_a_parsed_row_can_be_changed_as_any_model_and_changes_no_other() -> None:
    rows = [{**ROW, "testSessionResultId": f"r{i}"} for i in range(2)]
    session = TestSession.model_validate_json(
        TestSession(testSessionId="s", status="FAILED", results=rows).model_dump_json(exclude_unset=True)
    )
    one, two = session.results
    one.errorGroupIds.append("g1")  # a list of its own
    one.isDegraded = True
    one.model_fields_set.add("checkId")
    assert one.errorGroupIds == ["g1"] and two.errorGroupIds == []
    assert "isDegraded" in one.model_fields_set and "isDegraded" not in two.model_fields_set
    assert "checkId" not in two.model_fields_set
    assert two.model_dump(exclude_unset=True) == {**ROW, "testSessionResultId": "r1"}


def test_a_check_s_empty_fields_are_its_own() -> None:
    check = {"checkType": "API", "request": {"method": "GET", "url": "http://127.0.0.1:9/"}}
    loaded = parse_checks([{"name": f"check {i}", **check} for i in range(2)], "checks.yml", {})
    a, b = loaded.checks
    a.locations.append("eu-west-1")
    a.kept["frequency"] = 5
    assert b.locations == [] and b.kept == {}
    da, db = a.plan.definition, b.plan.definition
    assert da is not None and db is not None
    da.request.headers.append(KeyValue(key="k", value="v"))
    assert db.request.headers == []
    assert SessionResult.model_validate(ROW).errorGroupIds == []
