"""Run twice with one --state file: the second run calls the same failure known since the first. With
real checks: examples/local-app/shop.py --broken, and `testsession run examples/local-checks-spec.yml
--emulator --world examples/local-checks.yml --state F` twice, each a process of its own, as two
pipelines sharing the file through the CI cache would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from helpers import EXAMPLES, child_env
from test_local_checks_example import Shop


def run_twice(tmp_path: Path) -> list[tuple[subprocess.CompletedProcess[str], dict[str, Any], str]]:
    shop = Shop(broken=True)
    runs = []
    try:
        assert shop.banner.startswith("shop (broken build)"), shop.banner
        # Where the build listens, as a CI job says it: the environment (read by the spec and world).
        env = child_env(
            SHOP_URL=f"http://127.0.0.1:{shop.port}",
            SHOP_TCP_PORT=str(shop.tcp_port),
            SHOP_DNS_PORT=str(shop.dns_port),
        )
        state = tmp_path / "cache" / "state.db"  # the file the CI cache restores and saves
        for name in ("first", "second"):
            pipeline = tmp_path / name  # a fresh checkout each time: only the state file is shared
            pipeline.mkdir()
            proc = subprocess.run(
                [sys.executable, "-m", "runner", "run", str(EXAMPLES / "local-checks-spec.yml"), "--emulator",
                 "--world", str(EXAMPLES / "local-checks.yml"), "--state", str(state)],
                cwd=pipeline, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            reports = pipeline / "testsession-reports"
            results = json.loads((reports / "results.json").read_text(encoding="utf-8"))
            runs.append((proc, results, (reports / "summary.md").read_text(encoding="utf-8")))
    finally:
        shop.stop()
    return runs


def result(results: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [r for s in results["sessions"] for r in s["results"] if r["name"] == name]
    return found


def error_group(results: dict[str, Any], group_id: str) -> dict[str, Any]:
    [found] = [g for s in results["sessions"] for g in s["errorGroups"] if g["id"] == group_id]
    return found


def console_line(out: str, name: str) -> str:
    """The check's line in the list of results (`  FAILED         Cart API (API, eu-west-1) ...`)."""
    [line] = [line for line in out.splitlines() if line.strip().startswith(f"FAILED         {name} (")]
    return line


def test_the_second_run_calls_the_same_real_failure_known_since_the_first(tmp_path: Path) -> None:
    (first, before, first_md), (second, after, second_md) = run_twice(tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    assert second.returncode == 1, second.stdout + second.stderr  # known, but the gate is failOn any

    # The first run: the cart's 503 is new, first seen during that run.
    cart = result(before, "Cart API")
    assert cart["error"] == "STATUS_CODE EQUALS 200: received 503"
    assert cart["known"] is False
    seen = cart["firstSeen"]
    # As times, not strings: a time on a whole second is written without its fraction.
    at = [
        datetime.fromisoformat(t.replace("Z", "+00:00"))
        for t in (before["startedAt"], seen, before["finishedAt"])
    ]
    assert at[0] <= at[1] <= at[2], (before["startedAt"], seen, before["finishedAt"])
    assert console_line(first.stdout, "Cart API").endswith("— STATUS_CODE EQUALS 200: received 503 [new]")
    assert "**2 new failures** (in this build) · **0 known**" in first_md
    assert "### New in this build (2)" in first_md
    assert "**New:** its error was first seen in this run" in first_md
    assert "Already failing before this build" not in first_md

    # The second run, a new process on the same file: the same failure, known since the first run.
    again = result(after, "Cart API")
    assert again["error"] == cart["error"]
    assert again["known"] is True
    assert again["firstSeen"] == seen  # from the first run, not this one
    assert seen < after["startedAt"]
    assert again["errorGroupIds"] == cart["errorGroupIds"]  # the same error group
    assert "[known since " in console_line(second.stdout, "Cart API")
    assert "**0 new failures** (in this build) · **2 known**" in second_md
    assert "### Already failing before this build (2)" in second_md
    first_seen = datetime.fromisoformat(seen.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M UTC")
    assert "**Known:** its error was first seen " in second_md and f"first seen {first_seen}" in second_md
    assert "New in this build" not in second_md

    # How often: `count` is this session's results in the group (the cart fails, is retried, fails
    # again), `occurrences` every run's that shared the file.
    [group_id] = cart["errorGroupIds"]
    first_group, second_group = error_group(before, group_id), error_group(after, group_id)
    assert (first_group["count"], first_group["occurrences"]) == (2, 2)
    assert (second_group["count"], second_group["occurrences"]) == (2, 4)
    # The analysis the second run shows is the first run's, made from the 503 it saw.
    assert second_group["analysis"]["analysis"] == first_group["analysis"]["analysis"]
    assert second_group["analysis"]["model"] == "rules-v1/run-http-status"

    # The refused line service is the other failure the file remembers.
    line = result(after, "Line service")
    assert line["known"] is True and line["firstSeen"] == result(before, "Line service")["firstSeen"]
