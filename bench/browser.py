"""Browser checks through testsession against the same script run by Playwright's own runner.

    python bench/browser.py [--repeat 3] [--many 20] [--many-repeat 1]

1. One check: `testsession run --checks` of a checks file holding the example's BROWSER check `Sign in`
   against examples/local-app/shop.py, against `npx playwright test` of the same script with the same
   browser, flags, trace and screenshot settings (one worker). The median wall time of each, and the
   ratio (goal <= 1.0 x).
2. Many checks: `--many` copies of the check in one run at testsession's default browser concurrency
   (DEFAULT_CONCURRENCY, 2), against Playwright running as many test files with `--workers` = that
   concurrency (goal <= 1.0 x); the median of `--many-repeat` runs of each.
Both use the same Playwright (testsession's cache for the runtime) and the machine's Chromium. Real
processes, wall time from start to exit, ours and theirs alternating after one untimed run of each
(Playwright's compile cache warm on both sides, as from a project's second run); CPU time (user +
system of the command and its children) is printed beside it, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from browser_env import PASSWORD, Shop, missing  # noqa: E402

from runner.checks.protocols.browser import DEFAULT_CONCURRENCY  # noqa: E402
from runner.checks.protocols.browser.script import CHROMIUM_FLAGS  # noqa: E402
from runner.checks.protocols.browser.setup import find_browser, find_playwright  # noqa: E402


def checks_file(folder: Path, shop_url: str, copies: int) -> tuple[Path, str]:
    """A checks file with `copies` copies of the example's `Sign in` (its variables: the shop's URL and
    password); returns it and the script."""
    world: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks.yml").read_text())
    check = next(c for c in world["accounts"][0]["checks"] if c["name"] == "Sign in")
    checks = [
        {
            "name": f"Sign in {n}",
            "checkType": "BROWSER",
            "runtimeId": check["runtimeId"],
            "script": check["script"],
        }
        for n in range(1, copies + 1)
    ]
    variables = [{"key": "SHOP_URL", "value": shop_url},
                 {"key": "SHOP_PASSWORD", "value": PASSWORD, "secret": True}]  # fmt: skip
    (folder / "checks.yml").write_text(yaml.safe_dump({"variables": variables, "checks": checks}))
    return folder / "checks.yml", str(check["script"])


def playwright_project(folder: Path, script: str, copies: int, workers: int) -> Path:
    """The same script as `copies` spec files, with the settings testsession generates."""
    playwright = find_playwright(Path("/nonexistent"), None, progress=print, deadline=time.monotonic() + 300,
                                 stop=None)  # fmt: skip
    browser = find_browser(playwright)
    project = folder / "pw"
    project.mkdir()
    (project / "node_modules").symlink_to(playwright.root / "node_modules")
    for n in range(copies):
        (project / f"check{n}.spec.ts").write_text(script)
    flags = [*CHROMIUM_FLAGS, *(["--no-sandbox"] if os.geteuid() == 0 else [])]
    config = {
        "testDir": ".", "workers": workers, "retries": 0, "reporter": "line",
        "outputDir": str(folder / "pw-out"),
        "use": {"headless": True, "screenshot": "only-on-failure", "trace": "retain-on-failure",
                "launchOptions": {"executablePath": str(browser), "args": flags}},
    }  # fmt: skip
    (project / "playwright.config.cjs").write_text(f"module.exports = {json.dumps(config)};\n")
    return project


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children)."""
    before = os.times()
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    took = time.monotonic() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(
            f"{argv[0]} ... failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return took, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def measure(copies: int, repeat: int, shop: Shop) -> tuple[tuple[float, float], tuple[float, float]]:
    """The medians of (wall, CPU) of ours and of theirs."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checks, script = checks_file(folder, shop.url, copies)
        workers = min(copies, DEFAULT_CONCURRENCY)
        project = playwright_project(folder, script, copies, workers)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI", "TESTSESSION_"))}
        env_pw = {
            **env,
            "SHOP_URL": shop.url,
            "SHOP_PASSWORD": PASSWORD,
            "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        }
        run = [sys.executable, "-m", "runner", "run", "--checks", str(checks), "--no-rca"]
        ours_run = ([*run, "--junit", "", "--markdown", "", "--json", ""], folder, env)
        theirs_run = (["npx", "playwright", "test", "--config", "playwright.config.cjs"], project, env_pw)
        # Untimed, one each: Playwright's compile cache is keyed by a file's path and content, so a
        # project run again (theirs in its folder, ours in its run folder: place.py) skips the compile;
        # both sides are timed warm, as a project is run from its second run on.
        timed(*ours_run)
        timed(*theirs_run)
        ours, theirs = [], []
        for _ in range(repeat):
            ours.append(timed(*ours_run))
            theirs.append(timed(*theirs_run))
        shutil.rmtree(folder / "pw-out", ignore_errors=True)
        return _medians(ours), _medians(theirs)


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--many", type=int, default=20)
    parser.add_argument("--many-repeat", type=int, default=1)
    args = parser.parse_args()
    reason = missing()
    if reason:
        raise SystemExit(reason)
    shop = Shop()
    try:
        for copies in (1, args.many):
            load = os.getloadavg()[0]
            ours, theirs = measure(copies, args.repeat if copies == 1 else args.many_repeat, shop)
            said = (f"{copies} browser check(s): testsession run --checks {ours[0]:.2f} s "
                    f"(CPU {ours[1]:.2f} s), "
                    f"npx playwright test {theirs[0]:.2f} s (CPU {theirs[1]:.2f} s), "
                    f"{ours[0] / theirs[0]:.2f} x (load average {load:.1f} at the start, "
                    f"{os.getloadavg()[0]:.1f} at the end)")  # fmt: skip
            print(said, flush=True)
    finally:
        shop.stop()


if __name__ == "__main__":
    main()
