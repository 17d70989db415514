"""Values read in bulk (a session's rows, a world's check definitions) share their set of given fields,
and behave exactly as with sets of their own: exclude_unset, model_copy, a field set later."""

from __future__ import annotations

import copy
import json
import pickle
import sys

import pytest

from runner.emulator.core.world import parse_world
from runner.models import SessionResult, TestSession

ROW = {"testSessionResultId": "r1", "status": "PASSED", "name": "api check"}


def test_the_rows_of_a_session_share_one_set_and_dump_as_given() -> None:
    rows = [{**ROW, "testSessionResultId": f"r{i}"} for i in range(3)]
    session = TestSession.model_validate_json(
        TestSession(testSessionId="s", status="PASSED", results=rows).model_dump_json(exclude_unset=True)
    )
    first, *others = session.results
    assert all(o.__pydantic_fields_set__ is first.__pydantic_fields_set__ for o in others)
    assert first.model_dump(exclude_unset=True) == {**ROW, "testSessionResultId": "r0"}  # as sent, no more
    assert "results" in session.model_fields_set


def test_a_copy_has_a_set_of_its_own_and_setting_a_new_field_in_place_is_refused() -> None:
    session = TestSession(
        testSessionId="s", status="RUNNING", results=[ROW, {**ROW, "testSessionResultId": "r2"}]
    )
    one, two = session.results
    copied = one.model_copy(update={"checkId": "c1"})
    assert copied.model_fields_set == {*ROW, "checkId"}
    assert "checkId" not in two.model_fields_set  # the shared set did not change
    one.status = "FAILED"  # a field it was given: allowed
    with pytest.raises(TypeError, match="copy the model instead"):
        one.checkId = "c1"  # would mark it set in every row that shares the set
    assert "checkId" not in two.model_fields_set


def test_a_world_s_checks_and_their_definitions_share_their_sets() -> None:
    check = {"checkType": "API", "request": {"method": "GET", "url": "http://127.0.0.1:9/",
             "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]}}  # fmt: skip
    checks = [{"id": f"c{i}", "name": f"check {i}", **check} for i in range(2)]
    world = parse_world(
        {"accounts": [{"id": "a1", "name": "a", "keys": [{"key": "tsk_key_0001"}], "checks": checks}]}
    )
    a, b = world.accounts[0].checks
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    da, db = a.plan.definition, b.plan.definition
    assert da is not None and db is not None
    assert da.__pydantic_fields_set__ is db.__pydantic_fields_set__
    assert da.request.__pydantic_fields_set__ is db.request.__pydantic_fields_set__
    assert da.request.model_dump(exclude_unset=True)["assertions"] == check["request"]["assertions"]  # type: ignore[index]


def test_a_world_s_empty_fields_are_one_value_that_cannot_change_in_place() -> None:
    check = {"checkType": "API", "request": {"method": "GET", "url": "http://127.0.0.1:9/"}}
    checks = [{"id": f"c{i}", "name": f"check {i}", **check} for i in range(2)]
    world = parse_world(
        {"accounts": [{"id": "a1", "name": "a", "keys": [{"key": "tsk_key_0001"}], "checks": checks}]}
    )
    a, b = world.accounts[0].checks
    assert a.locations is b.locations and a.kept is b.kept and a.locations == [] and a.kept == {}
    da, db = a.plan.definition, b.plan.definition
    assert da is not None and db is not None and da.request.headers is db.request.headers
    with pytest.raises(TypeError, match="assign a new value"):
        a.locations.append("eu-west-1")  # would give every check that location
    with pytest.raises(TypeError, match="assign a new value"):
        a.kept["frequency"] = 5
    assert b.locations == [] and b.kept == {}
    # A copy, a dump and JSON see a plain empty list; assignment gives a check its own.
    copied = a.model_copy(deep=True, update={"locations": ["us-east-1"]})
    assert copied.locations == ["us-east-1"] and b.locations == []
    dumped = a.model_dump()
    assert type(dumped["locations"]) is list and type(dumped["kept"]) is dict
    assert json.loads(a.model_dump_json())["locations"] == []
    assert json.dumps({"l": a.locations, "k": a.kept}) == '{"l": [], "k": {}}'
    assert pickle.loads(pickle.dumps(a.locations)) == []
    mine = copy.copy(a.locations)  # a copy is its holder's own to change
    mine.append("eu-west-1")
    assert mine == ["eu-west-1"] and a.locations == []


def test_rows_read_again_share_their_names_with_the_last_read() -> None:
    # Longer than the 64 characters pydantic's own cache of JSON strings keeps.
    long = {"testSessionResultId": "r" * 70, "checkId": "c" * 70, "name": "n" * 70}
    long["testSessionResultLink"] = "http://x/results/" + "r" * 70

    def read() -> SessionResult:
        body = TestSession(testSessionId="s", status="RUNNING", results=[{**ROW, **long}]).model_dump_json()
        return TestSession.model_validate_json(body).results[0]

    first, again = read(), read()
    for name in long:
        if sys.version_info[:2] == (3, 12):  # interned strings are immortal there: not interned
            assert getattr(first, name) == getattr(again, name)
        else:
            assert getattr(first, name) is getattr(again, name)  # one object, not one per read
    assert first.errorGroupIds is again.errorGroupIds and first.errorGroupIds == []
    failing = TestSession.model_validate({"testSessionId": "s", "status": "FAILED", "results": [
        {**ROW, "status": "FAILED", "errorGroupIds": ["g1"]}]}).results[0]  # fmt: skip
    assert failing.errorGroupIds == ["g1"]
    # No extra field: one shared empty map; a copy that adds one has a map of its own.
    assert first.__pydantic_extra__ is again.__pydantic_extra__ == {}
    noted = first.model_copy(update={"errorMessage": "boom"})
    assert noted.model_extra == {"errorMessage": "boom"} and first.model_extra == {}


def test_a_row_built_without_every_field_is_built_as_before() -> None:
    row = SessionResult.model_construct(status="PASSED")  # a test's or a tool's partial row
    assert row.status == "PASSED" and row.errorGroupIds == [] and "testSessionResultId" not in row.__dict__
