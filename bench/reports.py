"""Figure 4: JUnit, markdown and JSON reports of 1,000, 10,000 and 100,000 results: time and memory.

Each size runs in its own fresh process (report_worker.py), so one size's memory never shows in
another's. Time: the three reports rendered, redacted and written (write_atomic, fsync'd) as
`testsession run` does, median over the worker's repeats. Memory: the worker's peak resident set
(ru_maxrss, which includes building the Outcome of that size in the same process) and the peak above
the memory the process held once the Outcome was built (VmHWM reset via /proc/self/clear_refs).

Alone, `python bench/reports.py [--against REF ...] [--rounds N]` measures this figure and writes
bench/reports-figures.md. With --against, the same benchmark (this worker, the ref's own runner and
outcome factory) of a git ref's tree, e.g. the commit before a change, runs beside this tree's, the
trees taking turns round by round, so that a shared machine's load falls on all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path

from common import MIB, REPO, Row, clean_env, python, run_child

# seconds and MiB (process peak) per size: issue 23's goal, and the memory of the same benchmark
# before the known/new and baseline lines were added (72 MiB and 391 MiB).
TARGETS = {10_000: (0.2, 80.0), 100_000: (2.0, 400.0)}
SIZES = [1_000, 10_000, 100_000]
FIGURES_FILE = Path(__file__).with_name("reports-figures.md")
WORKER = Path(__file__).with_name("report_worker.py")


def run_worker(tree: Path, size: int, repeats: int) -> dict[str, object]:
    """One fresh process of the worker on `tree`'s code (its runner and outcome factory): its JSON line."""
    with tempfile.TemporaryDirectory(prefix="bench-reports-") as tmp:
        child = run_child(
            [python(), str(WORKER), str(size), str(repeats), tmp, str(tree)],
            env=clean_env({"PYTHONPATH": str(tree)}),
            cwd=tree,
            timeout=240,
        )
    if child.code != 0:
        raise SystemExit(f"bench: report worker {size} of {tree} exited {child.code}: {child.stderr[-400:]}")
    data: dict[str, object] = json.loads(child.stdout.strip().splitlines()[-1])
    return data


def row(size: int, data: dict[str, object], repeats: int, label: str = "") -> Row:
    seconds = float(data["total_seconds"])  # type: ignore[arg-type]
    peak = float(data["process_peak_mib"])  # type: ignore[arg-type]
    parts = ", ".join(f"{k} {v:.3f}" for k, v in data["seconds"].items())  # type: ignore[attr-defined]
    baseline, render_peak = data["baseline_mib"], data["render_peak_mib"]
    cpu = data.get("cpu_seconds")
    memory = (f"CPU {float(cpu):.3f} s; " if cpu is not None else "") + f"process peak {peak:.0f} MiB"  # type: ignore[arg-type]
    if render_peak and baseline:
        above = float(render_peak) - float(baseline)  # type: ignore[arg-type]
        memory += f" (+{above:.0f} MiB over the {float(baseline):.0f} MiB holding the Outcome)"  # type: ignore[arg-type]
    sizes = data["bytes"]
    note = (
        f"median of {repeats}: {parts} s; {memory}; "
        f"JSON {sizes['json'] / MIB:.1f} MiB, JUnit {sizes['junit'] / MIB:.1f} MiB"  # type: ignore[index]
    )
    target = TARGETS.get(size)
    ok = None if target is None else seconds <= target[0] and peak <= target[1]
    return Row(
        f"reports: {size:,} results (JUnit + markdown + JSON){label}",
        f"{seconds:.3f} s, {peak:.0f} MiB",
        f"<= {target[0]} s, <= {target[1]:.0f} MiB" if target else "-",
        ok,
        note,
    )


def measure(sizes: list[int], repeats: dict[int, int]) -> list[Row]:
    return [row(size, run_worker(REPO, size, repeats[size]), repeats[size]) for size in sizes]


# --- alone, side by side with a git ref ---------------------------------------------------------


def tree_of(ref: str, into: Path) -> Path:
    """The files of `ref` (runner/, tests/, bench/) unpacked into `into`."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "runner", "tests", "bench"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def median_data(runs: list[dict[str, object]]) -> dict[str, object]:
    """The run whose total is the median of the rounds (its parts and memory belong together)."""
    ordered = sorted(runs, key=lambda d: float(d["total_seconds"]))  # type: ignore[arg-type]
    return ordered[(len(ordered) - 1) // 2]


def load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/reports.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--against", metavar="REF", action="append", default=[], help="also measure a git ref's tree"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size (default 3)")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {FIGURES_FILE.name}")
    args = parser.parse_args(argv)
    repeats = {1_000: 5, 10_000: 5, 100_000: 3}
    load_before, began = load(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-ref-") as tmp:
        trees = {"this tree": REPO}
        for ref in args.against:
            trees[ref] = tree_of(ref, Path(tmp) / ref)
        runs: dict[tuple[str, int], list[dict[str, object]]] = {}
        for number in range(args.rounds):
            for size in SIZES:
                order = list(trees.items())
                for label, tree in order[number % len(order) :] + order[: number % len(order)]:
                    print(f"round {number + 1}: {label}, {size:,} results", file=sys.stderr, flush=True)
                    runs.setdefault((label, size), []).append(run_worker(tree, size, repeats[size]))
    rows = {
        (label, size): row(size, median_data(runs[(label, size)]), repeats[size])
        for label in trees
        for size in SIZES
    }
    lines = ["| tree | figure | measured | target | ok/miss |", "|---|---|---|---|---|"]
    for (label, _size), measured in rows.items():
        lines.append(
            f"| {label} | {measured.figure} | {measured.measured} | {measured.target} | {measured.verdict} |"
        )
    notes = [f"- {label}, {size:,}: {measured.note}" for (label, size), measured in rows.items()]
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/reports.py" + "".join(f" --against {ref}" for ref in args.against)
    machine = f"{platform.system()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    text = "\n\n".join(
        [
            f"Measured {stamp} by `{command} --rounds {args.rounds}` in {time.monotonic() - began:.0f} s "
            f"on {machine}; a shared machine, load average (1 min) {load_before} at the start, {load()} "
            "at the end. Each figure is the round with the median total time.",
            "\n".join(lines),
            "Notes (per report: render, redact, write; the median of the worker's repeats):\n\n"
            + "\n".join(notes),
        ]
    )
    print(text)
    if not args.no_write:
        FIGURES_FILE.write_text(
            f"<!-- generated by {command} -->\n## Reports: time and memory\n\n{text}\n", encoding="utf-8"
        )
        print(f"\nwritten: {FIGURES_FILE.relative_to(REPO)}", file=sys.stderr)
    return 1 if any(rows[("this tree", size)].ok is False for size in SIZES) else 0


if __name__ == "__main__":
    raise SystemExit(main())
