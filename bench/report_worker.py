"""One size of figure 4, in a fresh process: build an Outcome of N results, then render and write the
JUnit, markdown and JSON reports as `testsession run` does (render, redact, write_atomic), REPEATS
times. Prints one JSON line: per-report median times, the median CPU time of the three, the memory
before rendering, the peak while rendering, and the process's peak.

Usage: python report_worker.py N REPEATS OUT_DIR [TREE]

TREE (default: this repository) is the source tree whose runner/ and tests/outcome_factory.py are
measured, so that one harness measures an older commit's code too (bench/reports.py --against).
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Resets VmHWM to the current RSS (Linux >= 4.0), so it then shows the peak of what follows."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def main() -> None:
    size, repeats, out_dir = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    tree = Path(sys.argv[4]) if len(sys.argv) > 4 else REPO
    sys.path[:0] = [str(tree), str(tree / "tests")]
    from outcome_factory import big_outcome

    try:
        from runner.core.redact import Redactor
    except ImportError:  # an older tree: the redactor lived at the package's top
        from runner.redact import Redactor  # type: ignore[no-redef]
    from runner.reports import render_json, render_junit, render_markdown, write_atomic

    started = time.perf_counter()
    outcome = big_outcome(size)
    build_seconds = time.perf_counter() - started
    redact = Redactor(["bench-secret-value"])  # the CLI passes every report through its redactor
    renderers = {"junit": render_junit, "markdown": render_markdown, "json": render_json}
    paths = {"junit": "junit.xml", "markdown": "summary.md", "json": "results.json"}
    gc.collect()
    baseline_kib = status_kib("VmRSS")
    peak_reset = reset_peak()
    times: dict[str, list[float]] = {kind: [] for kind in renderers}
    totals: list[float] = []
    cpu_totals: list[float] = []  # this process's CPU time: less moved by a busy machine than the clock
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        total = 0.0
        cpu_started = time.process_time()
        for kind, render in renderers.items():
            started = time.perf_counter()
            text = redact(render(outcome))
            write_atomic(out_dir / paths[kind], text)
            elapsed = time.perf_counter() - started
            sizes[kind] = len(text.encode("utf-8"))
            del text
            times[kind].append(elapsed)
            total += elapsed
        totals.append(total)
        cpu_totals.append(time.process_time() - cpu_started)
    render_peak_kib = status_kib("VmHWM") if peak_reset else None
    print(
        json.dumps(
            {
                "size": size,
                "build_seconds": build_seconds,
                "seconds": {kind: statistics.median(v) for kind, v in times.items()},
                "total_seconds": statistics.median(totals),
                "cpu_seconds": statistics.median(cpu_totals),
                "bytes": sizes,
                "baseline_mib": baseline_kib / 1024 if baseline_kib else None,
                "render_peak_mib": render_peak_kib / 1024 if render_peak_kib else None,
                "process_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
