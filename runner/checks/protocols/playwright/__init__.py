"""PLAYWRIGHT checks (Playwright check suites): the user's own Playwright project, run where it is.

A protocol of the engine (protocols/base.py). `perform` finds the project (project.py: the folder, its
config, its @playwright/test; nothing installed), the browser by BROWSER's rules (browser/setup.py
find_browser: a named one, Playwright's own, else the machine's Chromium), runs the check's testCommand
there (suite.py) within the type's run limit (production's 30 minutes) and job.stop, and turns the
report into the observation as a BROWSER check's (browser/report.py): each test a step, the first
failed test's expectation the failure, screenshots and traces kept under the reports folder. A suite
takes one browser slot (browser/__init__.py: the browser checks' concurrency).

`browsers` (what production installs: the browsers of the config's projects): Chromium runs here (the
machine's, or Playwright's own); Firefox and WebKit only where Playwright's own build is installed.
The projects of a browser that cannot run are left out of the run, the rest runs, and the check fails
closed naming the browser and the command that installs it (`browser_gaps`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from runner.checks.failures import Failure, FailureKind, NotRun
from runner.checks.outcome import Step, SuiteTest
from runner.checks.protocols import browser
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.browser.folders import drop_title_folders, renamed
from runner.checks.protocols.browser.report import browser_tests, suite_tests
from runner.checks.protocols.browser.setup import Playwright, SetupError, find_browser, own_build
from runner.checks.protocols.playwright.project import ProjectMissing, find_project
from runner.checks.protocols.playwright.suite import run_suite
from runner.models.check_definitions import Assertion, PlaywrightCheckDefinition


class PlaywrightSuiteProtocol(CheckProtocol[PlaywrightCheckDefinition]):
    def assertions(self, check: PlaywrightCheckDefinition) -> Sequence[Assertion]:
        return ()  # the tests' expect() calls are its assertions

    def perform(self, check: PlaywrightCheckDefinition, job: Job) -> Observation:
        pool = browser.wait_for_slot(job)  # queueing, as a browser check's (its run limit starts after)
        if pool is None:
            return browser._observed(time.monotonic(), cancelled=True)
        start = time.monotonic()
        deadline = start + job.bounds.seconds
        try:
            base = Path(check.projectDir) if check.projectDir else (browser.OPTIONS.workdir or Path.cwd())
            try:
                project = find_project(base, check)
                missing = browser_gaps(project.playwright, check.browsers)
                if missing and len(missing) == len(set(check.browsers)):
                    raise ProjectMissing(_gap_message(missing, project.folder, ran=False))
                executable = find_browser(project.playwright)
            except (ProjectMissing, SetupError) as exc:
                raise NotRun(FailureKind.NOT_RUNNABLE_LOCALLY, str(exc)) from None
            out_dir = browser.attempt_dir(check, job.attempt)
            try:
                run = run_suite(project, browser=executable, output_dir=out_dir,
                                variables=job.subst.environment(), deadline=deadline,
                                stop=job.stop, skip_browsers=missing)  # fmt: skip
            except OSError as exc:
                why = f"cannot write testsession's config beside {project.config} ({exc.strerror or exc})"
                raise NotRun(FailureKind.NOT_RUNNABLE_LOCALLY, why) from None
        finally:
            pool.release()
        if run.report is not None:  # each test's folder as test-<n>, never its title (folders.py)
            tests = run.report.get("tests")
            moved = renamed(tests if isinstance(tests, list) else [], out_dir, out_dir)
            run = replace(run, report={**run.report, "tests": moved})
        drop_title_folders(out_dir)
        browser._drop_if_empty(out_dir)
        seen = browser._judged(check, run, start, job, code="testCommand")
        if run.report is not None:  # each test with its outcome and runs, the passed ones too
            seen = seen._replace(tests=suite_tests(browser_tests(run.report)))
        if not missing or seen.cancelled:
            return seen
        # The other browsers ran; the check still fails closed: part of it did not run.
        message = _gap_message(missing, project.folder, ran=True)
        gaps = tuple(Step(f"[{name}] not run", False, 0.0, message) for name in missing)
        failure = seen.failure or Failure(FailureKind.NOT_RUNNABLE_LOCALLY, message, network=False)
        not_run = tuple(SuiteTest(f"[{name}] (its projects)", "not run", 0) for name in missing)
        return seen._replace(failure=failure, steps=seen.steps + gaps, tests=seen.tests + not_run)


def browser_gaps(playwright: Playwright, browsers: Sequence[str]) -> tuple[str, ...]:
    """The browsers of `browsers` that cannot run here: Firefox and WebKit without Playwright's own
    build (Chromium has the machine's; find_browser says when there is none)."""
    wanted = dict.fromkeys(b for b in browsers if b != "chromium")
    return tuple(b for b in wanted if own_build(playwright, b) is None)


def _gap_message(missing: Sequence[str], folder: Path, ran: bool) -> str:
    names = " and ".join(missing)
    which = "its other browsers' projects ran; " if ran else ""
    return (
        f"{names} cannot run here: Playwright's own {names} build is not installed ({which}install it with "
        f"`npx playwright install {' '.join(missing)}` in {folder}, where the network allows)"
    )


PROTOCOL = PlaywrightSuiteProtocol()
