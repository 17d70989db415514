"""Known or new against one long-lived emulator over real HTTP: groups persist across sessions, seeds
carry their firstSeen, and a run's results.json classifies through runner/job/known.py."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import auth_headers
from emulator_ids import CHECKOUT, KNOWN_CHECKOUT_GROUP, PROFILE
from helpers import cli_run

from runner.emulator import Emulator
from runner.job.known import mark_known
from runner.models import ErrorGroup, TestSession

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def finished(api: Any, check_id: str) -> TestSession:
    body = {"name": "ci", "runLocation": "eu-west-1", "target": {"checkId": [check_id]}}
    started = api("POST", "/v1/test-sessions/trigger", json=body)
    assert started.status_code == 201, started.text
    done = api("GET", f"/v1/test-sessions/{started.json()['testSessionId']}/completion?maxWaitSeconds=10")
    assert done.status_code == 200, done.text
    return TestSession.model_validate(done.json())


def group(api: Any, group_id: str) -> ErrorGroup:
    response = api("GET", f"/v1/test-session-error-groups/{group_id}")
    assert response.status_code == 200, response.text
    return ErrorGroup.model_validate(response.json())


def test_a_failure_of_an_earlier_session_was_first_seen_before_the_next_one(api: Any) -> None:
    first = finished(api, PROFILE)
    (group_id,) = first.errorGroupIds
    fresh = group(api, group_id)
    assert fresh.firstSeen is not None and first.startedAt is not None
    assert fresh.firstSeen >= first.startedAt  # new in the first session
    second = finished(api, PROFILE)
    assert second.errorGroupIds == [group_id]  # same check, same cleaned message: one group
    again = group(api, group_id)
    assert second.startedAt is not None and again.lastSeen is not None
    assert again.firstSeen == fresh.firstSeen < second.startedAt  # known in the second session
    assert again.lastSeen >= second.startedAt  # lastSeen has moved to this session: see known.py


def test_the_seeded_group_is_hit_and_reads_back_three_days_old(api: Any) -> None:
    session = finished(api, CHECKOUT)
    assert session.errorGroupIds == [KNOWN_CHECKOUT_GROUP]
    seeded = group(api, KNOWN_CHECKOUT_GROUP)
    assert session.startedAt is not None and seeded.firstSeen is not None and seeded.lastSeen is not None
    age = session.startedAt - seeded.firstSeen
    assert timedelta(days=3) <= age < timedelta(days=3, minutes=10)
    assert seeded.lastSeen >= session.startedAt and "cart" in (seeded.rawErrorMessage or "")


def test_an_iso_seed_reads_back_exactly_and_bad_seeds_are_refused(
    world_factory: Any, default_world: dict[str, Any]
) -> None:
    from runner.emulator.core.world import WorldError, parse_world

    groups = default_world["accounts"][0]["errorGroups"]
    groups[1].update(firstSeen="2024-01-02T03:04:05Z", lastSeen="2024-02-03T04:05:06+01:00")
    emu: Emulator = world_factory(default_world)
    answer = requests.get(
        f"{emu.url}/v1/test-session-error-groups/{KNOWN_CHECKOUT_GROUP}", headers=auth_headers(emu), timeout=5
    ).json()
    seen = ErrorGroup.model_validate(answer)
    assert (seen.firstSeen, seen.lastSeen) == (
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        datetime(2024, 2, 3, 3, 5, 6, tzinfo=timezone.utc),
    )
    for change, expected in [
        ({"firstSeen": "3 days ago"}, "expected a time ago like -3d"),
        ({"firstSeen": "2999-01-01"}, "must not be in the future"),
        ({"firstSeen": "-1d", "lastSeen": "-2d"}, "errorGroups[1].lastSeen: before firstSeen"),
        ({"kind": "session"}, "errorGroups[1].kind"),
    ]:
        bad = json.loads(json.dumps(default_world))
        bad["accounts"][0]["errorGroups"][1].update(change)
        with pytest.raises(WorldError, match=expected.replace("[", r"\[").replace("]", r"\]")):
            parse_world(bad, "w.yml")
    twice = json.loads(json.dumps(default_world))
    twice["accounts"][0]["errorGroups"].append(
        {**groups[1], "id": "another", "rawErrorMessage": groups[1]["rawErrorMessage"] + "?id=5"}
    )
    with pytest.raises(WorldError, match="the same check and cleaned message"):
        parse_world(twice, "w.yml")


run = partial(cli_run, rca=False, reports=("json",))  # run(OUT_DIR, *ARGV): (exit code, results.json)


def test_runs_demo_known_and_new_from_their_results_json(cli_env: Emulator, tmp_path: Path) -> None:
    first = mark_known(run(tmp_path / "one", "run", str(EXAMPLES / "testsession.yml")).outcome)
    results = {r.name: r for r in first.all_results()}
    checkout, profile = results["Checkout flow"], results["Profile page script"]
    assert first.sessions[0].startedAt is not None and checkout.firstSeen is not None
    assert checkout.known is True and first.sessions[0].startedAt - checkout.firstSeen >= timedelta(days=3)
    assert checkout.lastSeenBefore is None  # the service's lastSeen is this session's failure now
    assert profile.known is False and profile.firstSeen is not None
    assert profile.firstSeen >= first.sessions[0].startedAt
    assert all(r.known is None for r in results.values() if r.verdict in ("passed", "flaky", "degraded"))
    # The second run: the profile error, new in the first, is known now, first seen in the first run.
    second = mark_known(run(tmp_path / "two", "run", "--location", "eu-west-1", "--tag", "profile").outcome)
    (again,) = second.all_results()
    assert again.known is True and again.firstSeen == profile.firstSeen
    assert second.sessions[0].startedAt is not None and again.firstSeen < second.sessions[0].startedAt
