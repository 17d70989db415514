"""One read of a running session of 1,000 results: each result that became final is reported once,
with its error message and known/new, and the read builds each result once, however many became
final in it, and a read that changed nothing builds none (runner/job/session.py `_Watch._observe`; a
running session is read every few seconds).

The error groups are the emulator's own, read over real HTTP; the session's answer is a real one,
its results repeated to 1,000 as a big account's session would list them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from emulator_ids import CHECKOUT, HOMEPAGE, PROFILE

from runner.client import ApiClient
from runner.client.polling import wait_for_session
from runner.emulator import Emulator
from runner.job import verdicts
from runner.job.analyses import AnalysisPlan, GroupReader
from runner.job.events import Event, ResultFinished, Where
from runner.job.outcome import ResultOutcome
from runner.job.plan import SessionPlan
from runner.job.session import SessionWorker, _Watch
from runner.models import Target, TestSession, TriggerRequest

WHERE = Where("Deploy checks", "eu-west-1")
SIZE = 1000


def big(session: TestSession, status: str | None = None) -> TestSession:
    """The session's results repeated to SIZE, each a check of its own; every one RUNNING with `status`."""
    rows = []
    for n in range(SIZE):
        row = session.results[n % len(session.results)]
        update: dict[str, Any] = {
            "testSessionResultId": f"{row.testSessionResultId}-{n}",
            "checkId": f"{row.checkId}-{n}",
            "name": f"{row.name} #{n}",
        }
        if status is not None:
            update |= {"status": status, "errorGroupIds": []}
        rows.append(row.model_copy(update=update))
    return session.model_copy(update={"results": rows, "status": "RUNNING"})


def test_a_read_reports_what_became_final_once_and_builds_each_result_once(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []

    class Counted(ResultOutcome):
        def __init__(self, **data: Any) -> None:
            built[-1] += 1
            super().__init__(**data)

    monkeypatch.setattr(verdicts, "ResultOutcome", Counted)
    events: list[Event] = []
    with ApiClient(emulator.url, emulator.api_key, emulator.account_id) as client:
        target = Target(checkId=[HOMEPAGE, CHECKOUT, PROFILE])  # a pass, a known and a new failure
        started = client.trigger(TriggerRequest(name="deploy", runLocation="eu-west-1", target=target))
        final = wait_for_session(client, started.testSessionId, time.monotonic() + 30)
        assert final is not None
        final = client.get_session(final.testSessionId)  # with its results
        failing = {r.name for r in final.results if r.status == "FAILED"}
        assert failing and len(failing) < len(final.results)
        plan = SessionPlan(analyses=AnalysisPlan(enabled=False))
        worker = SessionWorker(client, plan, WHERE, None, events.append, threading.Event(), lambda: None)
        reader = GroupReader(client, plan.analyses, WHERE, events.append, worker.stop, worker.clock)
        running = big(final, "RUNNING")
        watch = _Watch(worker, reader, running)
        try:
            for read in (running, big(final), big(final)):  # nothing final; all 1,000 at once; no change
                built.append(0)
                watch._observe(read)
        finally:
            reader.finish(None, wait=False)

    # One build of each result per read, never two; a read that changed nothing builds none (OutcomeMemo).
    assert built == [SIZE, SIZE, 0]
    finished = [e.result for e in events if isinstance(e, ResultFinished)]
    assert len(finished) == SIZE and len({r.id for r in finished}) == SIZE  # each once, in one read
    failures = [r for r in finished if r.verdict in ("failed", "error")]
    assert {r.name.split(" #")[0] for r in failures} >= failing
    told: dict[str, frozenset[bool | None]] = {}
    for result in failures:  # the message its error group's read gave, and known or new told from it
        assert result.error and not result.error.startswith("result status"), result
        name = result.name.split(" #")[0]
        told[name] = told.get(name, frozenset()) | {result.known}
    # The default world seeds Checkout flow's failure as seen 3 days ago; the profile's is first seen now.
    assert told == {"Checkout flow": {True}, "Profile page script": {False}}, told
