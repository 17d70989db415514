"""Loading a checks file of N API checks, beside the floor: `python bench/checks_load.py [-n N] [--runs R]`.

What is measured, each in a fresh child process (imports done before the clock starts):
- ours: `load_checks_file(FILE, environ)`, what `run --checks FILE` does before its first check: the
  YAML read with its bounds, ${VAR} expansion, every check validated with its problems, the checks
  held for the run;
- the floor: `yaml.load(text, Loader=yaml.CSafeLoader)` of the same text, plain: PyYAML's libyaml
  loader, no bound, no validation, nothing held but the data;
- the events: libyaml's event stream alone (`yaml.CSafeLoader`'s get_event to the end): what every
  PyYAML-based reader pays before it builds anything.
Each child reports its CPU time (user + system, getrusage), wall time and the growth of its peak
resident set during the load; with --held, one more child per side measures what the loaded value
holds (tracemalloc, slow) per check. The runs alternate (ours, floor, events, ours, ...) so a busy
moment of the shared machine hits all; medians are shown, with the load average.
`--against PATH` adds "old": ours loaded with another checkout's `runner` (e.g. main's), alternating too.
The file is bench/checks_vs_newman.py's checks file (one STATUS_CODE EQUALS 200 assertion each, the
URL through an account variable), the one bench/checks_scale.py runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import checks_vs_newman as cvn
from common import median

CHILD = r"""
import json, os, resource, sys, time
kind, path, held = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
import yaml
if kind == "ours":
    from runner.checks.checksfile import load_checks_file
text = open(path, encoding="utf-8").read()
if held:
    import tracemalloc
    tracemalloc.start()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
u0 = resource.getrusage(resource.RUSAGE_SELF)
w0 = time.perf_counter()
if kind == "ours":
    value = load_checks_file(path, os.environ)
    count = len(value.checks)
elif kind == "floor":
    value = yaml.load(text, Loader=yaml.CSafeLoader)
    count = len(value["checks"])
else:
    parser, count = yaml.CSafeLoader(text), 0
    while parser.get_event() is not None:
        count += 1
    value = None
wall = time.perf_counter() - w0
u1 = resource.getrusage(resource.RUSAGE_SELF)
out = {
    "cpu": (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime), "wall": wall, "count": count,
    "rss_growth_mib": (u1.ru_maxrss - rss0) / 1024,
}
if held:
    out["held"] = tracemalloc.get_traced_memory()[0]
print(json.dumps(out))
"""


def child(kind: str, path: Path, against: str | None, held: bool = False) -> dict[str, float]:
    env = dict(os.environ)
    if kind == "old" and against:
        env["PYTHONPATH"] = against
    run_kind = "ours" if kind == "old" else kind
    done = subprocess.run(
        [sys.executable, "-c", CHILD, run_kind, str(path), "1" if held else "0"],
        env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"bench: the {kind} child failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="checks in the file (10,000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each, alternating (5)")
    parser.add_argument("--held", action="store_true", help="also what the loaded value holds a check")
    parser.add_argument("--against", help="a checkout whose runner package loads the same file, as old")
    args = parser.parse_args()
    kinds = ("ours", *(("old",) if args.against else ()), "floor", "events")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checks.yml"
        path.write_text(cvn.checks_text(args.n, "http://127.0.0.1:9"), encoding="utf-8")
        size = path.stat().st_size
        runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for kind in kinds:
                runs[kind].append(child(kind, path, args.against))
            loads.append(os.getloadavg()[0])
        measured = [kind for kind in kinds if kind != "events"]
        held = {kind: child(kind, path, args.against, True)["held"] for kind in measured if args.held}
    print(f"{args.n} checks ({size} bytes of YAML), {args.runs} runs each, medians;", end=" ")
    old = f"; old: {args.against}" if args.against else ""
    print(f"load average {min(loads):.1f}-{max(loads):.1f}{old}")
    print(f"{'':8} {'CPU s':>7} {'wall s':>7} {'peak RSS +MiB':>14} {'held B/check':>13}")
    for kind in kinds:
        rows = runs[kind]
        cpu, wall = median([r["cpu"] for r in rows]), median([r["wall"] for r in rows])
        rss = median([r["rss_growth_mib"] for r in rows])
        kept = f"{held[kind] / args.n:13.0f}" if kind in held else f"{'':13}"
        print(f"{kind:8} {cpu:7.3f} {wall:7.3f} {rss:14.1f} {kept}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
