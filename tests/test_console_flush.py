"""A CI log gets a run's result lines together, in one write, not one each; every other line at once;
and what is held is written on every way out."""

from __future__ import annotations

import io
from typing import Any, cast

import pytest
from outcome_factory import result

from runner.ci.console import FLUSH_SECONDS, Console
from runner.cli.main import main
from runner.core.exitcodes import ExitCode
from runner.job.events import Drained, Event, Note, Progress, ResultFinished, Tick, Where
from runner.job.run import Runner


class _Log(io.StringIO):
    """An unbuffered pipe's stream (PYTHONUNBUFFERED, as CI runners set it): a write is a write(2)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def _console(now: list[float]) -> tuple[Console, _Log]:
    """A console in a run: the Runner says Drained after each drain of its queue."""
    log = _Log()
    console = Console(stream=log, environ={}, clock=lambda: now[0])
    console.notify(Drained())
    return console, log


def test_result_lines_go_out_together_with_the_next_event() -> None:
    now = [0.0]
    console, log = _console(now)
    where = Where("Deploy checks", "eu-west-1")
    console.notify(Progress(where, 0.0, (), 100, 0))
    for number in range(100):
        console.notify(ResultFinished(where, result("passed", f"check {number}", result_id=str(number))))
    assert log.getvalue().count("check ") == 0 and log.writes == 0
    console.notify(Drained())  # the run's queue drained: they wait for the next event still
    assert log.writes == 0
    console.notify(Tick(0.5))  # the next event writes them (a Tick comes every second)
    assert log.getvalue().count("check ") == 100 and log.writes == 1
    assert log.getvalue().index("check 0 ") < log.getvalue().index("check 99 ")


def test_a_held_line_waits_no_longer_than_flush_seconds_and_other_lines_never() -> None:
    now = [0.0]
    console, log = _console(now)
    where = Where("Deploy checks", "eu-west-1")
    console.notify(ResultFinished(where, result("passed", "first", result_id="1")))
    assert "first" not in log.getvalue()
    now[0] = FLUSH_SECONDS
    console.notify(ResultFinished(where, result("failed", "second", result_id="2", error="boom")))
    assert "first" in log.getvalue() and "second" in log.getvalue()
    console.notify(ResultFinished(where, result("passed", "third", result_id="3")))
    now[0] = 2 * FLUSH_SECONDS
    console.notify(Drained())  # a drain's end, FLUSH_SECONDS after the last write
    assert "third" in log.getvalue()
    console.notify(ResultFinished(where, result("passed", "fourth", result_id="4")))
    console.notify(Note("a note of our own"))
    assert log.getvalue().endswith("a note of our own\n")
    assert log.getvalue().index("fourth") < log.getvalue().index("a note of our own")


def test_a_terminal_gets_every_result_line_at_once() -> None:
    now = [0.0]
    console, log = _console(now)
    console.interactive = True  # a terminal's live line is redrawn under each line: no holding
    console.notify(ResultFinished(Where("Deploy checks", "eu-west-1"), result("passed", "shown")))
    assert "shown" in log.getvalue()


def test_a_console_driven_event_by_event_writes_each_line_at_once() -> None:
    log = _Log()
    console = Console(stream=log, environ={})
    console.notify(ResultFinished(Where("Deploy checks", "eu-west-1"), result("passed", "shown")))
    assert "shown" in log.getvalue()


class _Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def notify(self, event: Event) -> None:
        self.events.append(event)


def test_the_runner_says_drained_after_each_drain_of_its_queue() -> None:
    recorder = _Recorder()
    runner = Runner(cast(Any, None), cast(Any, None), recorder)
    where = Where("Deploy checks", "eu-west-1")
    finished = [ResultFinished(where, result("passed", f"check {n}", result_id=str(n))) for n in range(3)]
    for event in finished:
        runner.events.put(event)
    runner._pump([], timeout=0.0)
    assert recorder.events == [*finished, Drained()]
    runner._pump([], timeout=0.0)  # nothing queued: nothing said
    assert recorder.events == [*finished, Drained()]
    runner._pump([], timeout=0.01)  # a quiet wait that ended: held lines may go out now
    assert recorder.events == [*finished, Drained(), Drained()]


def test_held_result_lines_are_written_when_a_bug_ends_the_run(
    cli_env: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug between two events (simulated in the Runner's record of the event after a result's,
    before the console hears of it) ends the run with a traceback: the result lines the console held for the
    log are written first. Before, they were lost (up to FLUSH_SECONDS of them)."""
    from runner.job import run

    record, results = run._Seen.record, []

    def broken(self: run._Seen, event: Event) -> None:
        if results and not isinstance(event, ResultFinished):  # the next event after a result's
            raise ZeroDivisionError("division by zero")
        if isinstance(event, ResultFinished):
            results.append(event)
        record(self, event)

    monkeypatch.setattr(run._Seen, "record", broken)
    code = main(
        ["run", "--location", "eu-west-1", "--tag", "smoke", "--junit", "", "--markdown", "", "--json", ""]
    )
    captured = capsys.readouterr()
    assert code == ExitCode.SERVICE and "ZeroDivisionError" in captured.err
    assert "Homepage loads" in captured.out, captured.out
