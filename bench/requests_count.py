"""Figure 3: API requests of one `testsession run`, against the budget the read pace allows.

The budget. While a session runs, the runner long-polls its completion for as long as the current
read interval (SESSION_READS in runner/client/polling.py: 2 s, then x1.5 up to 10 s; a long poll waits
whole seconds, floor(interval), at least 1) and, after each long poll that ends without the end,
reads the session once. So a session of S real seconds in which no result becomes final before the
end costs

    1 trigger + 2 x k (a long poll and a read per interval that passes before the end)
      + 1 (the long poll that answers with the end)
      + per error group: 1 group read + 1 analysis create + 1 read of the completed analysis,
      + the polls of pending analyses (the 202 answers of GET /v1/root-cause-analyses/{id}),

where k is the number of intervals 2, 3, 4, 6, 10, 10, ... whose running sum stays below S (45 s:
2+3+4+6+10+10 = 35 < 45, so k = 6 and 14 requests; the old 30 s long polls needed 4). A read that
finds a new final result starts the pace again at 2 s, so results that end one by one add reads: at
worst (a new result at every read) the watch reads every 2 s, 1 request per second, 60 a minute.
Analyses are polled from 0.25 s growing x1.6 to 2 s each, at most 8 at once, so a burst of early
failures can briefly send tens of requests a second; every request still takes a slot of the
client's RateLimiter (runner/client/ratelimit.py: at most 600 in any 60 s, the service's limit),
so no pace can exceed the limit: it is delayed instead. The peak rates measured here are the most
requests the emulator answered within any 1 s and any 60 s.

Counted by the emulator (every /v1 request, by route and status). "Session seconds" is the real time
the runner waits: the pace and the long poll's maxWaitSeconds are in real seconds whatever the
emulator's speed, so the full run uses speed 1 and a 45 s session (it runs in the background while
the other figures are measured); --quick uses speed 10 (4.5 s real).
"""

from __future__ import annotations

import math
import tempfile
import threading
from pathlib import Path
from typing import Any

import worlds
from common import RequestTimes, Row, Spawner, clean_env, console_script

from runner.client.polling import SESSION_READS, Pace
from runner.models.operations import RATE_LIMIT

FAILING_GROUPS = 5
FAILING_SECONDS = 3.0


def intervals_before(seconds: float, pace: Pace = SESSION_READS) -> int:
    """How many read intervals pass before `seconds` when no result appears before the end."""
    count, covered, interval = 0, 0.0, pace.first
    while covered + max(1, math.floor(interval)) < seconds:
        covered += max(1, math.floor(interval))
        count += 1
        interval = pace.next(interval)
    return count


def budget(seconds: float, groups: int, pace: Pace = SESSION_READS) -> int:
    """The requests of a run without polls of pending analyses (see the module's docstring)."""
    return 1 + 2 * intervals_before(seconds, pace) + 1 + 3 * groups


def _run(
    checks: list[dict[str, Any]], tag: str, speed: float, spawner: Spawner, rca: bool = True
) -> tuple[dict[str, Any], float, int, tuple[int, int]]:
    """(the emulator's request counts by route, the session's real seconds, exit code,
    the peak requests within 1 s and within 60 s)."""
    from runner.emulator import Emulator

    with (
        tempfile.TemporaryDirectory(prefix="bench-requests-") as tmp,
        Emulator(worlds.world(checks, speed=speed)) as emulator,
    ):
        times = RequestTimes(emulator)
        spec = Path(tmp, "spec.yml")
        spec.write_text(worlds.spec_text(tag, tmp, rca=rca), encoding="utf-8")
        env = clean_env(
            {
                "TESTSESSION_BASE_URL": emulator.url,
                "TESTSESSION_API_KEY": emulator.api_key,
                "TESTSESSION_ACCOUNT_ID": emulator.account_id,
            }
        )
        child = spawner.run([console_script(), "run", str(spec)], env=env, cwd=tmp, timeout=180)
        stats = emulator.backend.stats()
        (session,) = emulator.backend.snapshot().sessions.values()
        assert session.end is not None  # the session ended: the run waited for it
        real_seconds = (session.end - session.start) / emulator.backend.clock.speed
    if child.code not in (0, 1):
        raise SystemExit(f"bench: testsession run exited {child.code}: {child.stderr.strip()[:400]}")
    return stats, real_seconds, child.code, (times.peak(1.0), times.peak(60.0))


def _row(
    label: str, stats: dict[str, Any], seconds: float, groups: int, speed: float, peaks: tuple[int, int]
) -> Row:
    requests = stats["requests"]
    pending = requests.get("get_analysis", {}).get("202", 0)
    most = budget(seconds, groups)
    k = intervals_before(seconds)
    total = stats["requestsTotal"]
    by_route = ", ".join(f"{route} {sum(c.values())}" for route, c in requests.items())
    return Row(
        f"requests: {label}",
        f"{total - pending} + {pending} polls of pending analyses" if pending else str(total),
        f"<= {most}" + (f" + {pending}" if pending else ""),
        total - pending <= most,
        f"session {seconds:.1f} s real (speed {speed:g}), {groups} groups analysed: "
        f"1 + 2 x {k} intervals + 1 + 3 x {groups} = {most}; sent: {by_route}; "
        f"peak {peaks[0]} requests in 1 s, {peaks[1]} in 60 s "
        f"(limit {RATE_LIMIT.limit} per {RATE_LIMIT.window_seconds:g} s)",
    )


class PassingRun:
    """The passing session, run in a background thread (it mostly waits) while other figures run."""

    def __init__(self, seconds: float, speed: float) -> None:
        self.seconds, self.speed = seconds, speed
        self.rows: list[Row] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="bench-passing", daemon=True)

    def start(self) -> PassingRun:
        self._thread.start()
        return self

    def _main(self) -> None:
        spawner = Spawner()  # its own: the main thread's spawner serves one child at a time
        try:
            checks = [worlds.check(0, "passing", "pass", self.seconds)]
            stats, real, code, peaks = _run(checks, "passing", self.speed, spawner)
            if code != 0:
                raise RuntimeError(f"the passing session's run exited {code}, expected 0")
            self.rows = [_row(f"passing session of {real:.1f} s", stats, real, 0, self.speed, peaks)]
        except BaseException as exc:
            self.error = exc
        finally:
            spawner.close()

    def result(self) -> list[Row]:
        self._thread.join(300)
        if self.error is not None:
            raise SystemExit(f"bench: the passing-session run failed: {self.error!r}")
        return self.rows


def failing(spawner: Spawner) -> list[Row]:
    checks = [worlds.check(i, "failing", "fail", FAILING_SECONDS) for i in range(FAILING_GROUPS)]
    stats, real, code, peaks = _run(checks, "failing", 1.0, spawner)
    if code != 1:
        raise SystemExit(f"bench: the failing session's run exited {code}, expected 1")
    label = f"failing session, {FAILING_GROUPS} error groups"
    return [_row(label, stats, real, FAILING_GROUPS, 1.0, peaks)]
