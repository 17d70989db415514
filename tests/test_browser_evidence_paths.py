"""Where a browser check's evidence goes (issue 40): folders named from the check's id (in a safe
charset) and counters, never from a test's title or user text, and every file a report names exists."""

from __future__ import annotations

import json
from pathlib import Path

from browser_env import needs_browser
from helpers import child_env, run_here

pytestmark = needs_browser()


SECRET = "s3cr3tValue6633"
TITLED_BY_A_SECRET = """\
variables:
  - {key: BRW_SECRET, value: "%s", secret: true}
  - {key: NOTE, value: "%s"}
checks:
  - name: types
    id: ../../../x
    checkType: BROWSER
    script: |
      const fs = require('fs');
      const { test, expect } = require('@playwright/test');
      test('types ' + process.env.BRW_SECRET, async ({ page }) => {
        fs.writeFileSync(process.env.NOTE, test.info().outputDir);
        await page.setContent('<h1>shop</h1>');
        expect(1).toBe(2);
      });
"""


def test_a_secret_in_a_test_title_reaches_no_path_and_every_named_file_exists(tmp_path: Path) -> None:
    """Playwright names a test's folder after its title: `check-types-<secret>-6633/` was written in
    clear while results.json had no attachments and summary.md named `check-types-***/trace.zip`, which
    does not exist. An id of `../../../x` moved the files out of testsession-reports/browser/."""
    work = tmp_path / "work"
    work.mkdir()
    note = tmp_path / "output-dir.txt"
    (work / "b.yml").write_text(TITLED_BY_A_SECRET % (SECRET, note), encoding="utf-8")
    ran = run_here(["run", "--checks", "b.yml", "--no-rca"], child_env(), work)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert SECRET not in note.read_text(encoding="utf-8")  # not even while the test ran
    everything = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")]
    assert not [p for p in everything if SECRET in p], everything
    reports = work / "testsession-reports"
    browser = reports / "browser"
    assert [p for p in everything if p.startswith("work/")] == [
        p for p in everything if p.startswith(("work/b.yml", "work/testsession-reports"))
    ], everything
    results = (reports / "results.json").read_text(encoding="utf-8")
    (result,) = [r for s in json.loads(results)["sessions"] for r in s["results"]]
    named = {a["name"]: a["path"] for a in result["attachments"]}
    assert {"screenshot", "trace"} <= set(named), result
    summary, junit = (reports / "summary.md").read_text(), (reports / "junit.xml").read_text()
    for path in named.values():
        assert (work / path).is_file(), path
        assert (work / path).resolve().is_relative_to(browser.resolve()), path
        assert path in summary and path in junit, path
    assert Path(named["trace"]).relative_to("testsession-reports/browser").parts[:3] == (
        "x",
        "attempt-1",
        "test-1",
    )
    assert SECRET not in ran.stdout + ran.stderr + results + summary + junit


def test_a_check_suites_test_folders_are_counted_not_titled(tmp_path: Path) -> None:
    """A Playwright check suite's tests are the user's own (their titles too): each folder is renamed
    test-<n> after the run, the reports' paths with it, and a passing test's title-named folder goes."""
    from browser_env import Shop
    from test_playwright_suite import checks_file, project, results, suite

    project(tmp_path)
    shop = Shop(broken=True)
    try:
        ran = run_here(["run", "--checks", str(checks_file(tmp_path, suite(), shop_url=shop.url))],
                       child_env(), tmp_path)  # fmt: skip
    finally:
        shop.stop()
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (result,) = results(tmp_path)
    named = [a["path"] for a in result["attachments"]]  # type: ignore[attr-defined]
    assert named, result
    browser = tmp_path / "testsession-reports" / "browser"
    for path in named:
        assert (tmp_path / path).is_file(), path
        assert Path(path).relative_to("testsession-reports/browser").parts[2].startswith("test-"), path
    folders = [p.relative_to(browser).parts for p in browser.rglob("*") if p.is_dir()]
    assert all(len(parts) < 3 or parts[2].startswith("test-") for parts in folders), folders
    assert not [parts for parts in folders if any("signs-in" in part for part in parts)], folders


def test_a_link_planted_as_a_checks_evidence_folder_is_not_followed(tmp_path: Path) -> None:
    """testsession-reports/browser/<id> -> elsewhere would have taken the screenshots and traces there;
    the check does not run and says why (the gate never passes), the link's target stays empty."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "testsession-reports" / "browser").mkdir(parents=True)
    (tmp_path / "testsession-reports" / "browser" / "x").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "b.yml").write_text(TITLED_BY_A_SECRET % (SECRET, tmp_path / "note"), encoding="utf-8")
    ran = run_here(["run", "--checks", "b.yml", "--no-rca"], child_env(), tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "evidence folder testsession-reports/browser/x: is a symbolic link" in ran.stdout, ran.stdout
    assert list(elsewhere.iterdir()) == []
    assert not (tmp_path / "note").exists()  # the script never ran
