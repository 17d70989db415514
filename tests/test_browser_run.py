"""`testsession run --checks` with BROWSER, MULTI_STEP and PLAYWRIGHT checks, real Chromium and Playwright,
against the broken build: one run holds what a user checks of it. The browser checks share one
`playwright test` (batch.py), each with its own verdict, variables and files; the failures are in every
report with their files and analyses; no secret reaches a path or a report; evidence folders are named
from ids and counters (issue 40), and this run's files replace an earlier run's."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml
from browser_env import PASSWORD, PID_SCRIPT, REPO, Shop, needs_browser
from helpers import child_env, run_here
from test_playwright_suite import project, suite

pytestmark = needs_browser()
SECRET = "s3cr3tValue6633"

# A test titled by a secret, in a check whose id would leave the evidence folder: Playwright names a
# test's folder after its title (`check-types-<secret>-6633/` was written in clear while results.json
# had no attachments), and an id of `../../../x` moved the files out of testsession-reports/browser/.
TITLED_BY_A_SECRET = """const fs = require('fs');
const { test, expect } = require('@playwright/test');
test('types ' + process.env.BRW_SECRET, async ({ page }) => {
  fs.writeFileSync(process.env.NOTE, test.info().outputDir);
  await page.setContent('<h1>shop</h1>');
  expect(1).toBe(2);
});
"""
# The id `../../../types` in the charset, and the start of its SHA-256 (ids the charset changed keep apart).
TYPES = "types-" + hashlib.sha256(b"../../../types").hexdigest()[:10]
PASSES, FAILS = "5e0c7a1b-0000-4c2d-9e8f-000000000090", "5e0c7a1b-0000-4c2d-9e8f-000000000091"


def checks_file(work: Path, shop_url: str, pids: Path, note: Path) -> Path:
    world: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks.yml").read_text())
    examples = [c for c in world["accounts"][0]["checks"] if "browser-local" in c.get("tags", [])]
    assert {c["name"] for c in examples} == {"Sign in", "Products and cart"}
    pid_checks = [
        {"id": id_, "name": name, "checkType": "BROWSER",
         "script": PID_SCRIPT.replace("HEADING", repr(heading))}
        for id_, name, heading in ((PASSES, "Passes", "Your account"), (FAILS, "Fails", "Welcome, admin"))
    ]  # fmt: skip
    titled = {"id": "../../../types", "name": "types", "checkType": "BROWSER", "script": TITLED_BY_A_SECRET}
    variables = [
        {"key": "SHOP_URL", "value": shop_url},
        {"key": "SHOP_PASSWORD", "value": PASSWORD, "secret": True},
        {"key": "SHOP_TOKEN", "value": "s3cret-shop-token", "secret": True},
        {"key": "BRW_SECRET", "value": SECRET, "secret": True},
        {"key": "PIDS", "value": str(pids)},
        {"key": "NOTE", "value": str(note)},
    ]
    checks = [*examples, *pid_checks, titled, suite()]
    path = work / "checks.yml"
    path.write_text(yaml.safe_dump({"variables": variables, "checks": checks}))
    return path


def plant_an_earlier_runs_files(browser: Path) -> list[Path]:
    """Files as an earlier run of the same checks left them (a run's attempts count from 1 again)."""
    planted = [
        browser / TYPES / "attempt-1" / "test-1" / "trace.zip",
        browser / FAILS / "attempt-2" / "x.png",
    ]
    for path in planted:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"an earlier run's")
    return planted


def test_one_run_of_browser_checks_and_a_suite_on_the_broken_build_reports_each_with_its_own_files(
    tmp_path: Path,
) -> None:
    work, pids, note = tmp_path / "work", tmp_path / "pids", tmp_path / "output-dir.txt"
    work.mkdir()
    pids.mkdir()
    e2e = project(work)
    before = sorted(p.relative_to(e2e).as_posix() for p in e2e.rglob("*"))
    reports = work / "testsession-reports"
    browser = reports / "browser"
    planted = plant_an_earlier_runs_files(browser)
    shop = Shop(broken=True)
    try:
        path = checks_file(work, shop.url, pids, note)
        started = time.time_ns()
        ran = run_here(["run", "--checks", str(path)], child_env(), work)
    finally:
        shop.stop()
    assert ran.returncode == 1, ran.stdout + ran.stderr
    results = json.loads((reports / "results.json").read_text())
    by_name = {r["name"]: r for s in results["sessions"] for r in s["results"]}
    files = {
        name: {a["name"]: work / a["path"] for a in r.get("attachments") or []} for name, r in by_name.items()
    }

    # The example's checks: the failures named, with their files, in every report, and analysed.
    sign_in, journey = by_name["Sign in"], by_name["Products and cart"]
    assert 'expected "Welcome, shopper", received "Your account"' in sign_in["error"]
    assert "503" in journey["error"] and journey["verdict"] == "failed"
    assert files["Sign in"]["screenshot"].is_file() and files["Sign in"]["trace"].name == "trace.zip"
    junit, summary = (reports / "junit.xml").read_text(), (reports / "summary.md").read_text()
    assert "[[ATTACHMENT|" in junit
    assert str(files["Sign in"]["trace"].relative_to(work)) in summary
    models = {g["analysis"]["model"] for s in results["sessions"] for g in s["errorGroups"]}
    assert "rules-v1/run-browser-assertion" in models

    # Passes and Fails ran in one Playwright process, each with its own CHECK_NAME, verdict and files.
    assert sorted(p.name for p in pids.iterdir()) == ["Fails", "Passes"]
    assert (pids / "Fails").read_text() == (pids / "Passes").read_text()
    assert by_name["Passes"]["verdict"] == "passed" and not by_name["Passes"].get("attachments")
    assert 'expected "Welcome, admin", received "Your account"' in by_name["Fails"]["error"]
    assert files["Fails"]["screenshot"].is_file() and files["Fails"]["trace"].is_file()
    # Its own folder, named as when it runs alone: its id, the attempt, the test (never its title).
    assert files["Fails"]["trace"].relative_to(browser).parts[:3] == (FAILS, "attempt-1", "test-1")

    # A secret in a test's title reaches no path, not even while the test ran; the id stays inside.
    assert SECRET not in note.read_text(encoding="utf-8")
    everything = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")]
    assert not [p for p in everything if SECRET in p], everything
    assert {"screenshot", "trace"} <= set(files["types"]), by_name["types"]
    assert files["types"]["trace"].relative_to(browser).parts[:3] == (TYPES, "attempt-1", "test-1")

    # The suite (its tests are the user's own, their titles too): its failure and its files, each
    # test's folder counted, not titled; the project is left as it was.
    assert by_name["Shop suite"]["error"] == (
        "[chromium] › sign-in.spec.ts › shopper signs in: expect(locator).toHaveText(expected) "
        "failed: locator getByRole('heading', { level: 1 }), expected \"Welcome, shopper\", received "
        '"Your account"'
    )
    assert files["Shop suite"]["screenshot"].is_file() and files["Shop suite"]["trace"].name == "trace.zip"
    for named in files["Shop suite"].values():
        assert named.relative_to(browser).parts[2].startswith("test-"), named
    assert "ASSERTION FAILURE: The page loaded and an expectation failed: [chromium]" in ran.stdout
    assert sorted(p.relative_to(e2e).as_posix() for p in e2e.rglob("*")) == before

    # Every file a report names exists, under the reports' browser folder, is this run's (an earlier
    # run's files are gone), and is named by summary.md and junit.xml; nothing else is left there.
    for check in files.values():
        for named in check.values():
            assert named.resolve().is_relative_to(browser.resolve()), named
            assert named.stat().st_mtime_ns >= started, f"{named} is an earlier run's"
            shown = named.relative_to(work).as_posix()
            assert shown in summary and shown in junit, shown
    assert [p for p in planted if p.exists() and p.read_bytes() == b"an earlier run's"] == []
    folders = [p.relative_to(browser).parts for p in browser.rglob("*") if p.is_dir()]
    assert all(len(parts) < 3 or parts[2].startswith("test-") for parts in folders), folders
    assert not [parts for parts in folders if any("signs-in" in part for part in parts)], folders
    assert not list(browser.glob(".run-*"))
    assert [p for p in os.listdir(work) if p not in ("checks.yml", "e2e", "testsession-reports")] == []
    for text in (ran.stdout, ran.stderr, *(f.read_text() for f in reports.iterdir() if f.is_file())):
        assert PASSWORD not in text and SECRET not in text
