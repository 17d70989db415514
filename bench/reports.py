"""Figure 4: JUnit, markdown and JSON reports of 1,000, 10,000 and 100,000 results: time and memory.

Each size runs in its own fresh process (report_worker.py), so one size's memory never shows in
another's. Time: the three reports rendered, redacted and written (write_atomic, fsync'd) as
`testsession run` does, median over the worker's repeats. Memory: the worker's peak resident set
(ru_maxrss, which includes building the Outcome of that size in the same process) and the peak above
the memory the process held once the Outcome was built (VmHWM reset via /proc/self/clear_refs).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from common import MIB, Row, clean_env, python, run_child

TARGET_SECONDS = 0.5
TARGET_MIB = 150.0
TARGET_SIZE = 10_000
WORKER = Path(__file__).with_name("report_worker.py")


def measure(sizes: list[int], repeats: dict[int, int]) -> list[Row]:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-reports-") as tmp:
            child = run_child(
                [python(), str(WORKER), str(size), str(repeats[size]), tmp], env=clean_env(), timeout=240
            )
        if child.code != 0:
            raise SystemExit(f"bench: report worker {size} exited {child.code}: {child.stderr[-400:]}")
        data = json.loads(child.stdout.strip().splitlines()[-1])
        seconds, peak = data["total_seconds"], data["process_peak_mib"]
        parts = ", ".join(f"{k} {v:.3f}" for k, v in data["seconds"].items())
        above = data["render_peak_mib"] - data["baseline_mib"] if data["render_peak_mib"] else None
        memory = f"process peak {peak:.0f} MiB"
        if above is not None:
            memory += f" (+{above:.0f} MiB over the {data['baseline_mib']:.0f} MiB holding the Outcome)"
        note = (
            f"median of {repeats[size]}: {parts} s; {memory}; "
            f"JSON {data['bytes']['json'] / MIB:.1f} MiB, JUnit {data['bytes']['junit'] / MIB:.1f} MiB"
        )
        is_target = size == TARGET_SIZE
        rows.append(
            Row(
                f"reports: {size:,} results (JUnit + markdown + JSON)",
                f"{seconds:.3f} s, {peak:.0f} MiB",
                f"<= {TARGET_SECONDS} s, <= {TARGET_MIB:.0f} MiB" if is_target else "-",
                (seconds <= TARGET_SECONDS and peak <= TARGET_MIB) if is_target else None,
                note,
            )
        )
    return rows
