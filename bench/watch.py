"""Figures of issue 11 (a run you can watch): how soon a result's line appears, and what analyses
started early leave to wait for once the session has ended.

(a) Lag. A session at speed 1 whose checks end one by one (3, 8, 15, 25, 40 s). The moment each
check's result becomes final is exact: the emulator plans every check run when the session is
triggered (CheckRun.end, simulated time), and simulated time is a linear function of
time.monotonic() (SimClock; one (monotonic, sim) pair read together maps it). The line's moment is
when this process read it from the child's stdout (a pipe, NO_COLOR=1; time.monotonic() is
system-wide). The read interval in effect for a result is the time between the two observations of
the session around its end: the runner's reads (GET /v1/test-sessions/{id}) and the long poll that
answers with the end, stamped by the emulator when it answers (the trigger counts as the first).
Goal: every line within the interval in effect (which is at most 10 s).

(b) Analyses after the end. A session where a check fails at 2 s and another passes at 20 s, with
analyses that take 5 s to generate (analysisDelaySeconds, speed 1): the failure's analysis is
created during the session and is ready long before its end, so the run should end about as soon
as without analyses. Measured from the session's end in the emulator to the child's exit (reaped
by this process). Goal: 1.5 s. For contrast, the same with the failure at the very end (20 s): its
analysis can only start then, so the run waits for its generation (no goal).

All three sessions mostly wait, so they run in background threads, each with its own emulator and
child, while the CPU-bound figures run (like the passing session of requests_count.py).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import worlds
from common import RequestTimes, Row, clean_env, console_script

LAG_CHECKS = [(3.0, "fail"), (8.0, "pass"), (15.0, "fail"), (25.0, "pass"), (40.0, "fail")]
LAG_CHECKS_QUICK = [(3.0, "fail"), (8.0, "pass"), (15.0, "fail")]
EARLY = (2.0, 20.0, 5.0)  # the failure's end, the passing check's end, analysisDelaySeconds
EARLY_QUICK = (2.0, 10.0, 3.0)
AFTER_END_GOAL = 1.5
LAST_INTERVAL = 10.0  # SESSION_READS.most
FIRST_INTERVAL = 2.0  # SESSION_READS.first


@dataclass
class Watched:
    """One `testsession run` and what the emulator knew of its session."""

    code: int = -1
    exited: float = 0.0  # time.monotonic() when the child was reaped
    lines: list[tuple[float, str]] = field(default_factory=list)  # (moment read, line) of stdout
    errors: str = ""
    ends: dict[str, float] = field(default_factory=dict)  # check name -> monotonic moment final
    session_end: float = 0.0
    triggered: float = 0.0
    observed: list[float] = field(default_factory=list)  # the runner's reads and the final long poll
    requests: int = 0
    peak_per_second: int = 0

    def line_of(self, name: str) -> tuple[float, str] | None:
        needle = f" {name} ("
        return next(((t, line) for t, line in self.lines if needle in line), None)


def _monotonic(clock: Any, sim_time: float) -> float:
    real, sim = time.monotonic(), clock.now()
    return float(real + (sim_time - sim) / clock.speed)


def run_watched(
    checks: list[dict[str, Any]], tag: str, analysis_delay: float = 2.0, rca: bool = True
) -> Watched:
    from runner.emulator import Emulator

    watched = Watched()
    world = worlds.world(checks, analysis_delay=analysis_delay)
    with (
        tempfile.TemporaryDirectory(prefix=f"bench-{tag}-") as tmp,
        Emulator(world) as emulator,
    ):
        times = RequestTimes(emulator)
        spec = Path(tmp, "spec.yml")
        spec.write_text(worlds.spec_text(tag, tmp, rca=rca, timeout=120), encoding="utf-8")
        env = clean_env(
            {
                "TESTSESSION_BASE_URL": emulator.url,
                "TESTSESSION_API_KEY": emulator.api_key,
                "TESTSESSION_ACCOUNT_ID": emulator.account_id,
                "NO_COLOR": "1",
            }
        )
        env.pop("FORCE_COLOR", None)
        proc = subprocess.Popen(
            [console_script(), "run", str(spec)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp,
            text=True,
            bufsize=1,
        )
        errors: list[str] = []
        drain = threading.Thread(target=lambda: errors.append(proc.stderr.read() if proc.stderr else ""))
        drain.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                watched.lines.append((time.monotonic(), line.rstrip("\n")))
            watched.code = proc.wait(180)
            watched.exited = time.monotonic()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            drain.join(10)
        watched.errors = "".join(errors)
        backend = emulator.backend
        sessions = backend.snapshot().sessions
        if len(sessions) != 1:
            raise RuntimeError(f"{tag}: no session was triggered: {watched.errors.strip()[:400]}")
        (session,) = sessions.values()
        if session.end is None:
            raise RuntimeError(f"{tag}: the session did not end")
        clock = backend.clock
        watched.session_end = _monotonic(clock, session.end)
        # Each check's end as the API shows it (the snapshot keeps the session, not its runs).
        rendered = backend.get_session(session.account_id, session.id)
        watched.ends = {
            r.name: _monotonic(clock, clock.from_datetime(r.stoppedAt))
            for r in rendered.results
            if r.resultType == "FINAL" and r.stoppedAt is not None
        }
        watched.triggered = times.of("trigger")[0]
        watched.observed = sorted(times.of("get_session", 200) + times.of("completion", 200))
        watched.requests = len(times.stamps)
        watched.peak_per_second = times.peak(1.0)
    return watched


def _lag_checks(quick: bool) -> list[dict[str, Any]]:
    plan = LAG_CHECKS_QUICK if quick else LAG_CHECKS
    return [worlds.check(i, "lag", behaviour, seconds) for i, (seconds, behaviour) in enumerate(plan)]


def lag_rows(watched: Watched, checks: list[dict[str, Any]]) -> list[Row]:
    if watched.code != 1:
        raise RuntimeError(f"lag: testsession run exited {watched.code}: {watched.errors.strip()[:400]}")
    lags: list[float] = []
    details: list[str] = []
    ok = True
    for check in checks:
        name = check["name"]
        final = watched.ends[name]
        found = watched.line_of(name)
        if found is None:
            raise RuntimeError(f"lag: no line for {name} on stdout")
        before = [t for t in [watched.triggered, *watched.observed] if t < final]
        after = [t for t in watched.observed if t >= final]
        interval = (after[0] if after else watched.exited) - (before[-1] if before else watched.triggered)
        lag = found[0] - final
        lags.append(lag)
        ok = ok and lag <= interval
        verdict = found[1].split()[0]
        details.append(
            f"{check['durationSeconds']:g} s {verdict}: {lag:.2f} s, line {found[0] - after[0]:+.2f} s "
            f"after the read that saw it (interval {interval:.2f} s)"
            if after
            else f"{check['durationSeconds']:g} s {verdict}: {lag:.2f} s (interval {interval:.2f} s)"
        )
    most = max(lags)
    ends = ", ".join(f"{c['durationSeconds']:g}" for c in checks)
    return [
        Row(
            f"watch: lag from a final result to its line on stdout ({len(checks)} checks, speed 1, a pipe)",
            f"max {most:.2f} s, median {statistics.median(lags):.2f} s",
            "<= the read interval in effect (<= 10 s)",
            ok,
            f"checks ending at {ends} s; "
            f"max {most:.2f} s against {LAST_INTERVAL:g} s (the longest interval): "
            f"{'within' if most <= LAST_INTERVAL else 'OVER'}; against {FIRST_INTERVAL:g} s (the first "
            f"interval): {'within' if most <= FIRST_INTERVAL else 'over'}. Per check: "
            + "; ".join(details)
            + f". {watched.requests} requests in all, peak {watched.peak_per_second} in 1 s",
        )
    ]


def _early_checks(fail_at: float, pass_at: float) -> list[dict[str, Any]]:
    return [worlds.check(0, "early", "fail", fail_at), worlds.check(1, "early", "pass", pass_at)]


def after_end_row(watched: Watched, label: str, goal: float | None, delay: float) -> Row:
    if watched.code != 1:
        raise RuntimeError(f"{label}: testsession run exited {watched.code}: {watched.errors.strip()[:400]}")
    after = watched.exited - watched.session_end
    finished = next((t for t, line in watched.lines if " finished: " in line), None)
    analysed = any(line.lstrip().startswith("analysis for ") for _t, line in watched.lines)
    note = (
        f"{label}; analysisDelaySeconds {delay:g}, speed 1; from the session's end in the emulator to "
        f"the child's exit"
        + (f" ({watched.exited - finished:.2f} s from its 'finished:' line)" if finished else "")
        + ("" if analysed else "; NO analysis line was printed")
    )
    return Row(
        f"watch: time after the session's end, {label}",
        f"{after:.2f} s",
        f"<= {goal:g} s" if goal is not None else "-",
        (after <= goal and analysed) if goal is not None else None,
        note,
    )


class WatchRuns:
    """The three sessions, each in its own background thread (they mostly wait)."""

    def __init__(self, quick: bool = False) -> None:
        self.quick = quick
        fail_at, pass_at, delay = EARLY_QUICK if quick else EARLY
        self.delay = delay
        self.lag_checks = _lag_checks(quick)
        self.jobs = {
            "lag": lambda: run_watched(self.lag_checks, "lag"),
            "early": lambda: run_watched(_early_checks(fail_at, pass_at), "early", delay),
            "late": lambda: run_watched(_early_checks(pass_at, fail_at), "early", delay),
        }
        self.fail_at, self.pass_at = fail_at, pass_at
        self.results: dict[str, Watched] = {}
        self.errors: dict[str, BaseException] = {}
        self._threads = [
            threading.Thread(target=self._main, args=(name,), name=f"bench-{name}", daemon=True)
            for name in self.jobs
        ]

    def _main(self, name: str) -> None:
        try:
            self.results[name] = self.jobs[name]()
        except BaseException as exc:
            self.errors[name] = exc

    def start(self) -> WatchRuns:
        for thread in self._threads:
            thread.start()
        return self

    def result(self) -> list[Row]:
        for thread in self._threads:
            thread.join(300)
        if self.errors or len(self.results) != len(self.jobs):
            raise SystemExit(f"bench: the watch runs failed: {self.errors!r}")
        early = f"a failure at {self.fail_at:g} s, a pass at {self.pass_at:g} s"
        late = f"a pass at {self.fail_at:g} s, a failure at {self.pass_at:g} s (the end)"
        return [
            *lag_rows(self.results["lag"], self.lag_checks),
            after_end_row(self.results["early"], early, AFTER_END_GOAL, self.delay),
            after_end_row(self.results["late"], late, None, self.delay),
        ]


def measure(quick: bool = False) -> list[Row]:
    return WatchRuns(quick).start().result()


if __name__ == "__main__":
    for row in measure(quick=bool(os.environ.get("BENCH_QUICK"))):
        print(f"{row.figure}: {row.measured} (target {row.target}, {row.verdict})\n    {row.note}")
