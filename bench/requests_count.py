"""Figure 3: API requests of one `testsession run` against the minimum
2 + ceil(session seconds / 30) + 3 per error group analysed (plus polls of pending analyses).

Counted by the emulator (every /v1 request, by route and status). "Session seconds" is the real time
the runner waits: the long poll's maxWaitSeconds is in real seconds whatever the emulator's speed,
so a session of S simulated seconds at speed x takes S / x real seconds and ceil(S / x / 30) polls.
The full run therefore uses speed 1 and a 45 s session (it runs in the background while the other
figures are measured); --quick uses speed 10, which exercises only one poll.
Polls of pending analyses are the 202 answers of GET /v1/root-cause-analyses/{id}.
"""

from __future__ import annotations

import math
import tempfile
import threading
from pathlib import Path
from typing import Any

import worlds
from common import Row, Spawner, clean_env, console_script

FAILING_GROUPS = 5
FAILING_SECONDS = 3.0


def _run(
    checks: list[dict[str, Any]], tag: str, speed: float, spawner: Spawner, rca: bool = True
) -> tuple[dict[str, Any], float, int]:
    """(the emulator's request counts by route, the session's real seconds, exit code)."""
    from runner.emulator import Emulator

    with (
        tempfile.TemporaryDirectory(prefix="bench-requests-") as tmp,
        Emulator(worlds.world(checks, speed=speed)) as emulator,
    ):
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
        (session,) = emulator.backend.sessions.values()
        assert session.end is not None  # the session ended: the run waited for it
        real_seconds = (session.end - session.start) / emulator.backend.clock.speed
    if child.code not in (0, 1):
        raise SystemExit(f"bench: testsession run exited {child.code}: {child.stderr.strip()[:400]}")
    return stats, real_seconds, child.code


def _row(label: str, stats: dict[str, Any], seconds: float, groups: int, speed: float) -> Row:
    requests = stats["requests"]
    pending = requests.get("get_analysis", {}).get("202", 0)
    minimum = 2 + math.ceil(seconds / 30) + 3 * groups
    total = stats["requestsTotal"]
    by_route = ", ".join(f"{route} {sum(c.values())}" for route, c in requests.items())
    return Row(
        f"requests: {label}",
        f"{total - pending} + {pending} polls of pending analyses" if pending else str(total),
        f"<= {minimum}" + (f" + {pending}" if pending else ""),
        total - pending <= minimum,
        f"session {seconds:g} s real (speed {speed:g}), {groups} groups analysed: "
        f"2 + ceil({seconds:g}/30) + 3 x {groups} = {minimum}; sent: {by_route}",
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
            stats, real, _code = _run(checks, "passing", self.speed, spawner)
            self.rows = [_row(f"passing session of {real:g} s", stats, real, 0, self.speed)]
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
    stats, real, code = _run(checks, "failing", 1.0, spawner)
    if code != 1:
        raise SystemExit(f"bench: the failing session's run exited {code}, expected 1")
    return [_row(f"failing session, {FAILING_GROUPS} error groups", stats, real, FAILING_GROUPS, 1.0)]
