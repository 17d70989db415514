"""`testsession run` with the example world's BROWSER and MULTI_STEP checks, real Chromium and Playwright:
the broken build's failures in every report with their files and analyses, and SIGTERM mid-check."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml
from browser_env import PASSWORD, REPO, Shop, a_browser_of, needs_browser, processes_with, sigterm_when
from helpers import child_env, run_here

pytestmark = needs_browser()
WORLD = REPO / "examples" / "local-checks.yml"


def spec(tmp_path: Path, shop_url: str, **variables: str) -> Path:
    """The example spec for the browser checks only, without retries (each browser run costs seconds)."""
    data: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks-spec.yml").read_text())
    data["target"] = {"matchTags": [["browser-local"]]}
    data.pop("retryStrategy", None)
    data["environmentVariables"] = [
        {"key": k, "value": v} for k, v in {"SHOP_URL": shop_url, **variables}.items()
    ]
    path = tmp_path / "spec.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_broken_build_fails_naming_the_page_change_with_its_files_and_no_secret(tmp_path: Path) -> None:
    shop = Shop(broken=True)
    try:
        ran = run_here(["run", str(spec(tmp_path, shop.url)), "--emulator", "--world", str(WORLD)],
                       child_env(SHOP_PASSWORD=PASSWORD), tmp_path)  # fmt: skip
    finally:
        shop.stop()
    assert ran.returncode == 1, ran.stdout + ran.stderr
    reports = tmp_path / "testsession-reports"
    results = json.loads((reports / "results.json").read_text())
    by_name = {r["name"]: r for s in results["sessions"] for r in s["results"]}
    sign_in, journey = by_name["Sign in"], by_name["Products and cart"]
    assert 'expected "Welcome, shopper", received "Your account"' in sign_in["error"]
    assert "503" in journey["error"] and journey["verdict"] == "failed"
    files = {a["name"]: tmp_path / a["path"] for a in sign_in["attachments"]}
    assert files["screenshot"].is_file() and files["trace"].name == "trace.zip" and files["trace"].is_file()
    junit = (reports / "junit.xml").read_text()
    assert f"[[ATTACHMENT|{sign_in['attachments'][1]['path']}]]" in junit or "[[ATTACHMENT|" in junit
    assert str(files["trace"].relative_to(tmp_path)) in (reports / "summary.md").read_text()
    models = {g["analysis"]["model"] for s in results["sessions"] for g in s["errorGroups"]}
    assert "rules-v1/run-browser-assertion" in models
    for text in (ran.stdout, ran.stderr, junit, (reports / "results.json").read_text(),
                 (reports / "summary.md").read_text()):  # fmt: skip
        assert PASSWORD not in text


def test_sigterm_mid_check_ends_the_run_within_5_s_and_leaves_no_browser(tmp_path: Path) -> None:
    shop = Shop()
    marker = f"TESTSESSION_TEST_MARKER_{uuid.uuid4().hex}"
    try:
        # The marker is a session variable: process.env of the script, inherited by the browser.
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", str(spec(tmp_path, shop.url, MARKER=marker)),
             "--emulator", "--world", str(WORLD)],
            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        took, out, err = sigterm_when(proc, lambda: a_browser_of(marker), "no browser started")
        left = processes_with(marker)
    finally:
        shop.stop()
    assert took < 5.0, (took, out, err)
    assert proc.returncode == 143, out + err
    assert left == [], left
    assert (tmp_path / "testsession-reports" / "results.json").is_file()
