"""The console front end: renders the run's events as they happen, in a terminal or a CI log.

- A terminal gets plain lines plus one live status line below them, redrawn in place and fitted to
  the terminal's width at each redraw (about once a second), so a resize leaves no wrapped remains.
- A pipe (CI log) gets plain lines only, and a heartbeat naming what still runs whenever nothing was
  printed for HEARTBEAT_SECONDS. Each line is written and flushed at once but, in a run (the Runner
  says Drained after each drain of its queue), results' lines: those go out together, in one write,
  at the next other event (a Progress, at least every second a Tick) or once FLUSH_SECONDS passed
  since the last write, so that 10,000 results are not 10,000 writes (and wake-ups of the log's
  reader; a CI runner's PYTHONUNBUFFERED makes each print a write). Whatever is held is written on
  every way out of the run too (`flush`, cli/job.py): a bug between two events loses no line.
- Each failure's details go in a collapsible section in the CI platform's syntax (`ci/platform.py`):
  a `::group::` on GitHub, a `section_start` on GitLab.
- Every text from outside passes `for_line` (no escapes, controls or line breaks: no workflow
  commands) and then the run's Redactor. NO_COLOR and TERM=dumb turn colour off.
- A console that cannot be written (stdout closed) goes quiet; it never changes the verdict.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from runner.ci.platform import CiPlatform, platform_for
from runner.core import clock as wall
from runner.core.ciprovider import in_ci
from runner.core.redact import Redactor
from runner.core.text import for_line
from runner.core.words import counted, first_of
from runner.job.digest import Digest, Item
from runner.job.events import (
    AnalysesWaiting,
    AnalysisReady,
    Cancelled,
    DeadlinePassed,
    Drained,
    Event,
    Finished,
    NoMatch,
    Note,
    Progress,
    ResultFinished,
    Retrying,
    SessionFailed,
    SessionFinished,
    Stopping,
    Tick,
    Triggered,
    Where,
)
from runner.job.history import READY_RUNS, describe_unstable, key_of, lately
from runner.job.history import describe as describe_history
from runner.job.known import history
from runner.job.outcome import HistoryOutcome, ResultOutcome
from runner.job.policy import LABELS, Gate, failing_verdict, quarantined, result_fails

if TYPE_CHECKING:
    from runner.job.quarantine import Quarantine
    from runner.state.store import CheckRun

HEARTBEAT_SECONDS = 25.0  # a CI log is never silent for 30 s while the run waits
FLUSH_SECONDS = 0.25  # a CI log's result lines are written together at most this often
MAX_SUITE_TESTS = 50  # a Playwright check suite's tests shown under its line (all of them are in the reports)
QUIET, NORMAL, VERBOSE = -1, 0, 1

_COLORS = {
    "passed": "32",
    "flaky": "33",
    "degraded": "33",
    "failed": "31",
    "error": "31",
    "running": "35",
    "cancelled": "90",
}
_RUN_COLORS = {"passed": "32", "detached": "36", "no-match": "33"}


_KEPT_PIECES = 64  # result-line pieces kept, whatever a service's results say


def _s(text: object, limit: int = 1000) -> str:
    return for_line(text, limit)


def _place(where: Where) -> str:
    return f"'{_s(where.name, 200)}' ({_s(where.location, 100)})"


@dataclass
class _Standing:
    """A session's last Progress less the results that finished since: a finished check leaves
    "running" in the very redraw that prints its line (the next Progress would drop it only after
    the line stood under a status still naming it). A set, not a new copy of the results per line."""

    progress: Progress
    finished: set[str] = field(default_factory=set)

    @property
    def done(self) -> int:
        return min(self.progress.done + len(self.finished), self.progress.total)

    def running(self) -> list[str]:
        """The names of the running checks the Progress named, less those finished since."""
        return [r.name for r in self.progress.running if r.id not in self.finished]


def _running(standings: Sequence[_Standing], most: int, limit: int) -> str:
    """'a, b, c and 4 more': the first `most` running checks named; the rest counted, the unfinished
    checks no Progress names among them."""
    names = [_s(name, limit) for s in standings for name in s.running()][:most]
    more = sum(s.progress.total - s.done for s in standings) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 and names else "")


class Console:
    def __init__(
        self,
        stream: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        verbosity: int = NORMAL,
        gate: Gate | None = None,
        errors: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        platform: CiPlatform | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.platform = platform or platform_for(env)
        self.stream = stream or sys.stdout
        self.errors = errors or sys.stderr  # -v lines go here, as the help says
        self.redact = redactor or Redactor()
        self.verbosity = verbosity
        self.gate = gate or Gate()
        self.clock = clock
        is_tty = _isatty(self.stream)
        self.interactive = is_tty and not in_ci(env) and env.get("TERM") != "dumb"
        self.color = is_tty and "NO_COLOR" not in env and env.get("TERM") != "dumb"
        self.broken = False
        self._live = ""  # the live line's text, "" when none
        self._shown = ""  # what of it is on the screen (cut to the width it was drawn at)
        self._last_line = self._flushed = clock()
        self._pending: list[str] = []  # result lines for a CI log, not written yet
        # A Runner says when it has handed every queued event (Drained): only then are result lines
        # held; a console driven event by event writes each line at once.
        self._batching = False
        self._progress: dict[Where, _Standing] = {}
        self._analyses: dict[Where, int] = {}  # analyses still awaited after a session's end
        self._elapsed = 0.0
        # False on a local run: the embedded service's pages are gone once the run is over.
        self.show_links = True
        # With --state: each check's recorded runs before this one, by check key (job/history.py),
        # so that a failure's line says how often it failed lately; and the quarantine of the run.
        self.past_runs: Mapping[str, Sequence[CheckRun]] = {}
        self.quarantine: Quarantine | None = None
        self._printed: set[str] = set()  # checks whose result line is out
        self._held: dict[str, list[AnalysisReady]] = {}  # analyses waiting for their check's line
        self._causes: dict[str, str] = {}  # an analysis already printed -> for which checks
        # Per session, each finished check the gate would fail but for its quarantine (True), or
        # fails (False): its "finished: FAILED" line then says what the verdict will say.
        self._held_failures: dict[Where, dict[str, bool]] = {}
        # The pieces of a result line that repeat (its label, "API, eu-west-1"), made once each.
        self._labels: dict[str, str] = {}
        self._wheres: dict[tuple[str | None, str | None], str] = {}

    # --- writing ------------------------------------------------------------------------------

    def _emit(self, text: str, stream: TextIO | None = None, hold: bool = False) -> None:
        """`hold`: a result's line to a CI log, written with the next (see the module's doc)."""
        if self.broken:
            return
        out = stream or self.stream
        if hold and self._batching and out is self.stream and not self.interactive:
            self._pending.append(self.redact(text) + "\n")
            self._last_line = self.clock()
            return
        self._flush()  # what was held goes first (stdout and stderr may be one log)
        try:
            live = out is self.stream and bool(self._shown)
            if live:
                out.write(self._erase())
            out.write(self.redact(text) + "\n")
            if live:
                self._shown = self._fit(self._live)
                out.write(self._shown)
            out.flush()
        except (OSError, ValueError):  # closed or broken: say nothing more, change nothing else
            self.broken = True
        self._last_line = self.clock()

    def _flush(self) -> None:
        """The result lines held for a CI log, out now in one write."""
        if not self._pending or self.broken:
            return
        text = "".join(self._pending)
        self._pending, self._flushed = [], self.clock()
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.broken = True

    def flush(self) -> None:
        """What is held, out now: on every way out of a run (cli/job.py), a bug's included."""
        self._flush()

    def line(self, text: str, hold: bool = False) -> None:
        """A line of our own wording; every piece from outside was passed through `_s` already."""
        if self.verbosity > QUIET:
            self._emit(text, hold=hold)

    def always(self, text: str, hold: bool = False) -> None:
        self._emit(text, hold=hold)

    def verbose(self, text: str) -> None:
        if self.verbosity >= VERBOSE:
            self._emit(f"  · {text}", self.errors)

    def _draw(self, text: str) -> None:
        if not self.interactive or self.broken:
            return
        self._live = self.redact(text)  # before it is cut: a cut secret would no longer match
        shown = self._fit(self._live)
        try:
            self.stream.write(self._erase() + shown)
            self.stream.flush()
        except (OSError, ValueError):
            self.broken = True
        self._shown = shown

    def _columns(self) -> int:
        """The terminal's width now (it may have been resized since the last draw)."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        # A terminal that reports no size (0 columns, as a new pseudo-terminal does): the usual guess.
        return columns if columns > 0 else shutil.get_terminal_size((100, 20)).columns

    def _fit(self, text: str) -> str:
        width = max(20, self._columns() - 1)
        return text if len(text) <= width else text[: width - 1] + "…"

    def _erase(self) -> str:
        """Back to the start of the live line and clear it. It was drawn one row wide; a terminal
        made narrower since has wrapped it over several rows, which are all cleared."""
        if not self._shown:
            return "\r\033[K"
        rows = -(-len(self._shown) // max(1, self._columns()))
        return f"\r\033[{rows - 1}A\033[J" if rows > 1 else "\r\033[K"

    def clear_status(self) -> None:
        if self._shown:
            self._draw("")
        self._live = self._shown = ""

    def paint(self, verdict: str, text: str, colors: Mapping[str, str] = _COLORS) -> str:
        if not self.color or verdict not in colors:
            return text
        return f"\033[{colors[verdict]}m{text}\033[0m"

    def mask(self, values: list[str]) -> None:
        """GitHub hides a value in its logs only once told, before the value is ever printed."""
        commands = self.platform.mask_commands(values)
        if not commands or self.broken:
            return
        self._flush()
        try:
            for command in commands:
                self.stream.write(command + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.broken = True

    @contextmanager
    def section(self, name: str, title: str, collapsed: bool = False) -> Iterator[None]:
        self._emit(self.platform.section_start(name, title, collapsed))
        try:
            yield
        finally:
            end = self.platform.section_end(name)
            if end is not None:
                self._emit(end)

    # --- results ------------------------------------------------------------------------------

    def result_line(self, result: ResultOutcome, tail: str = "", since: datetime | None = None) -> str:
        """A check's line; a failure's with its error and its known/new mark (`since`: the session's
        start, which a known error's age counts from). The live line knows the error group's half
        of the history only: the baseline is compared at the end, in the digest."""
        seconds = result.durationSeconds
        duration = "" if seconds is None else f" {seconds:.1f}s"
        if seconds is not None and seconds < 1:  # real checks answer in milliseconds: not "0.0s"
            duration = f" {seconds * 1000:.0f} ms"
        attempts = f", {result.attempts} attempts" if result.attempts > 1 else ""
        if result.verdict == "running" and attempts:
            attempts = f" ({result.attempts} attempts so far)"
        label = self._labels.get(result.verdict)
        if label is None:
            label = self.paint(result.verdict, f"{LABELS.get(result.verdict, result.verdict).upper():<14}")
            if len(self._labels) < _KEPT_PIECES:  # a service's own verdict words are not kept
                self._labels[result.verdict] = label
        where = self._wheres.get((result.checkType, result.runLocation))
        if where is None:
            kind = f"{_s(result.checkType, 40)}, " if result.checkType else ""
            where = f"{kind}{_s(result.runLocation, 100) or '?'}"
            if len(self._wheres) < _KEPT_PIECES:  # nor every location a service may name
                self._wheres[(result.checkType, result.runLocation)] = where
        text = f"  {label} {_s(result.name, 300)} ({where}){duration}{attempts}"
        if tail:
            return f"{text} {tail}"
        if result.verdict != "running" and failing_verdict(result, fail_on_degraded=True):
            note = history(result, since).tag
            if result.error:
                text += f" — {_s(result.error, 300)}"
            if note:
                text += f" [{note}]"
            past = self.past_runs.get(key_of(result))
            recorded = result.history or (lately(past, result, wall.now()) if past else None)
            if recorded is not None:
                text += f" · {describe_history(recorded)}"
            held = result.quarantined or (self.quarantine.of(result) if self.quarantine else None)
            if held is not None:
                text += f" · quarantined, not gating (owner {_s(held.owner, 200)})"
        return text

    def _tally(self, event: ResultFinished) -> None:
        """The gate's own decision (job/policy.py) on a finished check, its quarantine applied as
        the run will apply it."""
        result = event.result
        held = result.quarantined or (self.quarantine.of(result) if self.quarantine else None)
        if held is not None and result.quarantined is None:
            result = result.model_copy(update={"quarantined": held})
        tally = self._held_failures.setdefault(event.where, {})
        if quarantined(result, self.gate):
            tally[result.name] = True
        elif result_fails(result, self.gate):
            tally[result.name] = False

    def _quarantine_note(self, where: Where) -> str:
        """' (2 quarantined checks; the gate passes them)': a session that failed only by checks in
        quarantine must not read as a failed gate beside a verdict that passed."""
        tally = self._held_failures.pop(where, {})
        held = sum(tally.values())
        if not held:
            return ""
        them = "it" if held == 1 else "them"
        if held == len(tally):
            return f" ({counted(held, 'quarantined check')}; the gate passes {them})"
        failing = len(tally) - held
        return (
            f" ({counted(held, 'quarantined check')}, the gate passes {them}; "
            f"{counted(failing, 'other check')} {'fails' if failing == 1 else 'fail'} it)"
        )

    def _result(self, event: ResultFinished) -> None:
        self._tally(event)
        # A known failure forgiven by `failOn: new` is still a failure: -q shows it too.
        line = self.result_line(event.result, since=event.since)
        failing = failing_verdict(event.result, self.gate.fail_on_degraded)
        if failing:
            self.always(line, hold=True)
        else:
            self.line(line, hold=True)
        for test in event.result.tests[:MAX_SUITE_TESTS]:  # a Playwright check suite's own tests
            runs = f" ({test.runs} runs)" if test.runs > 1 else ""
            text = f"      {_s(test.status, 30):<9} {_s(test.name, 300)}{runs}"
            if failing:
                self.always(text, hold=True)
            else:
                self.line(text, hold=True)

    # --- events -------------------------------------------------------------------------------

    def notify(self, event: Event) -> None:
        if self._pending and not isinstance(event, (ResultFinished, Drained)):
            self._flush()
        if isinstance(event, Drained):
            self._batching = True
            if self._pending and self.clock() - self._flushed >= FLUSH_SECONDS:
                self._flush()
        elif isinstance(event, Triggered):
            verb = "Following test session" if event.followed else "Test session"
            shown = event.link if event.link and self.show_links else event.session_id
            self.always(f"{verb} {_place(event.where)}: {_s(shown)}")
        elif isinstance(event, NoMatch):
            self.always(
                f"Test session {_place(event.where)}: no check matched the target ({_s(event.message)})"
            )
        elif isinstance(event, ResultFinished):
            self._no_longer_running(event)
            self._result(event)
            self._printed.add(event.result.name)
            for held in self._held.pop(event.result.name, []):
                self._analysis(held)
            if self._pending and self.clock() - self._flushed >= FLUSH_SECONDS:
                self._flush()
        elif isinstance(event, Progress):
            self._progress[event.where] = _Standing(event)
            self._draw_status()
        elif isinstance(event, Tick):
            self._elapsed = event.elapsed
            self._draw_status()
            self._heartbeat()
        elif isinstance(event, SessionFinished):
            self._progress.pop(event.where, None)
            self.clear_status()
            self.line(
                f"Test session {_place(event.where)} finished: {_s(event.status, 40)}"
                f"{self._quarantine_note(event.where)} after {event.elapsed:.1f} s"
            )
        elif isinstance(event, DeadlinePassed):
            self._deadline(event)
        elif isinstance(event, SessionFailed):
            self._progress.pop(event.where, None)
            if event.traceback:  # an internal error: its traceback first, as for any bug of the tool
                for line in event.traceback.splitlines():
                    indent = " " * (len(line) - len(line.lstrip(" ")))  # the frames' layout
                    self._emit(indent + _s(line, 2000), self.errors)
            self.always(f"Test session {_place(event.where)}: {_s(event.problem)}")
        elif isinstance(event, Stopping):
            self.clear_status()
            if event.hurry:
                self.always("stopping now: writing what is known")
            else:
                self.always(f"cancelling ... ({_s(event.reason)}; press Ctrl-C again to stop at once)")
        elif isinstance(event, Cancelled):
            if event.problem:
                self.always(f"could not cancel test session {_s(event.session_id)}: {_s(event.problem)}")
            else:
                self.line(f"Test session {_place(event.where)} cancelled")
        elif isinstance(event, AnalysesWaiting):
            self._analyses[event.where] = event.count
            self.line(
                f"Waiting for {counted(event.count, 'root cause analysis')} of "
                f"{_place(event.where)} (up to {event.timeout:g} s)"
            )
        elif isinstance(event, AnalysisReady):
            left = self._analyses.pop(event.where, 0) - 1
            if left > 0:
                self._analyses[event.where] = left
            self._analysis(event)
        elif isinstance(event, Retrying):
            # `answer` says what happened: "the service answered 503 ..." or "could not connect ...".
            self.line(
                f"{event.method} {_s(event.path, 200)}: {_s(event.answer, 200)}; "
                f"retry {event.attempt} in {event.delay:.1f} s"
            )
        elif isinstance(event, Note):
            if event.verbose:
                self.verbose(_s(event.text))
            elif event.always:
                self.always(_s(event.text))
            else:
                self.line(_s(event.text))
        elif isinstance(event, Finished):
            self.finish(event.digest, event.written)

    def _analysis(self, event: AnalysisReady) -> None:
        analysis = event.group.analysis.analysis if event.group.analysis else None
        if analysis is None:
            return
        waiting = [name for name in event.checks if name not in self._printed]
        if waiting:  # a check still retrying: its analysis follows its own line
            self._held.setdefault(waiting[0], []).append(event)
            return
        checks = ", ".join(_s(c, 200) for c in event.checks[:5]) or f"error group {_s(event.group.id)}"
        cause = f"{_s(analysis.classification, 100)}: {_s(analysis.rootCause, 600)}"
        earlier = self._causes.get(_same_cause(cause))
        if earlier is not None:  # the same paragraph once, not once per check
            self.line(f"  analysis for {checks}: {_s(analysis.classification, 100)}, as for {earlier}")
            return
        self._causes[_same_cause(cause)] = checks
        self.line(f"  analysis for {checks}: {cause}")

    def _deadline(self, event: DeadlinePassed) -> None:
        self._progress.pop(event.where, None)
        self.clear_status()
        n, total = len(event.unfinished), len(event.unfinished) + len(event.finished)
        self.always(
            f"Test session {_place(event.where)}: the {event.timeout:g} s deadline passed with {n} of "
            f"{counted(total, 'check')} unfinished; cancelling the session"
        )
        for result in event.finished:
            self.line(self.result_line(result))
        for result in event.unfinished:
            self.always(self.result_line(result, f"still running after {event.timeout:g} s"))

    def _status_text(self) -> str:
        total = sum(s.progress.total for s in self._progress.values())
        done = sum(s.done for s in self._progress.values())
        names = _running(list(self._progress.values()), 4, 60)
        return f"… {self._elapsed:.0f} s · {done}/{total} done" + (f" · running: {names}" if names else "")

    def _draw_status(self) -> None:
        if not self.interactive or not self._progress:
            return
        self._draw(self._status_text())

    def _no_longer_running(self, event: ResultFinished) -> None:
        standing = self._progress.get(event.where)
        if standing is None:
            return
        standing.finished.add(event.result.id)
        if self.interactive and self._live and not self.broken:
            self._live = self.redact(self._status_text())

    def _heartbeat(self) -> None:
        waiting = self._progress or self._analyses
        if self.interactive or not waiting or self.clock() - self._last_line < HEARTBEAT_SECONDS:
            return
        for where, count in self._analyses.items():
            if where not in self._progress:
                analyses = counted(count, "root cause analysis")
                self.always(f"… {_place(where)}: {self._elapsed:.0f} s, waiting for {analyses}")
        for standing in self._progress.values():
            progress = standing.progress
            names = _running([standing], 10, 100)
            self.always(
                f"… {_place(progress.where)}: {self._elapsed:.0f} s, {standing.done}/{progress.total} done"
                + (f"; still running: {names}" if names else "")
            )

    # --- the end ------------------------------------------------------------------------------

    def finish(self, digest: Digest, written: Mapping[str, object]) -> None:
        self.clear_status()
        self._progress.clear()
        self._analyses.clear()
        for held in [event for events in self._held.values() for event in events]:
            self._printed.update(held.checks)
            self._analysis(held)
        self._held.clear()
        if digest.failing and self.verbosity > QUIET:
            self.line("")
            for line in _nothing_listens(digest.failing):
                self.always(line)
            explained: dict[str, str] = {}  # a root cause already printed -> for which check
            for number, item in enumerate(digest.failing, 1):
                self._details(number, item, digest.outcome.message, explained)
        self._quarantine(digest)
        for kind, path in written.items():
            self.line(f"{kind} report: {_s(path)}")
        if digest.failure_split:
            self.line(f"failures: {digest.failure_split}")
        if digest.changes and digest.baseline is not None:
            self.line(f"since the baseline {_s(digest.baseline.path, 300)}: {digest.changes}")
        self.always(self.verdict_line(digest))

    def _details(self, number: int, item: Item, run_message: str | None, explained: dict[str, str]) -> None:
        result = item.result
        title = f"{item.label.upper()}: {_s(result.name, 200)} ({_s(item.location, 100)})"
        with self.section(f"testsession_failure_{number}", title, collapsed=True):
            if result.error:
                self.line(f"  error: {_s(result.error, 2000)}")
            if result.verdict == "running":
                why = item.session.problem or run_message
                self.line(f"  the run ended before it finished{': ' + _s(why, 500) if why else ''}")
            if item.history is not None:
                self.line(f"  {item.history.label}: {item.history.reason}")
            if result.history is not None:
                self.line(f"  history: {_history_details(result.history)}")
            if item.classification or item.root_cause:
                cause = f"({_s(item.classification, 100)}): {_s(item.root_cause, 2000)}"
                same = explained.get(_same_cause(cause))
                if same is not None:  # the same paragraph once, not once per check
                    self.line(f"  root cause: as for {same}")
                else:
                    explained[_same_cause(cause)] = _s(result.name, 200)
                    self.line(f"  root cause {cause}")
            if result.link and self.show_links:
                self.line(f"  {_s(result.link, 500)}")

    def _quarantine(self, digest: Digest) -> None:
        """Quarantined failures (not gating), quarantined checks ready to leave, and checks that pass
        now though their recent runs did not all pass. (An expired entry was said at the start.)"""
        for item in digest.quarantined:
            held = item.result.quarantined
            assert held is not None
            why = f": {_s(held.reason, 300)}" if held.reason else ""
            recorded = item.result.history
            lately = f"; {describe_history(recorded)}" if recorded is not None else ""
            self.always(
                f"QUARANTINED: {_s(item.result.name, 200)} ({_s(item.location, 100)}) {item.label}, not "
                f"gating: owner {_s(held.owner, 200)}, until {held.until.isoformat()}{why}{lately}"
            )
        for item in digest.ready_to_leave:
            held = item.result.quarantined
            owner = f" (owner {_s(held.owner, 200)})" if held is not None else ""
            self.line(
                f"ready to leave quarantine: {_s(item.result.name, 200)}{owner} passed its last "
                f"{READY_RUNS} runs in a row"
            )
        if digest.unstable:
            shown = [
                f"{_s(item.result.name, 100)} ({describe_unstable(item.result.history)})"
                for item in digest.unstable
                if item.result.history is not None
            ]
            self.line(f"unstable lately: {first_of(shown, 5)}")

    def verdict_line(self, digest: Digest) -> str:
        outcome = digest.outcome
        detail = f" — {_s(outcome.message, 1000)}" if outcome.message else ""
        head = self.paint(
            outcome.verdict,
            f"verdict: {outcome.verdict.upper()}",
            _RUN_COLORS
            | {
                "failed": "31",
                "timeout": "31",
                "service-error": "31",
                "usage-error": "31",
                "build-not-started": "31",
                "interrupted": "31",
            },
        )
        return (
            f"{head} — {digest.summary} · {digest.count_line()} · exit code {int(digest.exit_code)}{detail}"
        )


def _history_details(history: HistoryOutcome) -> str:
    """'failed 2 of the last 3 runs; flaky; recent runs (oldest first): .XX': the marks are named, and
    left out on a first recorded run, where a lone 'X' would say nothing the line does not."""
    marks = _marks(history.recent)
    if history.runs <= 1 or not marks:
        return describe_history(history)
    return f"{describe_history(history)}; recent runs (oldest first): {marks}"


def _marks(recent: str) -> str:
    """The history's marks of recent runs, only its own characters."""
    return "".join(c for c in recent if c in ".fdX")[:40]


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


_REFUSED = re.compile(r"connection refused: (\S+:\d+)")
_TIMINGS = re.compile(r"It failed after .*$")


def _same_cause(cause: str) -> str:
    """A root cause without its own timings: two checks refused at one port share it."""
    return _TIMINGS.sub("", cause).strip()


def _nothing_listens(failing: Sequence[Item]) -> list[str]:
    """One line per address where the connection was refused, before each check's own lines."""
    by_address: dict[str, int] = {}
    for item in failing:
        found = _REFUSED.search(item.result.error or "")
        if found:
            by_address[found.group(1)] = by_address.get(found.group(1), 0) + 1
    return [
        f"nothing listens at {_s(address, 200)}: is the build started? ({counted(count, 'check')})"
        for address, count in by_address.items()
    ]
