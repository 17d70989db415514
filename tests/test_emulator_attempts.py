"""A session's attempts are the engine's `Attempt`s (one value from the engine to the rows): a real
run keeps what the engine handed back, a scripted one is made of Attempts too, and a row says of an
attempt what the local run says of it (`Attempt.reported_ms`, `failure_class`, `failure_message`)."""

from __future__ import annotations

from datetime import datetime, timezone

from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import Attempt, EvidenceFile, SuiteTest
from runner.emulator.core import realruns
from runner.emulator.core.simulation import SessionRun, plan_run, render_run
from runner.emulator.core.world import WorldCheck, parse_world_text
from runner.models import RetryStrategy

WORLD = """
accounts:
  - id: acc
    name: Shop
    plan: {testSessions: true}
    keys: [{key: tsk_test_0123456789, role: read-write}]
    checks:
      - {id: c1, name: Cart, checkType: API, behaviour: flaky, durationSeconds: 2}
      - {id: c2, name: Cart too, checkType: API, behaviour: flaky, durationSeconds: 2}
"""


def _checks() -> list[WorldCheck]:
    return list(parse_world_text(WORLD).accounts[0].checks)


def _rows(run: SessionRun, at: float = 1e6) -> list[dict[str, object]]:
    def moment(t: float) -> datetime:
        return datetime.fromtimestamp(t, tz=timezone.utc)

    return [row.model_dump() for row in render_run(run, at, False, "eu-west-1", "http://e/s", moment)]


def test_a_real_run_keeps_the_engines_attempt_and_its_row_fails_closed() -> None:
    check = _checks()[0]
    run = realruns.open_run(check, 0.0)
    # A failure the engine gave no class (a cancelled attempt): the row is an error, never a pass.
    stopped = Attempt(1, 100.0, 40.0, False, error_kind=FailureKind.CANCELLED, cancelled=True)
    realruns.finish(run, stopped, False, 1.0)
    realruns.begin(run, 2.0)
    slow = Attempt(
        2, 103.0, 900.0, True, degraded=True, message="response time 900 ms exceeded", response_time_ms=870.4,
        files=(EvidenceFile("trace", "TRACE", "out/trace.zip"),), tests=(SuiteTest("cart", "flaky", 2),),
    )  # fmt: skip
    realruns.finish(run, slow, True, 3.0)

    assert run.slots[0].attempt is stopped  # the engine's value itself, not a copy of its fields
    retried, final = _rows(run)
    assert (retried["resultType"], retried["status"], retried["hasErrors"]) == ("ATTEMPT", "FAILED", True)
    assert retried["errorMessage"] == "cancelled" and retried["responseTime"] == 40
    assert (final["status"], final["isDegraded"], final["responseTime"]) == ("PASSED", True, 870)
    assert final["degradedReason"] == "response time 900 ms exceeded" and final["errorGroupIds"] == []
    assert final["attachments"] == [{"name": "trace", "path": "out/trace.zip"}]
    assert final["tests"] == [{"name": "cart", "status": "flaky", "runs": 2}]


def test_scripted_attempts_are_attempts_shared_by_checks_scripted_the_same_way() -> None:
    first, second = _checks()
    retry = RetryStrategy(type="FIXED", maxRetries=1, baseBackoffSeconds=1)
    runs = [plan_run(check, 0.0, {}, retry, 30.0) for check in (first, second)]

    failed, passed = (slot.attempt for slot in runs[0].slots)
    assert isinstance(failed, Attempt) and isinstance(passed, Attempt) and runs[0].scripted
    assert (failed.error_class, failed.network_failure, failed.duration_ms) == (
        ErrorClass.NETWORK_ERROR, True, 2000.0,
    )  # fmt: skip
    assert passed.passed and passed.number == 2
    assert [s.attempt for s in runs[1].slots] == [failed, passed]
    assert runs[1].slots[0].attempt is failed  # a value: made once
    attempt_row, final_row = _rows(runs[0])
    assert (attempt_row["status"], attempt_row["hasErrors"], attempt_row["responseTime"]) == (
        "FAILED",
        True,
        2000,
    )
    assert attempt_row["errorMessage"] == "connect ECONNRESET 10.0.0.12:443"
    assert (final_row["status"], final_row["resultType"], final_row["startedAt"].timestamp()) == (
        "PASSED",
        "FINAL",
        3.0,
    )
