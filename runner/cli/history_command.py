"""`testsession history --state FILE`: each check's recorded runs, as a table or JSON.

The state file's history (runner/state/store.py `check_runs`) is read without its lock and without
changing it; what each row says is runner/job/history.py's `summarize`, the same values the reports
carry.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from runner.cli.common import Context
    from runner.job.outcome import HistoryOutcome, Outcome
    from runner.state.store import CheckRun

DEFAULT_LAST = 200


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs of at least 1, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "history",
        help="each check's recorded runs in a state file: pass rate, flaky, durations, last failure",
        description=(
            "Show what a state file (--state of `run`) recorded of each check's runs: runs, passed, "
            "failed, degraded, flaky, pass rate, median and p95 duration, the last failure and the "
            "current streak, one row per check."
        ),
    )
    parser.add_argument("--state", metavar="FILE", required=True, help="the state file the runs used")
    parser.add_argument(
        "--last",
        type=_positive,
        default=DEFAULT_LAST,
        metavar="N",
        help=f"only each check's newest N runs (default {DEFAULT_LAST}: all a state file keeps)",
    )
    parser.add_argument(
        "--check",
        action="append",
        metavar="NAME",
        help="only this check (its name or id); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from runner.core.errors import UsageError
    from runner.job.history import summarize
    from runner.state.store import read_check_runs

    recorded = read_check_runs(args.state, last=args.last)
    wanted = set(args.check or ())
    rows = []
    found: set[str] = set()
    for runs in recorded.values():
        newest = runs[-1]
        names = {newest.name, *(r.check_id for r in runs if r.check_id)}
        if wanted and not (names & wanted):
            continue
        found |= names & wanted
        rows.append((newest.name, newest.check_id, summarize(runs, quarantined=newest.quarantined)))
    missing = sorted(wanted - found)
    if missing:
        import difflib

        known = sorted({r[-1].name for r in recorded.values()})
        hints = []
        for name in missing:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise UsageError(f"--check: no recorded runs of {', '.join(hints)} in {args.state}")
    rows.sort(key=lambda row: (row[2].passRate, row[0]))  # the least stable first
    if args.json:
        checks = [
            {"name": name, "checkId": check_id, **summary.model_dump(mode="json")}
            for name, check_id, summary in rows
        ]
        print(ctx.redact(json.dumps({"checks": checks}, indent=2, ensure_ascii=False)))
        return 0
    print(ctx.redact(table(rows, args.state)))
    return 0


def record_history(
    outcome: Outcome,
    state: str,
    warn: Callable[[str], None],
    mask: Callable[[str], str],
    past: Mapping[str, Sequence[CheckRun]] | None = None,
) -> Outcome:
    """The run's results added to each check's history in the state file at `state`, and the
    history (this run included) on each result. A file that cannot be written costs the history,
    said by `warn`, never the run's verdict or reports. `mask` takes the run's secrets out of what
    the file keeps. `past`: each check's runs read before this run (the file is not read again)."""
    import sqlite3

    from runner.core import clock
    from runner.job.history import REPORT_RUNS, mark_history, runs_of
    from runner.state.store import StateFile, StateFileError

    rows = runs_of(outcome, clock.now(), mask)
    if not rows:
        return outcome
    try:
        file = StateFile.open(state)
        try:
            file.record_runs(rows)
            if past is None:
                runs = file.check_runs(sorted({r.check_key for r in rows}), last=REPORT_RUNS)
        finally:
            file.close()
    except (StateFileError, sqlite3.Error) as exc:
        warn(f"warning: the run's history was not recorded: {exc}")
        return outcome
    if past is not None:
        runs = {}
        for row in rows:
            runs.setdefault(row.check_key, list(past.get(row.check_key, ()))).append(row)
    return mark_history(outcome, runs)


def _ms(value: int | None) -> str:
    if value is None:
        return "–"
    return f"{value} ms" if value < 1000 else f"{value / 1000:.1f} s"


def _streak(summary: HistoryOutcome) -> str:
    if summary.streak is None:
        return "–"
    return f"{summary.streak.state} {summary.streak.runs}"


def _last_failure(summary: HistoryOutcome) -> str:
    from runner.core.text import for_line

    last = summary.lastFailure
    if last is None:
        return "–"
    novelty = f" [{last.novelty}]" if last.novelty in ("new", "known") else ""
    error = for_line(last.error, 60) if last.error else last.verdict
    return f"{last.at.strftime('%Y-%m-%d %H:%M')}{novelty} {error}"


def table(rows: list[tuple[str, str | None, HistoryOutcome]], source: str) -> str:
    """The rows as a terminal table; every text from the file sanitised for a terminal line."""
    from runner.core.text import for_line

    if not rows:
        return f"{for_line(source, 300)}: no runs recorded yet (runs with --state record them)"
    head = ["CHECK", "RUNS", "PASS", "FAILED", "FLAKY", "DEGR.", "MEDIAN", "P95", "STREAK", "RECENT"]
    head.append("LAST FAILURE")
    body = [
        [
            for_line(name, 40),
            str(s.runs),
            f"{s.passRate * 100:.0f}%",
            str(s.failed),
            str(s.flaky),
            str(s.degraded),
            _ms(s.medianMs),
            _ms(s.p95Ms),
            _streak(s),
            s.recent,
            _last_failure(s),
        ]
        for name, _id, s in rows
    ]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [head, *body]]
    lines.append(
        "RECENT: oldest to newest, '.' passed, 'f' flaky (passed on a retry), 'd' degraded, 'X' failed"
    )
    return "\n".join(lines)
