"""BROWSER and MULTI_STEP checks: the check's Playwright Test script with Node, Playwright and Chromium.

A protocol of the engine (protocols/base.py): `PROTOCOL.perform(check, job)` runs one attempt within
job.bounds (the type's run limit: production's 240 s) and job.stop, and returns an Observation whose
failure is the script's own verdict (no assertions of the engine), with the tests' steps, the pages'
console errors and failed requests, and the files (screenshot, trace) as evidence.

Where Playwright and the browser come from: setup.py. Which checks share a `playwright test`: batch.py.
How the scripts run: script.py. What they showed: report.py. Options (`OPTIONS`, set once by the caller
before checks run, else from the environment):
- artifacts_dir: screenshots and traces go to `<artifacts_dir>/<check id>/attempt-<n>/test-<n>/`
  (TESTSESSION_ARTIFACTS_DIR, default testsession-reports/browser in the working directory);
- concurrency: at most this many browsers at once, the workers of a shared run
  (TESTSESSION_BROWSER_CONCURRENCY, default 2: a Chromium takes most of a core while a page loads;
  production gives each browser check 1.7 CPUs); waiting for a run is not the attempt's run time;
- workdir: where the check's project is (its node_modules), default the working directory;
- progress: where the one-time Playwright install reports (default: a line on stderr).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.checks.artifacts import artifacts_dir
from runner.checks.failures import ErrorClass, Failure, FailureKind, NotRun
from runner.checks.outcome import EvidenceFile, Step, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.browser import batch
from runner.checks.protocols.browser import report as reports
from runner.checks.protocols.browser.script import ScriptRun
from runner.checks.protocols.browser.setup import Progress, SetupError, find_browser, find_playwright
from runner.models.check_definitions import Assertion, CheckDefinition, ScriptCheckDefinition

DEFAULT_CONCURRENCY = 2


def _stderr_line(text: str) -> None:
    print(f"testsession: {text}", file=sys.stderr, flush=True)


def _concurrency() -> int:
    try:
        return max(1, int(os.environ.get("TESTSESSION_BROWSER_CONCURRENCY", DEFAULT_CONCURRENCY)))
    except ValueError:
        return DEFAULT_CONCURRENCY


@dataclass
class BrowserOptions:
    artifacts_dir: Path = field(default_factory=artifacts_dir)
    concurrency: int = field(default_factory=_concurrency)
    workdir: Path | None = None
    progress: Progress = _stderr_line


OPTIONS = BrowserOptions()
_slots_lock = threading.Lock()
_slots: tuple[int, threading.BoundedSemaphore] | None = None


def _slot_pool() -> threading.BoundedSemaphore:
    """The browser slots of this process: a shared run of browser checks takes one per worker, a
    Playwright check suite one."""
    global _slots
    with _slots_lock:
        if _slots is None or _slots[0] != OPTIONS.concurrency:
            _slots = (OPTIONS.concurrency, threading.BoundedSemaphore(OPTIONS.concurrency))
        return _slots[1]


def wait_for_slot(job: Job) -> threading.BoundedSemaphore | None:
    """A browser slot, held until the caller releases it; None when the job was stopped first."""
    pool = _slot_pool()
    while not pool.acquire(timeout=0.05):
        if job.stopped:
            return None
    return pool


# How often a check waiting for its run looks at its stop (its run's end wakes it at once): a check
# polls, not its run, so a run of 20 checks woke 400 times a second at 0.05 s (38,000 context switches
# in a 56 s run of 20 checks at load 14; 1.1 s of our process's CPU against 0.4 s for one check).
STOP_POLL = 0.25
MAX_STEPS = 200
FILE_KINDS = {
    "screenshot": "SCREENSHOT",
    "trace": "TRACE",
    "video": "VIDEO",
    "error-context": "PAGE_SNAPSHOT",
}


class BrowserProtocol(CheckProtocol[ScriptCheckDefinition]):
    def assertions(self, check: ScriptCheckDefinition) -> Sequence[Assertion]:
        return ()  # the script's expect() calls are its assertions

    def perform(self, check: ScriptCheckDefinition, job: Job) -> Observation:
        # Waiting for a run (batch.py) is queueing, not the check's run time (production queues runs
        # too): only a stop (cancel, the run's deadline, SIGTERM) ends the wait, and the type's run limit
        # (job.bounds.seconds) bounds the check's own tests (ours; docs/checks.md).
        queued = time.monotonic()
        # A Checkly project's check: Playwright from the project's own node_modules.
        workdir = Path(check.projectDir) if check.projectDir else (OPTIONS.workdir or Path.cwd())
        try:
            playwright = find_playwright(workdir, check.runtimeId, progress=OPTIONS.progress,
                                         deadline=job.bounds.deadline, stop=job.stop)  # fmt: skip
            browser = find_browser(playwright)
        except SetupError as exc:
            raise NotRun(FailureKind.NOT_RUNNABLE_LOCALLY, str(exc)) from None
        out_dir = attempt_dir(check, job.attempt)
        public = {"CHECK_NAME": check.name, "CHECK_ID": check.id, "CHECK_TYPE": check.checkType}
        shared, own = batch.split_environment(job.subst.environment(), public)
        config = check.playwrightConfig
        request = batch.Request(
            key=batch.key_of(playwright, browser, shared, config, job.bounds.seconds * 1000),
            playwright=playwright, variables=shared, own=own, script=check.script or "",
            script_path=check.scriptPath, shared_files=[(f.path, f.content) for f in check.sharedFiles],
            playwright_config=config, output_dir=out_dir, seconds=job.bounds.seconds, stop=job.stop,
        )  # fmt: skip
        batch.BATCHER.submit(request, workers=OPTIONS.concurrency, slots=_slot_pool())
        while True:
            try:
                run = request.future.result(timeout=STOP_POLL)
                break
            except FutureTimeout:
                pass
            except CancelledError:
                return _observed(queued, cancelled=True)
            if job.stopped:
                # Its run is ended once every check in it is stopped: wait for that (no browser may
                # outlive the run), unless the run goes on for checks that were not stopped.
                started = request.run
                if started is not None and started.all_stopped():
                    with contextlib.suppress(FutureTimeout, CancelledError):
                        request.future.result(timeout=batch.STOP_WAIT)
                return _observed(queued, cancelled=True)
        _drop_if_empty(out_dir)
        return _judged(check, run, queued if run.started is None else run.started, job)


PROTOCOL = BrowserProtocol()


def _judged(
    check: CheckDefinition, run: ScriptRun, start: float, job: Job, code: str = "script"
) -> Observation:
    """The attempt's observation from Playwright's run (`code`: the field that names what ran, for a
    run that checked nothing; a Playwright check suite shares this with BROWSER)."""
    if run.own_ms is not None:  # its own time in a run of several checks
        start = time.monotonic() - run.own_ms / 1000
    if run.child.cancelled:
        return _observed(start, cancelled=True)
    timed_out = Failure(
        FailureKind.TIMEOUT, f"timeout: the script did not end within {job.bounds.text}", False
    )
    if run.report is None:
        log = (run.child.stderr + "\n" + run.child.stdout).strip()
        if run.child.timed_out and run.checks > 1:
            said = (f"timeout: the run of {run.checks} browser checks it was in reached its time limit "
                    f"before its tests ended (each check: {job.bounds.text})")  # fmt: skip
            timed_out = Failure(FailureKind.TIMEOUT, said, False)
        if run.child.timed_out:
            return _observed(start, failure=timed_out, console=(log[-2000:],) if log else ())
        ended = Failure(FailureKind.SCRIPT, f"Playwright ended without a report: {_first_error(log)}", False)
        return _observed(start, failure=ended, console=(log[-2000:],) if log else ())
    tests = reports.browser_tests(run.report)
    failure: Failure | None = timed_out if run.child.timed_out else reports.verdict(run.report, tests, code)
    if check.shouldFail and (failure is None or failure.error_class is not ErrorClass.CONFIGURATION_ERROR):
        failure = _inverted(failure)
    files = tuple(
        EvidenceFile(name=a.name, kind=FILE_KINDS.get(a.name, "FILE"), path=_shown(a.path))
        for a in reports.artifacts_of(run.report)
    )
    return _observed(start, failure=failure, steps=_steps(tests),
                     console=tuple(e.line() for e in reports.events_of(run.report)), files=files)  # fmt: skip


def _observed(start: float, **fields: Any) -> Observation:
    elapsed = round((time.monotonic() - start) * 1000, 3)
    timing = TimingPhases(None, None, None, None, None, elapsed)
    return Observation(request=None, timing=timing, **fields)


def _steps(tests: tuple[reports.BrowserTest, ...]) -> tuple[Step, ...]:
    """Each test, then its steps (`shopper signs in › Navigate to "/login"`), at most MAX_STEPS."""
    out: list[Step] = []
    for test in tests:
        passed = test.status in ("passed", "skipped")
        detail = reports.summary(test.error) if test.error else None
        out.append(Step(f"test {test.title}", passed, test.duration_ms, detail if not passed else None))
        out += [
            Step(f"{test.title} \u203a {s.title}", s.error is None, s.duration_ms, s.error)
            for s in test.steps
        ]
    return tuple(out[:MAX_STEPS])


def _inverted(failure: Failure | None) -> Failure | None:
    """shouldFail on a browser check inverts its verdict (ours; see docs/checks.md)."""
    if failure is None:
        return Failure(FailureKind.ASSERTION, "shouldFail is set and every test passed", network=False)
    return None


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


def attempt_dir(check: CheckDefinition, number: int) -> Path:
    """The evidence folder of the check's attempt `number` in its run (absolute; the engine counts a
    check's attempts from 1 in each run: Job.attempt). Its check folder and itself are ours: a link
    planted there (a shared cache or checkout) would take the files elsewhere, so the check does not
    run (NotRun naming it; the gate never passes)."""
    from runner.core.files import PlantedLink, refuse_link, refuse_linked_reports_folder

    folder = OPTIONS.artifacts_dir / _folder(check)
    attempt = folder / f"attempt-{number}"
    try:
        refuse_linked_reports_folder(attempt)  # the default testsession-reports/browser, its folder a link
        refuse_link(folder)
        refuse_link(attempt)
    except PlantedLink as exc:
        raise NotRun(FailureKind.NOT_RUNNABLE_LOCALLY, f"evidence folder {exc}") from None
    if number == 1 and folder.is_dir():
        # An earlier run's screenshots and traces (which may hold what a script typed): only this
        # run's evidence stays beside its reports, so an uploaded folder never pairs old files with
        # a new verdict. The folder is ours and no link (refused above): removed, never followed.
        shutil.rmtree(folder, ignore_errors=True)
    return attempt.resolve()


def _folder(check: CheckDefinition) -> str:
    """The check's evidence folder: its id in a safe charset (an id such as `../../x` must not move
    the files out of artifacts_dir), never its name or a test's title (text a script or a user can
    make of a secret). An id the charset or the length changed gets the start of its SHA-256 after
    it (`types-1f0c...`): two ids that read the same in the charset (`a/b`, `a-b`) keep apart, since
    each one's first attempt in a run empties its folder."""
    raw = check.id or ""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-")[:64]
    if safe == raw:
        return safe or "check"  # a check without an id (the engine's own callers): `check`
    return f"{safe or 'check'}-{hashlib.sha256(raw.encode()).hexdigest()[:10]}"


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["no output"])[0][:300]
