"""The main job: trigger each session of a spec, wait for it, fetch analyses, and judge the outcome.

Sessions run concurrently, one thread each. The main thread only waits and reacts to interrupts:
on SIGINT/SIGTERM it cancels every running session and builds a partial outcome from what is known.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from runner import __version__
from runner.ci.console import Console
from runner.client import ApiClient
from runner.core.errors import ApiError, BadRequestError, NotFoundError, exit_code_for
from runner.core.exitcodes import ExitCode, most_severe
from runner.job.analyses import AnalysisCollector, AnalysisPlan
from runner.job.outcome import (
    CommitInfo,
    ErrorGroupOutcome,
    Outcome,
    RunVerdict,
    SessionOutcome,
    count_results,
)
from runner.job.verdicts import build_results, checks_exit_code
from runner.models import SessionMetadata, TestSession, TriggerRequest

LONG_POLL_MAX = 30
CANCEL_GRACE_SECONDS = 5.0

VERDICTS: dict[ExitCode, RunVerdict] = {
    ExitCode.OK: "passed",
    ExitCode.CHECKS_FAILED: "failed",
    ExitCode.USAGE: "usage-error",
    ExitCode.TIMEOUT: "timeout",
    ExitCode.SERVICE: "service-error",
    ExitCode.NO_MATCH: "no-match",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "interrupted",
}


@dataclass
class RunSettings:
    timeout_seconds: float = 900.0
    analyses: AnalysisPlan = field(default_factory=AnalysisPlan)
    fail_on_degraded: bool = False
    fail_on_no_match: bool = True


@dataclass
class SessionRun:
    """One session's progress, written by its worker thread and read by the main thread."""

    name: str
    location: str
    environment: str | None = None
    request: TriggerRequest | None = None
    session: TestSession | None = None
    groups: list[ErrorGroupOutcome] = field(default_factory=list)
    exit_code: ExitCode | None = None
    problem: str | None = None
    no_match: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def fail(self, code: ExitCode, problem: str) -> None:
        if self.exit_code is None:
            self.exit_code = code
            self.problem = problem


class Runner:
    def __init__(
        self,
        client: ApiClient,
        settings: RunSettings,
        console: Console,
        commit: SessionMetadata | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.console = console
        self.commit = commit or SessionMetadata()
        self.stop = threading.Event()
        self.wake = threading.Event()  # set when a session is done or a signal arrives
        self.stop_code: ExitCode | None = None
        self.stop_reason: str | None = None
        self.started_at = datetime.now(timezone.utc)
        self.runs: list[SessionRun] = []

    # --- signals ------------------------------------------------------------------------------

    def interrupt(self, signal_name: str, code: ExitCode) -> None:
        """Called from a signal handler: only sets flags, the main thread does the work."""
        if self.stop_code is None:
            self.stop_code = code
            self.stop_reason = f"interrupted by {signal_name}"
        self.stop.set()
        self.wake.set()

    # --- entry points -------------------------------------------------------------------------

    def run(self, requests: list[TriggerRequest], detach: bool = False) -> Outcome:
        self.runs = [
            SessionRun(
                name=r.name,
                location=r.runLocation,
                environment=r.metadata.environment if r.metadata else None,
                request=r,
            )
            for r in requests
        ]
        target = self._trigger_only if detach else self._full
        self._supervise(target)
        return self.outcome(detached=detach)

    def wait_for(self, session_id: str) -> Outcome:
        """`testsession wait ID`: a session triggered earlier, maybe by another job."""
        session = self.client.get_session(session_id)
        location = next((r.runLocation for r in session.results if r.runLocation), None) or "unknown"
        environment = session.metadata.environment if session.metadata else None
        run = SessionRun(name=session.name, location=location, environment=environment, session=session)
        self.runs = [run]
        self._supervise(self._follow)
        return self.outcome()

    # --- supervision --------------------------------------------------------------------------

    def _supervise(self, target: object) -> None:
        threads = []
        for run in self.runs:
            thread = threading.Thread(target=self._guarded, args=(target, run), daemon=True)
            thread.start()
            threads.append(thread)
        # Woken by each finished session, so the verdict is not delayed by a polling interval.
        while not all(run.done.is_set() for run in self.runs):
            if self.stop.is_set():
                self._cancel_all()
                grace = time.monotonic() + CANCEL_GRACE_SECONDS
                for run in self.runs:
                    run.done.wait(max(0.0, grace - time.monotonic()))
                return
            self.wake.wait(0.5)
            self.wake.clear()

    def _guarded(self, target: object, run: SessionRun) -> None:
        try:
            assert callable(target)
            target(run)
        except ApiError as exc:
            run.fail(exit_code_for(exc), str(exc))
            self._cancel(run)  # best effort: leave nothing running on the service
        except Exception as exc:  # a bug must not cost the reports of the other sessions
            run.fail(ExitCode.SERVICE, f"unexpected error: {exc!r}")
            self._cancel(run)
        finally:
            run.done.set()
            self.wake.set()

    def _full(self, run: SessionRun) -> None:
        if self._trigger(run):
            self._follow(run)

    def _trigger_only(self, run: SessionRun) -> None:
        if self._trigger(run):
            run.exit_code = ExitCode.OK

    def _follow(self, run: SessionRun) -> None:
        self._wait(run)
        if run.exit_code is None and not self.stop.is_set():
            self._analyse(run)

    # --- phases -------------------------------------------------------------------------------

    def _trigger(self, run: SessionRun) -> bool:
        assert run.request is not None
        try:
            run.session = self.client.trigger(run.request)
        except NotFoundError as exc:
            self._no_match(run, exc.message)
            return False
        except BadRequestError as exc:
            run.fail(ExitCode.USAGE, str(exc))
            return False
        link = run.session.testSessionLink or run.session.testSessionId
        self.console.line(f"Test session '{run.name}' ({run.location}): {link}")
        if self.stop.is_set():  # interrupted while the trigger was in flight: leave nothing running
            self._cancel(run)
            return False
        return True

    def _no_match(self, run: SessionRun, message: str) -> None:
        run.no_match = True
        code = ExitCode.NO_MATCH if self.settings.fail_on_no_match else ExitCode.OK
        run.fail(code, f"no check matched the target: {message}")
        self.console.line(f"Test session '{run.name}' ({run.location}): no check matched the target")

    def _wait(self, run: SessionRun) -> None:
        assert run.session is not None
        session_id = run.session.testSessionId
        started = time.monotonic()
        deadline = started + self.settings.timeout_seconds
        while not run.session.is_final:
            if self.stop.is_set():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._time_out(run)
                return
            max_wait = max(1, min(LONG_POLL_MAX, math.ceil(remaining)))
            final = self.client.await_completion(session_id, max_wait_seconds=max_wait)
            if final is not None:
                run.session = final
            else:
                elapsed = time.monotonic() - started
                if self.console.interactive:
                    self.console.status(f"'{run.name}' still running after {elapsed:.0f}s")
                else:
                    self.console.line(f"'{run.name}' still running after {elapsed:.0f}s")
        if not run.session.results and run.session.status != "CANCELLED":
            self._no_match(run, "the session finished without results")
            return
        for result in build_results(run.session, {}):
            self.console.result(result)

    def _time_out(self, run: SessionRun) -> None:
        timeout = self.settings.timeout_seconds
        run.fail(ExitCode.TIMEOUT, f"the session did not finish within {timeout:g} s; it was cancelled")
        self.console.line(f"'{run.name}': deadline of {timeout:g} s passed, cancelling the session")
        self._cancel(run)

    def _analyse(self, run: SessionRun) -> None:
        assert run.session is not None
        if not run.session.errorGroupIds and not any(r.errorGroupIds for r in run.session.results):
            return
        collector = AnalysisCollector(self.client, self.settings.analyses, self.stop, self.console.verbose)
        title = "Root cause analyses" if self.settings.analyses.enabled else "Error groups"
        with self.console.section("testsession_rca", f"{title} for '{run.name}'"):
            run.groups = collector.collect(run.session)
            for group in run.groups:
                if group.analysis and group.analysis.state == "completed" and group.analysis.analysis:
                    a = group.analysis.analysis
                    self.console.line(f"  {a.classification}: {a.rootCause}")
                elif group.analysis and group.analysis.state not in ("disabled", "skipped"):
                    self.console.line(f"  analysis {group.analysis.state}: {group.analysis.reason}")

    def _cancel(self, run: SessionRun) -> None:
        if run.session is None or run.session.is_final:
            return
        session_id = run.session.testSessionId
        try:
            self.client.cancel(session_id)
        except ApiError as exc:
            self.console.line(f"could not cancel test session {session_id}: {exc}")
            return
        try:
            run.session = self.client.get_session(session_id)
        except ApiError as exc:
            self.console.verbose(f"could not read the cancelled session {session_id}: {exc}")

    def _cancel_all(self) -> None:
        for run in self.runs:
            if not run.done.is_set():
                self._cancel(run)

    # --- the outcome --------------------------------------------------------------------------

    def outcome(self, detached: bool = False) -> Outcome:
        sessions = [self._session_outcome(run) for run in self.runs]
        codes = [ExitCode(s.exitCode) for s in sessions]
        code = self.stop_code if self.stop_code is not None else most_severe(codes)
        if detached and code == ExitCode.OK:
            verdict: RunVerdict = "detached"
        elif code == ExitCode.OK and sessions and all(run.no_match for run in self.runs):
            verdict = "no-match"
        else:
            verdict = VERDICTS[code]
        results = [r for s in sessions for r in s.results]
        problems = [f"{s.name} ({s.runLocation}): {s.problem}" for s in sessions if s.problem]
        message = self.stop_reason or ("; ".join(problems) if problems and code != ExitCode.OK else None)
        return Outcome(
            toolVersion=__version__,
            startedAt=self.started_at,
            finishedAt=datetime.now(timezone.utc),
            verdict=verdict,
            exitCode=int(code),
            failOnDegraded=self.settings.fail_on_degraded,
            partial=code in (ExitCode.TIMEOUT, ExitCode.SERVICE, ExitCode.INTERRUPTED, ExitCode.TERMINATED),
            message=message,
            commit=CommitInfo(
                commitId=self.commit.commitId,
                branchName=self.commit.branchName,
                commitOwner=self.commit.commitOwner,
                commitMessage=self.commit.commitMessage,
                repoUrl=self.commit.repoUrl,
                environment=self.commit.environment,
            ),
            counts=count_results(results),
            sessions=sessions,
        )

    def _session_outcome(self, run: SessionRun) -> SessionOutcome:
        session = run.session
        messages = {g.id: g.message for g in run.groups}
        results = build_results(session, messages) if session else []
        if run.exit_code is not None:
            code = run.exit_code
        elif self.stop_code is not None:
            code = self.stop_code
        elif session is None or not session.is_final:
            code = ExitCode.SERVICE
        else:
            code = checks_exit_code(results, self.settings.fail_on_degraded)
        duration = None
        if session and session.startedAt and session.stoppedAt:
            duration = round((session.stoppedAt - session.startedAt).total_seconds(), 3)
        elif session and session.timeElapsed is not None:
            duration = round(session.timeElapsed / 1000.0, 3)
        return SessionOutcome(
            name=run.name,
            runLocation=run.location,
            environment=run.environment,
            testSessionId=session.testSessionId if session else None,
            link=session.testSessionLink if session else None,
            status=session.status if session else None,
            startedAt=session.startedAt if session else None,
            stoppedAt=session.stoppedAt if session else None,
            durationSeconds=duration,
            exitCode=int(code),
            problem=run.problem,
            results=results,
            errorGroups=run.groups,
        )


def commit_for(requests: list[TriggerRequest]) -> SessionMetadata:
    for request in requests:
        if request.metadata is not None:
            return request.metadata
    return SessionMetadata()


def default_cwd() -> Path:
    return Path.cwd()
