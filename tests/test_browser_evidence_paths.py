"""Where a browser check's evidence goes (issue 40): folders named from the check's id (in a safe
charset) and counters, never from a test's title or user text, and every file a report names exists
(a browser check's and a Playwright check suite's: tests/test_browser_run.py, one run with both)."""

from __future__ import annotations

import hashlib
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


def test_a_link_planted_as_a_checks_evidence_folder_is_not_followed(tmp_path: Path) -> None:
    """testsession-reports/browser/<id> -> elsewhere would have taken the screenshots and traces there;
    the check does not run and says why (the gate never passes), the link's target stays empty."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "testsession-reports" / "browser").mkdir(parents=True)
    # The id `../../../x` in the charset, and the start of its SHA-256 (ids the charset changed keep apart).
    named = "x-" + hashlib.sha256(b"../../../x").hexdigest()[:10]
    (tmp_path / "testsession-reports" / "browser" / named).symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "b.yml").write_text(TITLED_BY_A_SECRET % (SECRET, tmp_path / "note"), encoding="utf-8")
    ran = run_here(["run", "--checks", "b.yml", "--no-rca"], child_env(), tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert f"evidence folder testsession-reports/browser/{named}: is a symbolic link" in ran.stdout
    assert list(elsewhere.iterdir()) == []
    assert not (tmp_path / "note").exists()  # the script never ran
