"""BROWSER and MULTI_STEP checks with real Node, Playwright and Chromium against examples/local-app/shop.py.

Few and lean: each browser run costs seconds. The scripts are the example world's own checks. The checks
of this module run once, together (`runs`): ready at the same moment they share `playwright test` runs
as a run's checks do (batch.py: one for the checks with the same settings, one for the check with its
own playwrightConfig), and one test reads each check's attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_env import PASSWORD, REPO, Shop, needs_browser

import runner.checks.protocols.browser as browser
from runner.checks import CheckRun, Variable, VariableSources, run_check
from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.protocols.browser.report import BrowserTest, describe_failure
from runner.models.check_definitions import parse_check_definition

pytestmark = needs_browser()
TOKEN = "s3cret-shop-token"  # what examples/local-app/shop.py wants by default


def example_check(name: str, **changes: Any) -> Any:
    world = yaml.safe_load((REPO / "examples" / "local-checks.yml").read_text())
    checks = world["accounts"][0]["checks"]
    data = next(c for c in checks if c["name"] == name)
    return parse_check_definition({**data, **changes})


@pytest.fixture(autouse=True)
def artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(browser.OPTIONS, "artifacts_dir", tmp_path / "browser")
    return tmp_path / "browser"


def run(check: Any, shop_url: str, broken_url: str = "http://127.0.0.1:9") -> CheckRun:
    variables = VariableSources(
        session=(Variable("SHOP_URL", shop_url), Variable("BROKEN_SHOP_URL", broken_url)),
        account=(Variable("SHOP_PASSWORD", PASSWORD, True), Variable("SHOP_TOKEN", TOKEN, True)),
    )  # fmt: skip
    return run_check(check, max_run_seconds=240, variables=variables)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, CheckRun]]:
    """Every check of this module, run at once against the good build (SHOP_URL) and the broken one
    (BROKEN_SHOP_URL): its CheckRun by name."""
    good, broken = Shop(), Shop(broken=True)
    saved = browser.OPTIONS.artifacts_dir
    browser.OPTIONS.artifacts_dir = tmp_path_factory.mktemp("browser")
    try:
        checks = {name: make(good.url) for name, make in CHECKS.items()}
        with ThreadPoolExecutor(len(checks)) as pool:
            futures = {name: pool.submit(run, check, good.url, broken.url) for name, check in checks.items()}
            done = {name: future.result() for name, future in futures.items()}
    finally:
        browser.OPTIONS.artifacts_dir = saved
        good.stop()
        broken.stop()
    yield done


def _closed_port() -> int:
    from checks_servers import free_port

    return free_port()


REFUSED_AND_SECRET = """
const {{ test, expect }} = require('@playwright/test')
test('password field', async ({{ page }}) => {{
  await page.goto(`${{process.env.SHOP_URL}}/login`)
  await page.getByLabel('Password').fill(process.env.SHOP_PASSWORD)
  console.log('typed ' + process.env.SHOP_PASSWORD)
  await page.evaluate((p) => console.error('page saw ' + p), process.env.SHOP_PASSWORD)
  await expect(page.getByLabel('Password')).toHaveValue('something else', {{ timeout: 1000 }})
}})
test('closed port', async ({{ page }}) => {{
  await page.goto('http://127.0.0.1:{port}/login')
}})
"""
# baseURL, viewport and timeout are the check's; headless and trace are ours (a headed browser cannot
# start on a runner without a display, so the run passing shows ours won).
CONFIGURED = """const { test, expect } = require('@playwright/test')
test('config', async ({ page }) => {
  await page.goto('/login')
  await expect(page.getByLabel('Username')).toBeVisible()
  expect(page.viewportSize()).toEqual({ width: 411, height: 299 })
  expect(test.info().timeout).toBe(45678)
})
"""
SHARED_SCRIPT = """import { test } from '@playwright/test'
import { signIn } from './helpers/login'
import users from '../data/users.json'
test('signs in through a helper', async ({ page }) => {
  await signIn(page, users.shopper)
})
"""
SHARED_HELPER = """import { expect, type Page } from '@playwright/test'
export async function signIn(page: Page, user: string) {
  await page.goto(`${process.env.SHOP_URL}/login`)
  await page.getByLabel('Username').fill(user)
  await page.getByLabel('Password').fill(process.env.SHOP_PASSWORD ?? '')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Welcome, ${user}`, { timeout: 3000 })
}
"""


def _sign_in_on_the_broken_build(_: str) -> Any:
    script = example_check("Sign in").script
    assert "process.env.SHOP_URL" in script
    script = script.replace("process.env.SHOP_URL", "process.env.BROKEN_SHOP_URL")
    return example_check("Sign in", id="5e0c7a1b-0000-4c2d-9e8f-0000000000b1", script=script)


CHECKS = {
    "sign in": lambda _: example_check("Sign in"),
    "sign in, broken build": _sign_in_on_the_broken_build,
    "refused and secret": lambda _: example_check("Sign in", id="refused",
                                                  script=REFUSED_AND_SECRET.format(port=_closed_port())),
    "multi-step": lambda _: example_check("Products and cart"),
    "configured": lambda url: parse_check_definition({
        "name": "configured", "checkType": "BROWSER", "script": CONFIGURED,
        "playwrightConfig": {"timeout": 45678,
                             "use": {"baseURL": url, "viewport": {"width": 411, "height": 299},
                                     "headless": False, "trace": "on"}},
    }),
    "shared files": lambda _: parse_check_definition({
        "name": "shared", "checkType": "BROWSER", "script": SHARED_SCRIPT,
        "scriptPath": "__checks__/shop.spec.ts",
        "sharedFiles": [{"path": "__checks__/helpers/login.ts", "content": SHARED_HELPER},
                        {"path": "data/users.json", "content": '{"shopper": "shopper"}'},
                        {"path": "../outside.ts", "content": "never written"}],
    }),
}  # fmt: skip


def test_browser_checks_run_together_each_keep_their_own_verdict_steps_and_files(
    runs: dict[str, CheckRun],
) -> None:
    """One test for the checks that ran together (a module fixture shared by several tests would run
    them once per xdist worker)."""
    # The login passes on the good build and names the changed heading on the broken one.
    passed = runs["sign in"]
    assert passed.passed, passed.final.message
    assert [s.name for s in passed.final.steps if s.name.startswith("test ")] == ["test shopper signs in"]
    assert passed.final.files == ()  # a passing test keeps no screenshot or trace

    failed = runs["sign in, broken build"].final
    assert (failed.error_class, failed.error_kind) == (ErrorClass.ASSERTION_FAILURE, FailureKind.ASSERTION)
    message = failed.message or ""
    assert message.startswith("shopper signs in: expect(locator).toHaveText(expected) failed")
    assert "getByRole('heading', { level: 1 })" in message
    assert '"Welcome, shopper"' in message and '"Your account"' in message
    kept = {f.kind: Path(f.path) for f in failed.files}
    assert kept["SCREENSHOT"].read_bytes().startswith(b"\x89PNG")
    assert kept["TRACE"].name == "trace.zip" and kept["TRACE"].stat().st_size > 0
    step = next(s for s in failed.steps if not s.passed and not s.name.startswith("test "))
    assert "toHaveText" in step.name and "Your account" in (step.detail or "")

    # A refused page load is named and a typed secret is masked everywhere.
    attempt = runs["refused and secret"].final
    assert PASSWORD not in repr(attempt)  # steps, errors, console lines, messages: every field
    assert (attempt.error_kind, attempt.message) == (FailureKind.ASSERTION, attempt.message)
    assert 'received "***"' in (attempt.message or "")  # the typed secret, as the field's value
    assert "console error: page saw ***" in " ".join(attempt.console)
    closed = next(s for s in attempt.steps if s.name == "test closed port")
    assert not closed.passed and "net::ERR_CONNECTION_REFUSED at http://127.0.0.1:" in (closed.detail or "")
    # What the attempt says when that test is the first to fail:
    refused = describe_failure(BrowserTest("closed port", "failed", 1.0, error=closed.detail))
    assert (refused.error_class, refused.kind, refused.network) == (
        ErrorClass.NETWORK_ERROR,
        FailureKind.PAGE_LOAD,
        True,
    )
    assert refused.message.startswith(
        "closed port: page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:"
    )

    # A MULTI_STEP check in ESM runs its steps.
    result = runs["multi-step"]
    assert result.passed, result.final.message
    names = [s.name.split(" \u203a ", 1)[1] for s in result.final.steps if " \u203a GET " in s.name]
    assert "GET /api/products" in names and "GET /api/cart" in names  # the script's test.step()s

    # The check's playwrightConfig is honoured where production reads it.
    done = runs["configured"]
    assert done.passed, done.final.message
    assert done.final.files == ()  # `trace: on` was theirs to ask, not to get: a pass keeps none

    # Shared files sit where the script imports them.
    done = runs["shared files"]
    assert done.passed, done.final.message
    tests = [s.name for s in done.final.steps if s.name.startswith("test ")]
    assert tests == ["test signs in through a helper"]


def test_no_browser_fails_closed_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTSESSION_BROWSER", "/nonexistent/chrome")
    attempt = run(example_check("Sign in"), "http://127.0.0.1:9").final
    assert attempt.error_class == ErrorClass.CONFIGURATION_ERROR and "TESTSESSION_BROWSER" in (
        attempt.message or ""
    )
    assert "apt-get install chromium" not in (attempt.message or "")  # a named browser: that one is wrong
    assert attempt.steps == () and attempt.files == ()


def test_a_playwright_config_production_would_not_read_is_one_line_each() -> None:
    check = parse_check_definition({"name": "x", "checkType": "BROWSER", "script": "test",
                                    "playwrightConfig": {"timeout": "soon", "use": []}})  # fmt: skip
    assert check.problems() == ["playwrightConfig.timeout: expected a number of milliseconds, 0 or more",
                                "playwrightConfig.use: expected an object"]  # fmt: skip


def test_shared_files_stay_inside_the_run_folder_and_off_our_own_files(tmp_path: Path) -> None:
    from runner.checks.protocols.browser.script import write_sources

    shared = [("a/helpers/x.ts", "import { expect } from '@playwright/test'"), ("../up.ts", "no"),
              ("/abs.ts", "no"), ("\\win.ts", "no"), ("report.json", '{"fake": "pass"}'),
              ("node_modules/@playwright/test/index.js", "no"), ("./data/u.json", "{}")]  # fmt: skip
    spec = write_sources(tmp_path / "w", "test", "a/s.spec.js", shared)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["w/a/check.spec.ts", "w/a/helpers/x.ts", "w/data/u.json"]
    assert spec == tmp_path / "w" / "a" / "check.spec.ts"
    shim = "import { expect } from '../../node_modules/testsession-test.cjs'"
    assert (tmp_path / "w/a/helpers/x.ts").read_text() == shim


FAILS_AT_ONCE = """const { test, expect } = require('@playwright/test')
test('fails', async ({ page }) => {
  await page.setContent('<h1>shop</h1>')
  expect(1).toBe(2)
})
"""


def test_each_run_in_one_process_counts_its_attempts_from_1_and_keeps_only_its_own_files(
    artifacts: Path,
) -> None:
    """Two runs of one check in one process (the emulator serving sessions, `run_here` in tests): each
    run's first attempt is attempt-1 and empties the folder of what an earlier run left. The count was
    per process: the second run's files went to attempt-2, beside the first run's."""
    check = parse_check_definition({"id": "5e0c7a1b-0000-4c2d-9e8f-0000000000c1", "name": "twice",
                                    "checkType": "BROWSER", "script": FAILS_AT_ONCE})  # fmt: skip
    folder = artifacts / "5e0c7a1b-0000-4c2d-9e8f-0000000000c1"
    earlier = folder / "attempt-1" / "an-earlier-runs-file"
    runs = []
    for _ in range(2):
        ran = run_check(check, max_run_seconds=240)
        runs.append(ran)
        assert [a.passed for a in ran.attempts] == [False], ran.attempts[0].message
        assert not earlier.exists()
        earlier.write_text("the first run's")
    shown = [{Path(f.path).resolve().relative_to(folder).parts[0] for f in r.attempts[0].files} for r in runs]
    assert shown == [{"attempt-1"}, {"attempt-1"}]
    assert {f.kind for f in runs[1].attempts[0].files} >= {"SCREENSHOT", "TRACE"}
    assert sorted(p.name for p in folder.iterdir()) == ["attempt-1"]
