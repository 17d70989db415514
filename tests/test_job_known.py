"""Known or new (runner/job/known.py): each rule, on outcomes built by hand."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from outcome_factory import result

from runner.job.known import classify, mark_known, run_start
from runner.job.outcome import ErrorGroupOutcome, Outcome, SessionOutcome

START = datetime(2024, 5, 17, 12, 0, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
SEC = timedelta(seconds=1)


def group(gid: str, first: datetime | None, last: datetime | None = None) -> ErrorGroupOutcome:
    return ErrorGroupOutcome(id=gid, firstSeen=first, lastSeen=last if last is not None else first)


def test_group_first_seen_before_the_session_is_known_with_first_seen() -> None:
    got = classify([group("g", START - 3 * DAY, START + 4 * SEC)], START)
    assert got.known is True and got.firstSeen == START - 3 * DAY


def test_last_seen_within_this_session_is_not_reported_as_before() -> None:
    # The service moved lastSeen to this session's failure: when it was seen before is lost.
    got = classify([group("g", START - 3 * DAY, START + 4 * SEC)], START)
    assert got.lastSeenBefore is None


def test_last_seen_still_before_the_session_is_reported() -> None:
    got = classify([group("g", START - 3 * DAY, START - DAY)], START)
    assert got.known is True and got.lastSeenBefore == START - DAY


def test_group_first_seen_in_this_session_is_new() -> None:
    got = classify([group("g", START + 4 * SEC)], START)
    assert got.known is False and got.firstSeen == START + 4 * SEC and got.lastSeenBefore is None


def test_first_seen_at_the_start_instant_is_new() -> None:
    assert classify([group("g", START)], START).known is False


def test_one_new_group_among_known_ones_makes_the_failure_new() -> None:
    got = classify([group("old", START - DAY), group("fresh", START + SEC)], START)
    assert got.known is False and got.firstSeen == START + SEC


def test_known_takes_the_earliest_first_seen_and_latest_last_seen_before() -> None:
    got = classify(
        [group("a", START - 5 * DAY, START - 2 * DAY), group("b", START - 3 * DAY, START - DAY)], START
    )
    assert got.known is True and got.firstSeen == START - 5 * DAY and got.lastSeenBefore == START - DAY


def test_unread_group_cannot_be_told_unless_another_is_new() -> None:
    unread = ErrorGroupOutcome(id="u")
    assert classify([group("a", START - DAY), unread], START).known is None
    assert classify([group("a", START + SEC), unread], START).known is False


def test_no_groups_or_no_start_cannot_be_told() -> None:
    assert classify([], START).known is None
    assert classify([group("a", START - DAY)], None).known is None


def test_times_without_a_zone_are_utc() -> None:
    naive_first = (START - DAY).replace(tzinfo=None)
    assert classify([group("a", naive_first)], START).known is True
    assert classify([group("a", START - DAY)], START.replace(tzinfo=None)).known is True


def _outcome(fail_on_degraded: bool = False) -> Outcome:
    eu = SessionOutcome(
        name="s",
        runLocation="eu-west-1",
        startedAt=START + 2 * SEC,
        results=[
            result("failed", "known", group_ids=["g-old"]),
            result("error", "new", group_ids=["g-new"]),
            result("passed", "passed"),
            result("flaky", "flaky", group_ids=["g-old"]),
            result("degraded", "degraded"),
            result("failed", "unread", group_ids=["g-missing"]),
            result("failed", "sibling-first", group_ids=["g-sib"]),
        ],
        errorGroups=[
            group("g-old", START - 3 * DAY, START + 5 * SEC),
            group("g-new", START + 5 * SEC),
            group("g-sib", START + SEC),
        ],
    )
    # A sibling session that started earlier: its start is the run's start.
    us = SessionOutcome(
        name="s",
        runLocation="us-east-1",
        startedAt=START,
        results=[result("failed", "sibling", group_ids=["g-sib"])],
        errorGroups=[group("g-sib", START + SEC)],
    )
    return Outcome(sessions=[eu, us], failOnDegraded=fail_on_degraded)


def test_mark_known_sets_failing_results_and_leaves_passing_ones_null() -> None:
    source = _outcome()
    marked = mark_known(source)
    by_name = {r.name: r for r in marked.all_results()}
    assert by_name["known"].known is True and by_name["known"].firstSeen == START - 3 * DAY
    assert by_name["known"].lastSeenBefore is None
    assert by_name["new"].known is False and by_name["new"].firstSeen == START + 5 * SEC
    assert by_name["unread"].known is None
    # First seen by the sibling session, before this session started but after the run did: new.
    assert by_name["sibling-first"].known is False and by_name["sibling"].known is False
    for name in ("passed", "flaky", "degraded"):
        assert by_name[name].known is None and by_name[name].firstSeen is None
    assert all(r.known is None for r in source.all_results())  # a copy: the input is unchanged


def test_run_start_is_the_earliest_session_start() -> None:
    assert run_start(_outcome()) == START
    assert run_start(Outcome()) is None


def test_round_trip_through_json_keeps_the_fields() -> None:
    marked = mark_known(_outcome())
    data = marked.model_dump(mode="json")
    first = data["sessions"][0]["results"][0]
    assert first["known"] is True and first["firstSeen"] == "2024-05-14T12:00:00Z"
    assert data["sessions"][0]["results"][2]["known"] is None
    assert Outcome.model_validate(data) == marked
