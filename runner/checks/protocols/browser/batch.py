"""Browser checks that are ready at about the same moment run in one `playwright test` (docs/checks.md,
"Browser"): one Node, Playwright's CLI loaded once, one Chromium per worker, instead of all three per
check. Each check stays its own: a spec file in a folder of its own, its own verdict, steps, console
lines and files (moved to its own output folder), its own retries (a retry is a new request).

How (one decision each):
- Gathering: the first request starts a leader thread, which waits until no request came for
  GATHER_QUIET seconds (at most GATHER_MAX), then runs the oldest request's group: every waiting request
  with the same `Key`, at most MAX_BATCH. One run at a time, with `workers` = min(checks, the browser
  concurrency): at most that many browsers at once, as before. Requests that arrive meanwhile wait for
  the next run (queueing, not their run time).
- Which checks share a run (`Key`): the same Playwright and browser, the same playwrightConfig and
  per-test timeout, and the same environment apart from the check's own public built-ins
  (CHECK_NAME, CHECK_ID, CHECK_TYPE, set per check by its shim). A Playwright worker is one Node process
  whose process.env every test of it shares, so a check's variables (secrets among them) can only be
  kept from another check by never sharing a process with a check whose variables differ.
- Bounds: Playwright's per-test timeout (the check's own, at most its run limit); the whole run ends at
  its start + the longest run limit of its checks x the checks each worker runs in turn (ceil(n /
  workers)). A check whose tests took longer than its own run limit fails as TIMEOUT. A run ended at
  its bound fails each check that had not finished with a message saying so; a check that finished
  keeps its verdict (reporter.cjs writes each check's results as its last test ends).
- Stop: the run is ended (its process group and every browser, child.py) once every check in it is
  stopped; a stopped check waits for that end (bounded) so no browser outlives the run; a stopped check
  whose run goes on for other checks returns at once.
- A run that cannot judge some of its checks (Playwright stops before any test when one file does not
  compile; `test.only` in one file skips the others): the checks it did judge keep their verdicts, the
  others run again without them, and one by one when no check of the run was judged. A run that failed
  as a whole (no report) fails every check in it with the reason; it never passes one.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.checks.protocols.browser.folders import renamed
from runner.checks.protocols.browser.script import BatchRun, Member, ScriptRun, run_batch
from runner.checks.protocols.browser.setup import Playwright
from runner.core import supervise

GATHER_QUIET = 0.1  # seconds without a new request before a run starts
GATHER_MAX = 1.0  # the longest a request waits for others to arrive
MAX_BATCH = 64
STOP_WAIT = 10.0  # how long a stopped check waits for its run's processes to be ended (child.py: ~2 s)
OWN_BUILTINS = ("CHECK_NAME", "CHECK_ID", "CHECK_TYPE")


@dataclass(frozen=True)
class Key:
    playwright: Path
    browser: Path
    environment: tuple[tuple[str, str], ...]
    config: str  # playwrightConfig and the per-test timeout, as JSON


@dataclass(eq=False)
class Request:
    """One attempt of one check waiting for a run (`future`: its ScriptRun)."""

    key: Key
    playwright: Playwright
    variables: Mapping[str, str]  # the shared environment (the key's)
    own: Mapping[str, str]  # the check's own built-ins
    script: str
    script_path: str | None
    shared_files: Sequence[tuple[str, str]]
    playwright_config: Mapping[str, Any] | None
    output_dir: Path
    seconds: float  # its run limit
    stop: threading.Event | None
    future: Future[ScriptRun] = field(default_factory=Future)
    run: _Run | None = None  # the run it is in, once started

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()


def split_environment(environment: Mapping[str, str], public: Mapping[str, str | None]) -> tuple[
    dict[str, str], dict[str, str]
]:  # fmt: skip
    """(shared, own): the built-ins whose value is the check's own public field (its name, id, type)
    are its own; everything else (secrets included) is shared and decides which checks share a run."""
    own = {k: v for k, v in environment.items() if k in OWN_BUILTINS and public.get(k) == v}
    return {k: v for k, v in environment.items() if k not in own}, own


def key_of(playwright: Playwright, browser: Path, shared: Mapping[str, str],
           config: Mapping[str, Any] | None, timeout_ms: float) -> Key:  # fmt: skip
    text = json.dumps({"config": config or {}, "timeout": timeout_ms}, sort_keys=True, default=str)
    return Key(playwright.root, browser, tuple(sorted(shared.items())), text)


class _Run:
    """One `playwright test` under way: stopped once every request in it is."""

    def __init__(self, requests: Sequence[Request]) -> None:
        self.requests = requests
        self.stop = threading.Event()
        self.done = threading.Event()

    def all_stopped(self) -> bool:
        return all(r.stopped for r in self.requests)

    def watch(self) -> None:
        while not self.done.wait(0.05):
            if self.all_stopped():
                self.stop.set()
                return


class Batcher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Request] = []
        self._last = 0.0
        self._leading = False

    def submit(self, request: Request, *, workers: int, slots: threading.BoundedSemaphore) -> None:
        with self._lock:
            self._pending.append(request)
            self._last = time.monotonic()
            if not self._leading:
                self._leading = True
                threading.Thread(target=self._lead, args=(workers, slots), name="browser-runs",
                                 daemon=True).start()  # fmt: skip

    def _lead(self, workers: int, slots: threading.BoundedSemaphore) -> None:
        try:
            while True:
                first = time.monotonic()
                while True:  # gather
                    with self._lock:
                        quiet = time.monotonic() - self._last
                    if quiet >= GATHER_QUIET or time.monotonic() - first >= GATHER_MAX:
                        break
                    time.sleep(GATHER_QUIET - quiet if quiet < GATHER_QUIET else 0.01)
                with self._lock:
                    live = [r for r in self._pending if not r.stopped]
                    for r in self._pending:
                        if r.stopped:
                            r.future.cancel()
                    if not live:
                        self._pending = []
                        self._leading = False
                        return
                    group = [r for r in live if r.key == live[0].key][:MAX_BATCH]
                    self._pending = [r for r in live if r not in group]
                with contextlib.suppress(Exception):  # handed to each request's future already
                    run_group(group, workers=workers, slots=slots)
        except BaseException:
            with self._lock:
                self._leading = False
            raise


def run_group(group: Sequence[Request], *, workers: int, slots: threading.BoundedSemaphore) -> None:
    """Runs `group` in one `playwright test` and resolves each request's future (see the docstring)."""
    try:
        judged, left = _run_once(group, workers=workers, slots=slots)
    except BaseException as exc:  # a bug or an OSError starting Node: every check fails closed
        for r in group:
            if not r.future.done():
                r.future.set_exception(exc)
        raise
    if not left:
        return
    if judged:
        run_group(left, workers=workers, slots=slots)
    else:
        for r in left:
            run_group([r], workers=workers, slots=slots)


def _run_once(
    group: Sequence[Request], *, workers: int, slots: threading.BoundedSemaphore
) -> tuple[int, list[Request]]:
    """Runs the group; resolves the requests it judged; returns how many it judged and the others."""
    run = _Run(group)
    for r in group:
        r.run = run
    count = max(1, min(workers, len(group)))
    first = group[0]
    held = 0  # a browser slot per worker (a Playwright check suite takes one too)
    while held < count:
        if slots.acquire(timeout=0.05):
            held += 1
        elif run.all_stopped():
            for _ in range(held):
                slots.release()
            for r in group:
                r.future.cancel()
            return len(group), []
    start = time.monotonic()
    deadline = start + max(r.seconds for r in group) * math.ceil(len(group) / count)
    # Beside the checks' folders (the same file system: its files are moved, not copied); a fragment a
    # killed run left is removed by the next run (core/supervise.py, remove_stale_fragments).
    out = first.output_dir.parent.parent / supervise.fragment_name()
    supervise.remove_with_run(out)  # at exit too: a SIGTERM's run does not wait for this thread
    members = [
        Member(folder=f"c{n}", script=r.script, output_dir=r.output_dir, own_variables=r.own,
               script_path=r.script_path, shared_files=r.shared_files)
        for n, r in enumerate(group, 1)
    ]  # fmt: skip
    watcher = threading.Thread(target=run.watch, name="browser-run-stop", daemon=True)
    watcher.start()
    try:
        result = run_batch(members, playwright=first.playwright, browser=first.key.browser, output_dir=out,
                           variables=first.variables, deadline=deadline, stop=run.stop, workers=count,
                           playwright_config=first.playwright_config,
                           max_test_ms=first.seconds * 1000)  # fmt: skip
    finally:
        run.done.set()
        for _ in range(held):
            slots.release()
    try:
        return _resolve(group, members, result, out, start)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        supervise.kept(out)


def _resolve(
    group: Sequence[Request], members: Sequence[Member], result: BatchRun, out: Path, started: float
) -> tuple[int, list[Request]]:
    end_errors = [e for e in _list((result.end or {}).get("errors")) if isinstance(e, Mapping)]
    someone_ran = any(_list(rep.get("tests")) for rep in result.reports.values())
    judged, left = 0, []
    for request, member in zip(group, members, strict=True):
        own = result.reports.get(member.folder)
        tests = _list(own.get("tests")) if own else []
        errors = [e for e in end_errors if e.get("folder") in (None, member.folder)]
        mine = any(e.get("folder") == member.folder for e in end_errors)
        if (
            len(group) > 1
            and not tests
            and not mine
            and result.end is not None
            and (someone_ran or any(e.get("folder") for e in end_errors))
        ):
            left.append(request)  # another check's file stopped the run, or its test.only skipped this one
            continue
        judged += 1
        child = result.child
        if result.end is None and own is not None and not child.cancelled:
            child = replace(child, timed_out=False)  # it finished before the run was ended
        report: dict[str, object] | None = None
        if own is not None or result.end is not None:
            # Its files to its own folder, each test's as test-<n> (folders.py: never a title)
            moved = renamed(tests, out, member.output_dir, f"{member.folder}-")
            report = {"status": (result.end or {}).get("status", "ended"), "tests": moved, "errors": errors}
        if report is not None and _took_ms(tests) > request.seconds * 1000:
            child = replace(child, timed_out=True)
        own_ms = _took_ms(tests) if len(group) > 1 else None
        if not request.future.done():
            request.future.set_result(ScriptRun(child, report, started, own_ms, len(group)))
    return judged, left


def _took_ms(tests: Sequence[Any]) -> float:
    total = 0.0
    for t in tests:
        value = t.get("durationMs") if isinstance(t, Mapping) else None
        total += float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
    return total


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


BATCHER = Batcher()
