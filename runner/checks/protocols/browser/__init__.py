"""BROWSER and MULTI_STEP checks: the check's Playwright Test script with Node, Playwright and Chromium.

    fields = run_browser(check, subst, number=1, bound=240.0, stop=stop)   # Attempt's fields

Where Playwright and the browser come from: setup.py. How the script runs: script.py. What it showed:
report.py. Options (`OPTIONS`, set once by the caller before checks run, else from the environment):
- artifacts_dir: screenshots and traces go to `<artifacts_dir>/<check>-<id>/attempt-<n>/`
  (TESTSESSION_ARTIFACTS_DIR, default testsession-reports/browser in the working directory);
- concurrency: at most this many browser attempts at once (TESTSESSION_BROWSER_CONCURRENCY, default 2:
  a Chromium takes most of a core while a page loads; production gives each browser check 1.7 CPUs);
- workdir: where the check's project is (its node_modules), default the working directory;
- progress: where the one-time Playwright install reports (default: a line on stderr).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.checks.outcome import CONFIGURATION_ERROR, TIMEOUT, BrowserEvidence
from runner.checks.protocols.browser import report as reports
from runner.checks.protocols.browser.script import run_script
from runner.checks.protocols.browser.setup import (
    RUNTIMES,
    Progress,
    SetupError,
    find_browser,
    find_playwright,
)
from runner.checks.variables import Substitution

BROWSER_TYPES = frozenset({"BROWSER", "MULTI_STEP"})
DEFAULT_CONCURRENCY = 2
# Production's run limit for browser and multi-step checks (browser-checks/timeouts.mdx: 240 s, fixed),
# used when the caller gives none (the world's maxRunSeconds: BROWSER and MULTI_STEP 240).
DEFAULT_RUN_SECONDS = 240.0


def _stderr_line(text: str) -> None:
    print(f"testsession: {text}", file=sys.stderr, flush=True)


def _concurrency() -> int:
    try:
        return max(1, int(os.environ.get("TESTSESSION_BROWSER_CONCURRENCY", DEFAULT_CONCURRENCY)))
    except ValueError:
        return DEFAULT_CONCURRENCY


@dataclass
class BrowserOptions:
    artifacts_dir: Path = field(
        default_factory=lambda: Path(
            os.environ.get("TESTSESSION_ARTIFACTS_DIR", "testsession-reports/browser")
        )
    )
    concurrency: int = field(default_factory=_concurrency)
    workdir: Path | None = None
    progress: Progress = _stderr_line


OPTIONS = BrowserOptions()
_slots_lock = threading.Lock()
_slots: tuple[int, threading.BoundedSemaphore] | None = None


def _slot_pool() -> threading.BoundedSemaphore:
    global _slots
    with _slots_lock:
        if _slots is None or _slots[0] != OPTIONS.concurrency:
            _slots = (OPTIONS.concurrency, threading.BoundedSemaphore(OPTIONS.concurrency))
        return _slots[1]


def run_browser(
    check: Any,
    subst: Substitution,
    *,
    number: int,
    bound: float,
    bound_text: str,
    stop: threading.Event | None,
) -> dict[str, Any]:
    """One attempt's fields (passed, error_class, message, browser evidence ...), secrets not yet masked."""
    start = time.monotonic()
    deadline = start + bound
    script = getattr(check, "script", None) or ""
    if not script.strip():
        return _not_run("invalid_definition", "script: required field is missing (the Playwright Test code)")
    runtime = getattr(check, "runtimeId", None)
    if runtime is not None and runtime not in RUNTIMES:
        allowed = ", ".join(RUNTIMES)
        return _not_run(
            "invalid_definition", f"runtimeId: expected one of {allowed} or null, got {runtime!r}"
        )
    pool = _slot_pool()
    while not pool.acquire(timeout=0.05):  # a slot; the wait counts against the attempt's bound
        if stop is not None and stop.is_set():
            return {"passed": False, "cancelled": True, "error_kind": "cancelled", "message": "cancelled"}
        if time.monotonic() >= deadline:
            return _timeout(f"no browser slot within {bound_text}", bound)
    try:
        workdir = OPTIONS.workdir or Path.cwd()
        playwright = find_playwright(
            workdir, runtime, progress=OPTIONS.progress, deadline=deadline, stop=stop
        )
        browser = find_browser(playwright)
        out_dir = (OPTIONS.artifacts_dir / _folder(check) / f"attempt-{number}").resolve()
        run = run_script(script, playwright=playwright, browser=browser, output_dir=out_dir,
                         variables=subst.environment(), deadline=deadline, stop=stop)  # fmt: skip
    except SetupError as exc:
        return _not_run("browser_setup", str(exc))
    finally:
        pool.release()
    elapsed_ms = round((time.monotonic() - start) * 1000, 3)
    base: dict[str, Any] = {"response_time_ms": elapsed_ms}
    if run.child.cancelled:
        return {**base, "passed": False, "cancelled": True, "error_kind": "cancelled", "message": "cancelled"}
    where = f"{playwright.version} from {playwright.source}"
    if run.report is None:
        evidence = BrowserEvidence(playwright=where, browser=str(browser), log_excerpt=_log(run.child))
        if run.child.timed_out:
            return {
                **base,
                **_timeout(f"the script did not end within {bound_text}", bound),
                "browser": evidence,
            }
        line = _first_error(run.child.stderr + "\n" + run.child.stdout)
        return {
            **base,
            **_not_run("script_error", f"Playwright ended without a report: {line}"),
            "browser": evidence,
        }
    tests = reports.tests_of(run.report)
    _drop_if_empty(out_dir)
    evidence = BrowserEvidence(
        tests=tests,
        events=reports.events_of(run.report),
        artifacts=tuple(
            dataclasses.replace(a, path=_shown(a.path)) for a in reports.artifacts_of(run.report)
        ),
        playwright=where,
        browser=str(browser),
    )
    fields = reports.verdict(run.report, tests)
    if run.child.timed_out:
        fields = _timeout(f"the script did not end within {bound_text}", bound)
    if getattr(check, "shouldFail", False) and fields.get("error_class") != CONFIGURATION_ERROR:
        fields = _should_fail(fields)
    return {**base, **fields, "browser": evidence}


def _should_fail(fields: dict[str, Any]) -> dict[str, Any]:
    """shouldFail on a browser check inverts its verdict (ours; see docs/checks.md)."""
    if fields.get("passed"):
        message = "shouldFail is set and every test passed"
        return {
            "passed": False,
            "error_class": "ASSERTION_FAILURE",
            "error_kind": "should_fail",
            "message": message,
        }
    return {"passed": True}


def _shown(path: str) -> str:
    """A file's path relative to the working directory when it is under it (as the reports name it)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _drop_if_empty(folder: Path) -> None:
    """Playwright makes the output folder of a passing test too; an empty one is removed."""
    with contextlib.suppress(OSError):
        (folder / ".last-run.json").unlink(missing_ok=True)  # Playwright's note for --last-failed
        for path in (folder, folder.parent):
            path.rmdir()  # only when empty


def _folder(check: Any) -> str:
    name = (
        re.sub(r"[^A-Za-z0-9._-]+", "-", str(getattr(check, "name", "") or "check")).strip("-.")[:60]
        or "check"
    )
    ident = str(getattr(check, "id", "") or "")[:8]
    return f"{name}-{ident}" if ident else name


def _not_run(kind: str, message: str) -> dict[str, Any]:
    return {"passed": False, "error_class": CONFIGURATION_ERROR, "error_kind": kind, "message": message}


def _timeout(message: str, bound: float) -> dict[str, Any]:
    return {
        "passed": False,
        "error_class": TIMEOUT,
        "error_kind": "timeout",
        "message": f"timeout: {message}",
    }


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["no output"])[0][:300]


def _log(child: Any) -> str | None:
    text = (child.stderr + "\n" + child.stdout).strip()
    return text[-2000:] or None
