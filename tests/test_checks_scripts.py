"""API check setup and teardown scripts, run in Node against a real local server (/echo answers with
the request it got): what the setup changes is sent, the teardown's body is asserted, variables are
process.env and secrets stay masked, an error or a script that never ends fails the check."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from runner.checks.node import NodeMissing, find_node
from runner.checks.run import run_check
from runner.checks.scripts import ScriptRunner
from runner.checks.variables import Variable, VariableSources
from runner.models.check_definitions import parse_check_definition
from tests.checks_servers import HttpServer, start_http


def _runner() -> ScriptRunner | None:
    try:
        return ScriptRunner(find_node())
    except NodeMissing:
        return None


RUNNER = _runner()
pytestmark = pytest.mark.skipif(
    RUNNER is None, reason="SKIPPED LOUDLY: Node.js 18+ is not installed: setup/teardown scripts need it"
)
SECRET = "tok-4f9a-secret-value"


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = start_http()
    yield server
    server.stop()


def _check(web: HttpServer, **fields: Any) -> Any:
    return parse_check_definition({
        "id": "c1", "name": "scripted", "checkType": "API",
        "request": {"method": "GET", "url": web.url("/echo") + "?a={{A}}",
                    "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]},
        **fields,
    })  # fmt: skip


def _run(check: Any, runner: ScriptRunner | None = RUNNER) -> Any:
    sources = VariableSources(session=(Variable("A", "one"), Variable("TOKEN", SECRET, secret=True)))
    return run_check(check, max_run_seconds=30, variables=sources, scripts=runner).final


def test_setup_changes_the_request_and_the_variables_that_fill_it(web: HttpServer) -> None:
    script = (
        "request.headers['Authorization'] = 'Bearer ' + process.env.TOKEN\n"
        "request.method = 'POST'\nrequest.body = JSON.stringify({n: 1})\n"
        "process.env.A = 'two'\nawait new Promise(r => setTimeout(r, 10))\n"
    )
    attempt = _run(_check(web, localSetupScript=script))
    assert attempt.passed, attempt.message
    echo = json.loads(attempt.body_excerpt.replace("***", SECRET))
    assert echo["method"] == "POST" and echo["body"] == '{"n":1}'
    assert echo["query"] == {"a": ["two"]}  # the variable the setup changed filled the URL
    assert echo["headers"]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(attempt)  # masked in every field of the attempt


def test_teardown_reads_the_response_and_changes_the_body_the_assertions_read(web: HttpServer) -> None:
    teardown = (
        "const body = JSON.parse(response.body)\n"
        "response.body = JSON.stringify({status: response.statusCode, method: body.method})\n"
    )
    on_status = {"source": "JSON_BODY", "property": "$.status", "comparison": "EQUALS", "target": "200"}
    check = _check(web, localTearDownScript=teardown)
    check = parse_check_definition({
        **check.model_dump(), "request": {**check.request.model_dump(), "assertions": [on_status]},
    })  # fmt: skip
    attempt = _run(check)
    assert attempt.passed, attempt.message
    assert attempt.body_excerpt == '{"status":200,"method":"GET"}'
    failing = {**on_status, "target": "201"}
    check = parse_check_definition(
        {**check.model_dump(), "request": {**check.request.model_dump(), "assertions": [failing]}}
    )
    assert _run(check).message == "JSON_BODY $.status EQUALS 201: received 200"


def test_a_teardown_error_fails_the_check_after_the_assertions_ran(web: HttpServer) -> None:
    """Production runs the assertions whatever the teardown did: their results are kept, a failed one
    is named; else the teardown's error fails the check."""
    attempt = _run(_check(web, localTearDownScript="throw new Error('cleanup failed')"))
    assert not attempt.passed and attempt.error_kind == "teardown_script"
    assert "cleanup failed" in str(attempt.message)
    assert [(a.source, a.passed) for a in attempt.assertions] == [("STATUS_CODE", True)]  # it ran
    check = _check(web, localTearDownScript="throw new Error('cleanup failed')")
    wrong = {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "201"}
    check = parse_check_definition(
        {**check.model_dump(), "request": {**check.request.model_dump(), "assertions": [wrong]}}
    )
    assert _run(check).message == "STATUS_CODE EQUALS 201: received 200"


def test_a_setup_error_fails_the_check_with_its_message_masked(web: HttpServer) -> None:
    attempt = _run(_check(web, localSetupScript="throw new Error('no token for ' + process.env.TOKEN)"))
    assert not attempt.passed and attempt.error_kind == "setup_script"
    assert attempt.message == "setup script failed: Error: no token for ***"
    assert attempt.request is None  # nothing was sent


def test_a_setup_that_never_ends_is_cut_at_its_bound(web: HttpServer) -> None:
    assert RUNNER is not None and RUNNER.seconds == 10.0  # production's limit
    quick = ScriptRunner(RUNNER.node, seconds=1.0)
    script = "await new Promise(() => setInterval(() => {}, 1000))"
    attempt = _run(_check(web, localSetupScript=script), quick)
    assert not attempt.passed and attempt.error_class == "TIMEOUT"
    assert "did not finish within 1 s" in attempt.message


def test_without_node_a_scripted_check_fails_closed(web: HttpServer) -> None:
    check = _check(web, localSetupScript="request.url = 'x'")
    attempt = run_check(check, max_run_seconds=30).final
    assert attempt.error_kind == "not_runnable_locally"
    assert "setup or teardown scripts cannot run locally" in attempt.message
    assert shutil.which("node") is not None  # this test is about the engine without a runner
