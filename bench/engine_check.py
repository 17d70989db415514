"""The engine's own cost of one API check beside the floor: `python bench/engine_check.py [-n N]`.

What is measured, in one process, in rounds that alternate (floor, engine, floor, ...) so a busy
moment of the shared machine hits both:
- the floor (checks_scale.floor): N GETs over the five paths of bench/checks_server.py, each on a
  fresh libcurl handle, one after another;
- the engine: the same N requests as the N API checks of checks_vs_newman.checks_text (loaded by
  load_checks_file, the account variable API_URL in the URL, one STATUS_CODE EQUALS 200 assertion
  each), run one after another in this thread as job/local.py's worker runs each: its definition made
  from its plan, then `run_check`.
CPU time (process_time: user + system of this process; the server is a process of its own) per
check, median over the rounds, and the ratio. `--profile F` writes a cProfile of one engine round to F.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import checks_scale
import checks_vs_newman as cvn
from common import median

from runner.checks.checksfile import ChecksFile, load_checks_file
from runner.checks.limits import Limits
from runner.checks.run import run_check
from runner.checks.scripts import runner_for
from runner.checks.variables import VariableSources, variables_from


def engine(checks: ChecksFile) -> int:
    """Runs every check as job/local.py does; the number that passed."""
    variables = VariableSources(
        account=tuple(variables_from(checks.variables)),
        runtime={"ACCOUNT_ID": "bench", "REGION": "eu-west-1"},
    )
    limits = Limits(body_cap_bytes=5 * 1024 * 1024)
    stop = threading.Event()
    passed = 0
    for check in checks.checks:
        definition = check.plan.definition
        assert definition is not None
        run = run_check(definition, max_run_seconds=None, variables=variables, limits=limits, stop=stop,
                        scripts=runner_for(definition))  # fmt: skip
        passed += run.passed
    return passed


def cpu(call: object) -> float:
    started = time.process_time()
    call()  # type: ignore[operator]
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="checks a round (default 2000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write a cProfile of one engine round to this file")
    args = parser.parse_args(argv)
    n = args.n
    server = cvn.Server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "checks.yml"
            path.write_text(cvn.checks_text(n, server.url), encoding="utf-8")
            checks = load_checks_file(path, dict(os.environ))
            floors: list[float] = []
            ours: list[float] = []
            for index in range(args.rounds):
                floors.append(cpu(lambda: checks_scale.floor(server.url, n)))
                cvn._expect_requests("the floor", server.stats(), n)
                passed = 0

                def one() -> None:
                    nonlocal passed
                    passed = engine(checks)

                if args.profile and index == 0:
                    profile = cProfile.Profile()
                    profile.runcall(one)
                    profile.dump_stats(args.profile)
                else:
                    ours.append(cpu(one))
                if passed != n:
                    raise SystemExit(f"bench: {passed} of {n} checks passed")
                cvn._expect_requests("the engine", server.stats(), n)
    finally:
        server.close()
    floor_ms, ours_ms = median(floors) * 1000 / n, median(ours) * 1000 / n if ours else float("nan")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"engine_check: {n:,} API checks x {len(ours)} rounds (load {load})")
    print(f"  floor : {floor_ms:.3f} ms CPU a request   ({', '.join(f'{x:.2f}' for x in floors)} s)")
    print(f"  engine: {ours_ms:.3f} ms CPU a check     ({', '.join(f'{x:.2f}' for x in ours)} s)")
    print(f"  ratio : {ours_ms / floor_ms:.2f}x the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
