"""The benchmarks of issues 7, 11 and 20: `python bench/run.py [--quick]`.

Prints a table (figure | measured | target | ok/miss) with notes, and writes it to
bench/README-figures.md. Everything runs on 127.0.0.1 against emulators and a check server started
here; the whole run takes about three minutes on a 2-core machine (--quick: about one), half of it
the real-checks figure (bench/checks_vs_newman.py, which installs newman with npm into bench/.npm on
first use and shows our figures alone without it).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import checks_vs_newman
import fanout
import reports
import requests_count
import startup
import verdict
import watch
from common import REPO, Row, Spawner, close_spawner

FIGURES_FILE = Path(__file__).with_name("README-figures.md")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python bench/run.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer runs, a 45 s session at speed 10 instead of real time, shorter watched sessions, "
        f"300 error groups, {checks_vs_newman.QUICK} real checks instead of {checks_vs_newman.FULL:,}",
    )
    parser.add_argument("--no-write", action="store_true", help=f"do not write {FIGURES_FILE.name}")
    return parser.parse_args(argv)


def table(rows: list[Row]) -> str:
    lines = ["| # | figure | measured | target | ok/miss |", "|---|---|---|---|---|"]
    for index, row in enumerate(rows, 1):
        lines.append(f"| {index} | {row.figure} | {row.measured} | {row.target} | {row.verdict} |")
    return "\n".join(lines)


def notes(rows: list[Row]) -> str:
    return "\n".join(f"{index}. {row.note}" for index, row in enumerate(rows, 1) if row.note)


def machine() -> str:
    # What kind of machine, not where it keeps its files: no paths in published figures.
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )


def load() -> str:
    # Other jobs share the machine: the figures are read against how busy it was.
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quick = args.quick
    load_before = load()
    began = time.monotonic()
    rows: list[Row] = []

    def step(name: str) -> None:
        print(f"[{time.monotonic() - began:6.1f} s] {name}", file=sys.stderr, flush=True)

    # The passing session and the watched sessions mostly wait, so they run in the background while
    # the CPU-bound figures run; they are done before the latency-sensitive time-to-verdict runs start.
    step("requests: passing session (background)")
    passing = requests_count.PassingRun(45.0, speed=10.0 if quick else 1.0).start()
    step("watch: lag and analyses after the end (background)")
    watched = watch.WatchRuns(quick).start()
    try:
        step("reports")
        sizes = [1_000, 10_000, 100_000]
        repeats = {1_000: 3, 10_000: 3, 100_000: 1} if quick else {1_000: 5, 10_000: 5, 100_000: 3}
        report_rows = reports.measure(sizes, repeats)
        step("start-up")
        rows += startup.measure(runs=5 if quick else 9)
        step("requests: failing session")
        spawner = Spawner()
        try:
            request_rows = requests_count.failing(spawner)
        finally:
            spawner.close()
        step("requests: waiting for the passing session")
        request_rows = passing.result() + request_rows
        step("watch: waiting for the watched sessions")
        request_rows += watched.result()
        step("time to verdict")
        rows += verdict.measure(runs=3 if quick else 7)
        rows += request_rows
        rows += report_rows
        step("analyses fan-out")
        rows += fanout.measure(300 if quick else 1_000)
        step("real checks vs newman")
        size = checks_vs_newman.QUICK if quick else checks_vs_newman.FULL
        rows += checks_vs_newman.measure(size, runs=1 if quick else 3)
    finally:
        close_spawner()
    elapsed = time.monotonic() - began

    misses = [row for row in rows if row.ok is False]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/run.py" + (" --quick" if quick else "")
    text = "\n\n".join(
        [
            f"Measured {stamp} by `{command}` in {elapsed:.0f} s on {machine()}; a shared machine, "
            f"load average (1 min) {load_before} at the start, {load()} at the end.",
            table(rows),
            "Notes:\n\n" + notes(rows),
            "Misses: " + ("; ".join(row.figure for row in misses) if misses else "none") + ".",
        ]
    )
    print(text)
    if not args.no_write:
        FIGURES_FILE.write_text(
            "<!-- generated by python bench/run.py; the lead copies it into README.md -->\n"
            "## Benchmarks\n\n" + text + "\n",
            encoding="utf-8",
        )
        print(f"\nwritten: {FIGURES_FILE.relative_to(REPO)}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
