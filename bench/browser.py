"""Browser checks through testsession against the same script run by Playwright's own runner.

    python bench/browser.py [--repeat 3] [--many 20] [--many-repeat 1]

1. One check: `testsession run --emulator` with the example world's BROWSER check `Sign in` against
   examples/local-app/shop.py, against `npx playwright test` of the same script with the same browser,
   flags, trace and screenshot settings (one worker). The median wall time of each, and the ratio
   (goal <= 1.3 x).
2. Many checks: `--many` copies of the check in one run at testsession's default browser concurrency
   (DEFAULT_CONCURRENCY, 2; the example world's executor concurrency, 8, as a user has it), against
   Playwright running as many test files with `--workers` = that concurrency (goal: no slower); the
   median of `--many-repeat` runs of each.
Both use the same Playwright (testsession's cache for the runtime) and the machine's Chromium. Real
processes, wall time from start to exit.
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


def world_and_spec(folder: Path, shop_url: str, copies: int) -> tuple[Path, Path]:
    world: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks.yml").read_text())
    account = world["accounts"][0]
    check = next(c for c in account["checks"] if c["name"] == "Sign in")
    account["checks"] = [
        {**check, "id": f"5e0c7a1b-0000-4c2d-9e8f-{n:012d}", "name": f"Sign in {n}", "tags": ["bench"]}
        for n in range(1, copies + 1)
    ]
    world["settings"]["executor"]["concurrency"] = 8
    spec: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks-spec.yml").read_text())
    spec["target"] = {"matchTags": [["bench"]]}
    spec.pop("retryStrategy", None)
    spec["wait"] = {"timeoutSeconds": 1800}  # 20 browser checks on a loaded 2-core machine take minutes
    spec["environmentVariables"] = [{"key": "SHOP_URL", "value": shop_url}]
    (folder / "world.yml").write_text(yaml.safe_dump(world))
    (folder / "spec.yml").write_text(yaml.safe_dump(spec))
    return folder / "world.yml", folder / "spec.yml"


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


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{argv[0]} ... failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return took


def measure(copies: int, repeat: int, shop: Shop) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        world, spec = world_and_spec(folder, shop.url, copies)
        check = yaml.safe_load(world.read_text())["accounts"][0]["checks"][0]
        script = check["script"]
        workers = min(copies, DEFAULT_CONCURRENCY)
        project = playwright_project(folder, script, copies, workers)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI", "TESTSESSION_"))}
        env_ts = {**env, "SHOP_PASSWORD": PASSWORD}
        env_pw = {
            **env,
            "SHOP_URL": shop.url,
            "SHOP_PASSWORD": PASSWORD,
            "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        }
        ours, theirs = [], []
        for _ in range(repeat):
            run = [sys.executable, "-m", "runner", "run", str(spec), "--emulator", "--world", str(world)]
            ours.append(timed([*run, "--junit", "", "--markdown", "", "--json", ""], folder, env_ts))
            theirs.append(
                timed(["npx", "playwright", "test", "--config", "playwright.config.cjs"], project, env_pw)
            )
        shutil.rmtree(folder / "pw-out", ignore_errors=True)
        return statistics.median(ours), statistics.median(theirs)


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
            ours, theirs = measure(copies, args.repeat if copies == 1 else args.many_repeat, shop)
            print(f"{copies} browser check(s): testsession {ours:.2f} s, npx playwright test {theirs:.2f} s, "
                  f"{ours / theirs:.2f} x (load average {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    finally:
        shop.stop()


if __name__ == "__main__":
    main()
