"""What the state file keeps of an error group beyond its times: the evidence of its latest real failure
(so a known group is analysed the same after a restart) and how often it occurred (over every run
sharing the file). Real emulators, one after the other on one file, against a server on loopback."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from checks_servers import HttpServer
from test_real_sessions import ACCOUNT, KEY, Api, api, attempts, finals, status, world

from runner.checks import ErrorClass, FailureKind, run_check
from runner.checks.evidence import MAX_CONSOLE_LINES, MAX_EVIDENCE_CHARS, from_data, to_data
from runner.checks.outcome import Attempt, EvidenceFile, Step
from runner.client import ApiClient
from runner.emulator import Emulator
from runner.job.analyses import AnalysisPlan, GroupReader
from runner.job.events import Where
from runner.models.check_definitions import parse_check_definition

RETRY_ONCE = {"type": "FIXED", "baseBackoffSeconds": 0, "maxRetries": 1, "maxDurationSeconds": 60}


def failing_world(web: HttpServer, **request: Any) -> dict[str, Any]:
    return world(api("cart", web.url("/status/503"), status("200"), request=request))


def one_run(data: dict[str, Any], state: Path, **trigger: Any) -> tuple[Emulator, Api, dict[str, Any]]:
    emu = Emulator(world=data, speed=25, state=state).start()
    client = Api(emu, KEY)
    return emu, client, finals(client.final(client.trigger(**trigger)["testSessionId"]))["cart"]


def test_a_known_groups_analysis_after_a_restart_is_made_from_the_same_evidence(
    tmp_path: Path, web: HttpServer
) -> None:
    state, data = tmp_path / "state.db", failing_world(web)
    emu, client, cart = one_run(data, state)
    try:
        [group_id] = cart["errorGroupIds"]
        before = client.analysis(group_id)  # made now, from the evidence this process holds
    finally:
        emu.stop()
    # A new process on the same file, and no new failure: only the file knows what happened.
    with Emulator(world=data, speed=25, state=state) as again:
        after = Api(again, KEY).analysis(group_id)
    assert after["status"] == before["status"] == "COMPLETED" and after["id"] != before["id"]
    assert after["model"] == before["model"] == "rules-v1/run-http-status"  # not the message rules
    assert after["analysis"] == before["analysis"]
    assert "answered 503 Service Unavailable" in after["analysis"]["rootCause"]
    artifacts = {a["name"] for e in after["analysis"]["evidence"] for a in e["artifacts"]}
    assert artifacts == {"HTTP_REQUEST", "TIMING_PHASES"}


def test_occurrences_count_over_every_run_that_shares_the_file(tmp_path: Path, web: HttpServer) -> None:
    state, data = tmp_path / "state.db", failing_world(web)
    counts = []
    for _ in range(2):  # two pipelines; each session fails its check twice (a retry)
        emu, client, cart = one_run(data, state, retryStrategy=RETRY_ONCE)
        try:
            [group_id] = cart["errorGroupIds"]
            counts.append(client.group(group_id)["occurrences"])
        finally:
            emu.stop()
    assert counts == [2, 4]


def test_the_stored_evidence_is_bounded_and_still_analysed(tmp_path: Path, web: HttpServer) -> None:
    headers = [{"key": f"X-Filler-{i}", "value": "v" * 250} for i in range(90)]  # ~24 KB of request
    state, data = tmp_path / "state.db", failing_world(web, headers=headers)
    emu, client, cart = one_run(data, state)
    try:
        [group_id] = cart["errorGroupIds"]
        before = client.analysis(group_id)
    finally:
        emu.stop()
    with sqlite3.connect(state) as db:
        [(extra,)] = db.execute("SELECT extra FROM error_groups WHERE id = ?", (group_id,)).fetchall()
    stored = json.loads(extra)
    assert len(json.dumps(stored["evidence"], ensure_ascii=False)) <= MAX_EVIDENCE_CHARS
    assert stored["evidence"]["status_code"] == 503 and len(stored["evidence"]["request"]["headers"]) == 20
    with Emulator(world=data, speed=25, state=state) as again:
        after = Api(again, KEY).analysis(group_id)
    assert after["model"] == before["model"] == "rules-v1/run-http-status"
    assert after["analysis"]["rootCause"] == before["analysis"]["rootCause"]


def test_a_run_reads_a_counted_group_again_when_a_retry_failed_after_its_first_read(web: HttpServer) -> None:
    with Emulator(world=failing_world(web), speed=25) as emu, ApiClient(emu.url, KEY, ACCOUNT) as client:
        session = Api(emu, KEY)
        retry = {**RETRY_ONCE, "baseBackoffSeconds": 25}  # a real second between the two failures
        session_id = session.trigger(retryStrategy=retry)["testSessionId"]
        deadline = time.monotonic() + 5
        while not (failed := attempts(session.session(session_id), "cart")) and time.monotonic() < deadline:
            time.sleep(0.02)
        [group_id] = failed[0]["errorGroupIds"]
        reader = GroupReader(client, AnalysisPlan(enabled=False), Where("s", "eu-west-1"), lambda _e: None,
                             threading.Event())  # fmt: skip
        reader.read([group_id])  # as a run reads it: at the first failure, while the retry waits
        assert reader.groups([group_id], 5)[group_id].occurrences == 1
        session.final(session_id)
        [group] = reader.finish(client.get_session(session_id), wait=True)
    assert (group.count, group.occurrences) == (2, 2)  # read again: the retry's failure counted too


def test_evidence_reads_back_equal_and_anything_else_reads_as_none(web: HttpServer) -> None:
    not_empty = {"source": "TEXT_BODY", "comparison": "NOT_EMPTY"}
    check = api("cart", web.url("/status/503"), status("200"), not_empty)
    attempt = run_check(parse_check_definition(check), max_run_seconds=5).final
    assert attempt.failed_assertion is not None and attempt.timing is not None and attempt.request is not None
    stored = to_data(attempt)
    assert stored is not None and from_data(json.loads(json.dumps(stored))) == attempt
    for broken in (None, [], "x", {"number": 1}, {**stored, "timing": {"dns": 1}}):
        assert from_data(broken) is None


def test_evidence_of_a_file_written_before_the_failure_kinds_were_typed_reads_as_them() -> None:
    # What the version before FailureKind wrote for a refused connection (no child-process fields).
    written = {
        "number": 1, "started_at": 1.0, "duration_ms": 2.0, "passed": False, "degraded": False,
        "error_class": "NETWORK_ERROR", "error_kind": "connection_refused",
        "message": "connection refused: 127.0.0.1:9", "network_failure": True, "response_time_ms": 1.5,
        "status_code": None, "response_code": None, "timing": None, "body_excerpt": None,
        "body_truncated": False, "body_bytes": None, "failed_assertion": None, "assertions": [],
        "request": None, "cancelled": False, "fingerprint": "connection refused: <ip>:<port>",
    }  # fmt: skip
    attempt = from_data(written)
    assert attempt is not None
    assert attempt.error_kind is FailureKind.CONNECTION_REFUSED
    assert attempt.error_class is ErrorClass.NETWORK_ERROR
    assert json.loads(json.dumps(to_data(attempt))) == written  # and written back the same
    newer = from_data({**written, "error_kind": "a_kind_of_a_newer_version", "error_class": "NEW"})
    assert newer is not None and newer.error_kind is None and newer.error_class is None
    assert newer.fingerprint == written["fingerprint"]  # its group keeps its key


def test_a_child_process_evidence_is_kept_bounded_and_reads_back() -> None:
    steps = (Step("open the cart", True, 12.5), Step("pay", False, 3.0, "expect(locator).toBeVisible()"))
    files = (EvidenceFile("trace.zip", "TRACE", "/tmp/run/trace.zip"),)
    lines = tuple(f"console line {i} " + "x" * 900 for i in range(100))  # ~90 KB: over the bound
    attempt = Attempt.not_run(FailureKind.INVALID_DEFINITION, "m")
    attempt = dataclasses.replace(attempt, steps=steps, files=files, console=lines)
    stored = to_data(attempt)
    assert stored is not None and len(json.dumps(stored)) <= MAX_EVIDENCE_CHARS
    back = from_data(json.loads(json.dumps(stored)))
    assert back is not None and back.steps == steps and back.files == files
    assert back.console == lines[-MAX_CONSOLE_LINES:]  # the last lines, where a failure shows


def test_a_kept_pass_is_the_attempt_without_its_evidence_detail(web: HttpServer) -> None:
    """What a session keeps of a passed attempt: every field as it was (a field added to Attempt later
    too) but the detail only an error group's analysis reads, at its default."""
    seen = run_check(
        parse_check_definition(api("cart", web.url("/status/200"), status("200"))), max_run_seconds=5
    ).final
    seen = dataclasses.replace(
        seen, files=(EvidenceFile("shot.png", "SCREENSHOT", "/tmp/shot.png"),), body_truncated=True
    )
    assert seen.passed and seen.timing is not None and seen.request is not None and seen.assertions
    detail = ("timing", "body_excerpt", "failed_assertion", "assertions", "request", "steps", "console")
    defaults = Attempt(number=1, started_at=0.0, duration_ms=0.0, passed=True)
    assert seen.as_kept_passed() == dataclasses.replace(
        seen, **{name: getattr(defaults, name) for name in detail}
    )
