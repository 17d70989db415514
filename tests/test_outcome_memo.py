"""OutcomeMemo: a check read again unchanged keeps its outcome; anything it depends on changing judges it
again, exactly as check_outcome would."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.job.outcome import ErrorGroupOutcome, ResultOutcome
from runner.job.verdicts import OutcomeMemo, check_outcome, check_rows
from runner.models import SessionResult, TestSession

STARTED = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _session(*rows: SessionResult) -> TestSession:
    return TestSession(testSessionId="s1", status="RUNNING", startedAt=STARTED, results=list(rows))


def _row(status: str, groups: list[str] | None = None, result_type: str = "FINAL") -> SessionResult:
    return SessionResult(
        testSessionResultId="r1",
        checkId="c1",
        name="api check",
        status=status,
        resultType=result_type,
        errorGroupIds=groups or [],
    )


def _judge(memo: OutcomeMemo, session: TestSession, groups: dict[str, ErrorGroupOutcome]) -> ResultOutcome:
    [check] = check_rows(session)
    got = memo.outcome(session, check, groups)
    assert got == check_outcome(session, check, groups)  # the memo never answers otherwise
    return got


def test_an_unchanged_check_is_not_judged_again() -> None:
    memo = OutcomeMemo()
    first = _judge(memo, _session(_row("PASSED")), {})
    assert _judge(memo, _session(_row("PASSED")), {}) is first  # an equal row read anew


def test_a_changed_row_or_a_group_read_later_is_judged_again() -> None:
    memo = OutcomeMemo()
    running = _judge(memo, _session(_row("RUNNING", result_type="PENDING")), {})
    failed = _judge(memo, _session(_row("FAILED", ["g1"])), {})
    assert failed is not running
    assert failed.verdict == "failed" and failed.error != "boom"
    # The group's message arrives on a later read: the same rows now give its message and known/new.
    group = ErrorGroupOutcome(id="g1", message="boom", firstSeen=STARTED)
    again = _judge(memo, _session(_row("FAILED", ["g1"])), {"g1": group})
    assert again is not failed and again.error == "boom"
    assert again.known is False
    # The session's start changes what is known: judged again.
    later = _session(_row("FAILED", ["g1"])).model_copy(
        update={"startedAt": datetime(2026, 11, 27, tzinfo=UTC)}
    )
    assert _judge(memo, later, {"g1": group}) is not again


def test_an_earlier_read_is_let_go_once_an_equal_one_is_judged() -> None:
    """The memo keeps the rows of the latest read, which its caller keeps anyway; the earlier, equal
    read is freed (at 10,000 checks a read's rows are ~19 MiB)."""
    import gc
    import weakref

    memo = OutcomeMemo()
    first = _session(_row("PASSED"))
    watched = weakref.finalize(first.results[0], lambda: None)
    _judge(memo, first, {})
    _judge(memo, _session(_row("PASSED")), {})
    del first
    gc.collect()
    assert not watched.alive


def test_a_kept_read_lets_its_rows_go_and_gives_an_equal_session_back() -> None:
    """Between two reads the watch keeps the last one as values (KeptRead), not as rows: the memo
    still finds an equal row equal, and a wait that ends early judges the same session."""
    import gc
    import weakref

    from runner.job.verdicts import KeptRead

    memo = OutcomeMemo()
    failed = {**_row("FAILED", ["g1"]).model_dump(), "testSessionResultId": "r2", "checkId": "c2"}
    # Unknown fields are kept, whatever their names (`cls` is one of model_construct's own).
    extra = SessionResult.model_validate({**failed, "errorMessage": "boom", "cls": 1, "_fields_set": 2})
    first = _session(_row("PASSED"), extra)
    kept = KeptRead(first)
    for check in check_rows(first):
        memo.outcome(first, check, {}, kept=kept)
    kept.release()
    watched = weakref.finalize(first.results[0], lambda: None)
    again = kept.read()
    assert again == first and [r.model_fields_set for r in again.results] == [
        r.model_fields_set for r in first.results
    ]
    assert again.results[1].model_extra == {"errorMessage": "boom", "cls": 1, "_fields_set": 2}
    del first
    gc.collect()
    assert not watched.alive
    for check, before in zip(check_rows(again), memo._last.values(), strict=True):
        assert memo.outcome(again, check, {}) is before[1]  # equal rows: not judged again
