"""Several browser checks of one run share one `playwright test` (batch.py): SIGTERM during the shared run
leaves no Node or Chromium, and a check that stops the shared run fails alone. That each check of a
shared run keeps its own verdict, variables and files: tests/test_browser_run.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_env import (
    PASSWORD,
    PID_SCRIPT,
    REPO,
    Shop,
    a_browser_of,
    needs_browser,
    processes_with,
    sigterm_when,
)
from helpers import child_env

pytestmark = needs_browser()


def two_checks(tmp_path: Path, shop_url: str, pids: Path) -> tuple[Path, Path]:
    """The example world with two BROWSER checks: `Passes` expects the good build's heading, `Fails` a
    heading the page never shows."""
    world: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks.yml").read_text())
    account = world["accounts"][0]
    account["checks"] = [
        {"id": f"5e0c7a1b-0000-4c2d-9e8f-00000000009{n}", "name": name, "checkType": "BROWSER",
         "tags": ["batch"], "runtimeId": "2026.04", "script": PID_SCRIPT.replace("HEADING", repr(heading))}
        for n, (name, heading) in enumerate((("Passes", "Welcome, shopper"), ("Fails", "Welcome, admin")))
    ]  # fmt: skip
    spec: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks-spec.yml").read_text())
    spec["target"] = {"matchTags": [["batch"]]}
    spec.pop("retryStrategy", None)
    spec["environmentVariables"] = [
        {"key": "SHOP_URL", "value": shop_url},
        {"key": "PIDS", "value": str(pids)},
    ]
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world))
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(spec))
    return tmp_path / "spec.yml", tmp_path / "world.yml"


def test_sigterm_during_a_shared_run_ends_it_within_5_s_and_leaves_no_browser(tmp_path: Path) -> None:
    shop, pids = Shop(), tmp_path / "pids"
    pids.mkdir()
    marker = f"TESTSESSION_TEST_MARKER_{uuid.uuid4().hex}"
    try:
        spec, world = two_checks(tmp_path, shop.url, pids)
        # The run's temporary folders (the shared run's generated project): a short path, as Chromium's
        # own socket under TMPDIR must fit a socket address (108 bytes; tmp_path is too long).
        scratch = Path(tempfile.mkdtemp(prefix="ts-"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", str(spec), "--emulator", "--world", str(world), "--env",
             f"MARKER={marker}"],
            cwd=tmp_path, env=child_env(SHOP_PASSWORD=PASSWORD, TMPDIR=str(scratch)), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

        def both_started() -> bool:  # both checks' tests began, a browser is up
            return len(list(pids.iterdir())) == 2 and a_browser_of(marker)

        took, out, err = sigterm_when(proc, both_started, "the checks did not start")
        left = processes_with(marker)
    finally:
        shop.stop()
    assert took < 5.0, (took, out, err)
    assert proc.returncode == 143, out + err
    assert left == [], left
    assert (tmp_path / "testsession-reports" / "results.json").is_file()  # the reports of a signalled run
    kept = [p.name for p in scratch.iterdir() if p.name.startswith("testsession-")]
    shutil.rmtree(scratch, ignore_errors=True)
    assert kept == []  # removed at exit, though the check's thread never got there


def test_a_check_that_stops_the_shared_run_fails_alone_and_the_others_are_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Playwright runs no test when one file does not compile, and only `test.only` tests when a file has
    one: the checks such a run could not judge run again without it. No page: no browser starts."""
    import runner.checks.protocols.browser as browser
    from runner.checks import run_check
    from runner.checks.failures import FailureKind
    from runner.models.check_definitions import parse_check_definition

    monkeypatch.setattr(browser.OPTIONS, "artifacts_dir", tmp_path / "browser")
    head = "const { test, expect } = require('@playwright/test')\n"
    scripts = {
        "plain": head + "test('adds', () => { expect(1 + 1).toBe(2) })",
        "broken": head + "test('bad', () => { expect(1).toBe( })",
        "only": head + "test.only('only', () => {})\ntest('skipped', () => { throw new Error('ran') })",
    }
    checks = [
        parse_check_definition({"name": n, "checkType": "BROWSER", "script": s}) for n, s in scripts.items()
    ]
    with ThreadPoolExecutor(3) as pool:  # ready together: one shared run first
        runs = dict(zip(scripts, pool.map(lambda c: run_check(c, max_run_seconds=240), checks), strict=True))
    assert runs["plain"].passed, runs["plain"].final.message
    assert runs["only"].passed, runs["only"].final.message
    broken = runs["broken"].final
    assert broken.error_kind is FailureKind.INVALID_DEFINITION and "SyntaxError" in (broken.message or "")
