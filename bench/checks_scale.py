"""Real checks at scale against the floor, and one check against newman: `python bench/checks_scale.py`.

What is measured, in one run:
- the floor: the same N requests the checks send (GET over five paths of the local server), each on a
  fresh libcurl connection (a new pycurl handle, so a new TCP connection), one after another, in this
  process. Nothing a check runner does can be cheaper than sending its requests; this is that cost
  on this machine at this moment, measured beside ours so a busy machine hits both.
- ours: `testsession run SPEC --emulator --world W --junit .. --markdown .. --json ..` (with --checks:
  `run SPEC --checks FILE ..`, the same checks run by the engine in the command's process) in a child
  process with N API checks (bench/checks_vs_newman.py's world: one STATUS_CODE EQUALS 200 assertion
  each, the URL through an account variable), for N = 1,000 and 10,000: wall time from spawn to reaped
  exit, CPU (user + system of the run and the workers it waited for, wait4), the peak memory, and the
  ratio to the floor of the same N. The peak is the process tree's: a run of 2,000 checks or more
  starts a worker process (runner/job/workers.py), so the run's process and its workers' VmRSS are
  summed, sampled every 10 ms from /proc by bench/spawner.py, and the largest sum is the figure (the
  one the 100 MiB target judges). A page two processes share (the interpreter, its libraries) counts in
  each: an upper bound. Beside it, the largest single process's peak (`ru_maxrss` from wait4), which
  alone would hide a worker. Memory per added check: (tree peak at 10,000 - at 1,000) / 9,000.
- the small end: ours with one check beside newman with a one-request collection (the same request,
  one pm.test), alternating, medians.

Every run only counts when the server answered exactly N x 200 to it and the tool's report says N
passed (checks_vs_newman.run_ours / run_newman check both).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import checks_vs_newman as cvn
from common import Row, close_spawner, median

SIZES = (1_000, 10_000)
# Issue 41's targets, on a 2-core runner in one bench run beside the peers.
RATIO_GOAL = 2.0  # 10,000 checks: our wall time at most this many times the floor
MEMORY_GOAL_MIB = 100  # 10,000 checks: peak resident set of the process tree (the run and its workers)
ONE_GOAL = 0.35  # one check: our wall time at most this share of newman's
ONE_AIM_SECONDS = 0.25


def floor(base_url: str, n: int) -> float:
    """Seconds for N requests, each on a fresh libcurl connection, one after another."""
    import pycurl

    sink = bytearray()
    started = time.perf_counter()
    for index in range(n):
        curl = pycurl.Curl()
        curl.setopt(pycurl.URL, base_url + cvn.path_of(index))
        curl.setopt(pycurl.WRITEFUNCTION, sink.extend)
        curl.perform()
        status = curl.getinfo(pycurl.RESPONSE_CODE)
        curl.close()
        if status != 200:
            raise SystemExit(f"bench: the floor's request {index} answered {status}")
        sink.clear()
    return time.perf_counter() - started


@dataclass
class Scale:
    n: int
    floors: list[float]
    ours: list[cvn.Run]

    @property
    def floor(self) -> float:
        return median(self.floors)

    @property
    def wall(self) -> float:
        return median([r.wall for r in self.ours])

    @property
    def peak_mib(self) -> float:
        """The process tree's sampled peak (the run and its workers, VmRSS summed), the largest round's."""
        return max(r.tree_kib or r.maxrss_kib for r in self.ours) / 1024

    @property
    def process_mib(self) -> float:
        """The largest single process's peak (ru_maxrss), the largest round's."""
        return max(r.maxrss_kib for r in self.ours) / 1024

    @property
    def cpu(self) -> float:
        return median([r.cpu for r in self.ours])

    def _top(self) -> cvn.Run:
        return max(self.ours, key=lambda r: r.tree_kib)

    def parts(self) -> str:
        """Each process's resident set at the tree's peak of the round with the largest one."""
        return " + ".join(f"{rss / 1024:.0f}" for _pid, rss, _shared in self._top().tree_parts_kib)

    @property
    def processes(self) -> int:
        return len(self._top().tree_parts_kib)

    @property
    def ratio(self) -> float:
        return self.wall / self.floor


def measure_scale(tmp: Path, server: cvn.Server, n: int, runs: int) -> Scale:
    (tmp / f"world-{n}.yml").write_text(cvn.world_text(n, server.url), encoding="utf-8")
    found = Scale(n, [], [])
    for index in range(runs):
        print(f"bench: {n:,} checks, round {index + 1} of {runs}", file=sys.stderr, flush=True)
        found.floors.append(floor(server.url, n))
        cvn._expect_requests("the floor", server.stats(), n)
        found.ours.append(cvn.run_ours(tmp, n, server))
    return found


def measure_one(
    tmp: Path, server: cvn.Server, runs: int, newman: cvn.Newman
) -> tuple[list[float], list[float]]:
    (tmp / "world-1.yml").write_text(cvn.world_text(1, server.url), encoding="utf-8")
    (tmp / "collection-1.json").write_text(cvn.json.dumps(cvn.collection(1, server.url)), encoding="utf-8")
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(runs):  # alternating: a busy moment of the shared machine hits both
        ours.append(cvn.run_ours(tmp, 1, server).wall)
        if newman.argv:
            theirs.append(cvn.run_newman(newman, tmp, 1, server).wall)
    return ours, theirs


def _how() -> str:
    return "--checks" if cvn.FORM == "checks" else "--emulator --world"


def rows(
    scales: list[Scale], ours_one: list[float], newman_one: list[float], newman: cvn.Newman
) -> list[Row]:
    found = []
    for s in scales:
        judged = s.n >= 10_000
        walls = ", ".join(f"{r.wall:.2f}" for r in s.ours)
        floors = ", ".join(f"{f:.2f}" for f in s.floors)
        found.append(
            Row(
                f"real checks: {s.n:,} API checks end to end (testsession run {_how()}, 3 reports)",
                f"{s.wall:.2f} s = {s.ratio:.2f} x the floor ({s.floor:.2f} s); {s.peak_mib:.0f} MiB "
                f"(process tree; largest process {s.process_mib:.0f} MiB)",
                f"<= {RATIO_GOAL:g} x, <= {MEMORY_GOAL_MIB} MiB" if judged else "-",
                (s.ratio <= RATIO_GOAL and s.peak_mib <= MEMORY_GOAL_MIB) if judged else None,
                f"{s.n:,} checks: ours {walls} s (median of {len(s.ours)}); the floor ({s.n:,} requests, "
                "each "
                f"on a fresh libcurl connection, one after another, in the benchmark's process) {floors} s; "
                f"per check {s.wall * 1000 / s.n:.2f} ms against {s.floor * 1000 / s.n:.2f} ms; CPU "
                f"{s.cpu:.2f} s (median, the run and its workers); memory: the run and its worker processes' "
                f"VmRSS summed, sampled every 10 ms (shared pages counted in each: an upper bound), at its "
                f"peak {s.parts()} MiB (the run first)",
            )
        )
    if len(scales) >= 2:
        small, big = scales[0], scales[-1]
        per_check = (big.peak_mib - small.peak_mib) * 1024 / (big.n - small.n)
        found.append(
            Row(
                "real checks: memory per added check",
                f"{per_check:.1f} KiB",
                note=f"(tree peak at {big.n:,} {big.peak_mib:.0f} MiB - at {small.n:,} "
                f"{small.peak_mib:.0f} MiB)"
                f" / {big.n - small.n:,}"
                + (
                    f"; {big.processes - small.processes} more process(es) at {big.n:,} (a session of "
                    "2,000 checks or more starts a worker): their fixed memory is in it"
                    if big.processes > small.processes
                    else ""
                ),
            )
        )
    one = median(ours_one)
    if newman_one:
        theirs = median(newman_one)
        ratio = one / theirs
        found.append(
            Row(
                f"real checks: one API check end to end, ours / {newman.version}",
                f"{one:.3f} s / {theirs:.3f} s = {ratio:.2f} x",
                f"<= {ONE_GOAL:g} x (aim <= {ONE_AIM_SECONDS} s)",
                ratio <= ONE_GOAL,
                f"medians of {len(ours_one)}, alternating; ours {', '.join(f'{w:.3f}' for w in ours_one)} s; "
                f"newman {', '.join(f'{w:.3f}' for w in newman_one)} s",
            )
        )
    else:
        found.append(
            Row(
                "real checks: one API check end to end",
                f"{one:.3f} s; newman not measured",
                note=newman.reason,
            )
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/checks_scale.py", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="rounds at each size (default 1)")
    parser.add_argument(
        "--one-runs", type=int, default=7, help="rounds of one check against newman (default 7)"
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="how many checks (default 1000 10000)"
    )
    parser.add_argument("--no-newman", action="store_true", help="leave newman out")
    parser.add_argument("--no-install", action="store_true", help="use newman only if bench/.npm has it")
    parser.add_argument(
        "--checks", action="store_true", help="ours runs a checks file (--checks FILE) instead of a world"
    )
    args = parser.parse_args(argv)
    if args.checks:
        cvn.FORM = "checks"
    newman = (
        cvn.find_newman(not args.no_install)
        if not args.no_newman
        else cvn.Newman(reason="left out (--no-newman)")
    )
    if not newman.argv:
        print(f"bench: newman not measured: {newman.reason}", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    began = time.monotonic()
    server = cvn.Server()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as name:
            tmp = Path(name)
            (tmp / "spec.yml").write_text(cvn.spec_text(), encoding="utf-8")
            ours_one, newman_one = measure_one(tmp, server, args.one_runs, newman)
            scales = [measure_scale(tmp, server, n, args.runs) for n in sorted(args.sizes)]
    finally:
        server.close()
        close_spawner()
    print(
        f"{platform.system()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load average "
        f"(1 min) {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
        f"{time.monotonic() - began:.0f} s in all\n"
    )
    print(cvn.table(rows(scales, ours_one, newman_one, newman)))
    found = rows(scales, ours_one, newman_one, newman)
    return 1 if any(r.ok is False for r in found) else 0


if __name__ == "__main__":
    raise SystemExit(main())
