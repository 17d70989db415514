"""A checks file's checks as a result source: the engine (runner/checks/) runs them in this process.

`run --checks FILE` (or a spec's `checks:`) comes here: no service, no emulator, nothing serialised.
A session's matched checks go to a pool of daemon threads (at most CONCURRENCY at once; browser
checks, which their protocol queues itself, to a pool of their own); each worker runs `run_check`
and hands every attempt back, as it ends, through the session's queue. The session's own thread is
the only one that keeps the session: it records a failure in its error group (local_groups.py, with
the state file), reports the check once its final attempt is in (ResultFinished, Progress: the same
events and console lines as a session of the service), and at the end judges the session by the
job's policy. A failure's group is analysed by the engine's rules as soon as it appears.

What a result says is what the service says of the same attempts (job/policy.py `verdict_of` judges
both; job/verdicts.py maps the service's rows to it, `_verdict` here the final attempt): a FAILED
result whose failure is not an assertion's is an error; retries fold into their final result (flaky
when it passed at last); a check that cannot run here fails closed with why, and how to leave it out
of the checks file.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from runner.checks.checksfile import ACCOUNT_ID, LOCAL, ChecksFile, FileCheck
from runner.checks.declared import DEFAULT_MAX_RUN_SECONDS, Mode, cannot_run_message
from runner.checks.failures import FailureKind
from runner.checks.internal import internal_error
from runner.checks.limits import Limits
from runner.checks.outcome import Attempt
from runner.checks.variables import VariableSources, variables_from
from runner.core.errors import UsageError
from runner.core.exitcodes import ExitCode
from runner.core.threads import DaemonPool
from runner.job.analyses import MAX_GROUPS_READ
from runner.job.events import (
    AnalysisReady,
    DeadlinePassed,
    NoMatch,
    Progress,
    ResultFinished,
    SessionFailed,
    SessionFinished,
    Triggered,
)
from runner.job.known import classify
from runner.job.local_groups import GroupBook, moment
from runner.job.outcome import (
    AnalysisOutcome,
    AttemptOutcome,
    ErrorGroupOutcome,
    ResultOutcome,
    ResultVerdict,
    SessionOutcome,
)
from runner.job.plan import session_outcome, with_internal_errors
from runner.job.policy import (
    NOTHING_JUDGED_CODE,
    UNRUN_NAMED_CODE,
    CheckFacts,
    Failure,
    Ran,
    checks_exit_code,
    no_match_exit_code,
    unexplained_end,
    unrun_named_checks,
    verdict_of,
)
from runner.job.source import ListedCheck, SessionContext
from runner.job.verdicts import checked_attachments, checked_suite_tests
from runner.job.workers import Hello, Task, Workers, workers_for
from runner.models import Target, TestSession, TriggerRequest
from runner.models.sessions import CHECK_LOCATIONS

if TYPE_CHECKING:
    from runner.models import RetryStrategy
    from runner.state.store import StateFile

CONCURRENCY = 16  # checks of the run at once (the emulator's executor.concurrency default)
SELF_QUEUED_LIMIT = 64  # browser checks waiting or running: their protocol queues them itself
BODY_BYTES = 5 * 1024 * 1024  # of a response read by an attempt (Limits)
NO_MATCH = "No checks matched the target"  # the service's words, as its 403 says them
HANDED = 256  # checks of a session in the pools' queues at once, waiting or running
PROGRESS_EVERY = 0.25  # seconds between two Progress events
GATHER_SECONDS = 0.005  # a pause between two drains while the pools hold HANDED // 2 checks or more
RUNNING_SHOWN = 10  # running checks a Progress names (the console shows 10 at most): its size is fixed


class _Run:
    """One check's attempts in the session, kept by the session's thread only. A __slots__ class: a
    session holds one a check (80 B against 232 B for a dataclass with its __dict__ and an empty list)."""

    __slots__ = ("check", "ended", "final", "group", "id", "tries")

    def __init__(self, check: FileCheck, id: str) -> None:
        self.check = check
        self.id = id
        self.tries: tuple[tuple[str, Attempt, str], ...] = ()  # (id, attempt, group): failed ones
        self.final: Attempt | None = None  # _PASSED once a pass without retries has its result
        self.group: str | None = None  # the final attempt's error group, when it failed
        self.ended: float | None = None  # epoch seconds


class LocalSource:
    """The checks of one checks file, run by the engine for every session of the run."""

    def __init__(
        self,
        checks: ChecksFile,
        state: StateFile | None = None,
        concurrency: int = CONCURRENCY,
        workers: int | None = None,
    ) -> None:
        self.checks = checks
        self.state = state
        self.workers = workers  # worker processes a session starts (TESTSESSION_WORKERS); None: workers_for's
        self.book = GroupBook({c.id: c for c in checks.checks}, state)
        given = {str(place) for check in checks.checks for place in check.locations}
        self.locations = [LOCAL, *CHECK_LOCATIONS, *sorted(given - {LOCAL, *CHECK_LOCATIONS})]
        self._pool = DaemonPool(concurrency, "check")
        self._queued = DaemonPool(SELF_QUEUED_LIMIT, "browser")
        self._stops: dict[str, threading.Event] = {}  # by session id: what `cancel` sets

    def close(self) -> None:
        """Checks not started are dropped; running ones were stopped with their session."""
        for stop in list(self._stops.values()):
            stop.set()
        self._pool.shutdown()
        self._queued.shutdown()

    def list_checks(self, tags: Iterable[str] = ()) -> Sequence[ListedCheck]:
        return list(self.checks.checks)  # the target's own rule picks from every check

    def cancel(self, session_id: str) -> None:
        stop = self._stops.get(session_id)
        if stop is not None:
            stop.set()

    def trigger_only(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        # JobSettings refuses --detach with --checks: the checks run in this process.
        raise UsageError("--detach with --checks: the checks run in this process, nothing runs on detached")

    def run_session(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        outcome = _Session(self, request, context).run()
        target = request.target
        if target is None or not target.checkId or target.matchTags or context.stop_code() is not None:
            return outcome
        if outcome.problem or outcome.exitCode not in (ExitCode.OK, ExitCode.CHECKS_FAILED):
            return outcome
        problem = unrun_named_checks(target.checkId, outcome.results)  # as session.py's _named_checks
        if problem is None:
            return outcome
        context.emit(SessionFailed(context.where, problem))
        return outcome.model_copy(update={"exitCode": int(UNRUN_NAMED_CODE), "problem": problem})

    def execute(
        self,
        index: int,
        check: FileCheck,
        variables: VariableSources,
        retry: RetryStrategy | None,
        max_run: float | None,
        stop: threading.Event,
        inbox: queue.SimpleQueue[tuple[int, Attempt, bool]],
    ) -> None:
        """On a pool's worker: the check to its end (or its stop), each attempt handed back as it
        ends; never raises (a bug in the engine fails the check closed instead of hanging the run)."""
        from runner.checks.run import run_check  # libcurl and friends: only when a check runs
        from runner.checks.scripts import runner_for

        if stop.is_set():
            inbox.put((index, Attempt.cancelled_before_start(), True))
            return
        try:
            # Made here, when the check starts, and dropped when it ends: a queue of 10,000 checks
            # holds the checks, not a definition of each.
            definition = check.plan.definition
            if definition is None:  # never: the plan said REAL, and its definition parsed
                raise RuntimeError(f"check {check.id}: its definition no longer parses")
            run_check(
                definition,
                max_run_seconds=max_run,
                variables=variables,
                retry=retry,
                on_attempt=lambda attempt, final: inbox.put((index, attempt, final)),
                stop=stop,
                limits=Limits(body_cap_bytes=BODY_BYTES),
                scripts=runner_for(definition),
            )
        except Exception as exc:  # a bug in the engine: exit 4 with its traceback (with_internal_errors)
            inbox.put((index, internal_error(exc, variables, check.plan.definition), True))


class _Session:
    """One session of a local run, on the Runner's worker thread for it."""

    def __init__(self, source: LocalSource, request: TriggerRequest, context: SessionContext) -> None:
        self.source = source
        self.request = request
        self.context = context
        self.id = str(uuid.uuid4())
        self.start = time.time()
        self.started_at = moment(self.start)
        self.stop = threading.Event()
        self.begun = context.clock()
        self.inbox: queue.SimpleQueue[tuple[int, Attempt, bool]] = queue.SimpleQueue()
        self.runs: list[_Run] = []
        self.results: dict[int, ResultOutcome] = {}  # by run: its final result as first reported
        self.analysed: dict[str, AnalysisOutcome] = {}  # by group, in the order they were started
        self.new_failure = False  # a failure was recorded since the analyses were last looked at
        self.running: dict[int, ResultOutcome] = {}  # a named check's placeholder while it runs, made once
        self.variables = VariableSources()
        self.waiting: deque[int] = deque()  # checks that run here, not yet handed to a pool
        self.out: dict[int, None] = {}  # checks handed to a pool, final attempt not back: in hand-out order
        self.workers: Workers | None = None  # this session's worker processes (job/workers.py), if any

    def _outcome(
        self,
        code: ExitCode,
        problem: str | None = None,
        results: list[ResultOutcome] | None = None,
        groups: list[ErrorGroupOutcome] | None = None,
        no_match: bool = False,
        status: str | None = None,
    ) -> SessionOutcome:
        session = None
        if status is not None:
            ended = max((r.ended for r in self.runs if r.ended is not None), default=self.start)
            stopped = moment(ended) if status != "RUNNING" else None
            # Values this session made (an id, a status, two times): constructed, not validated, so a
            # local run never builds TestSession's validator (session_outcome only reads the fields).
            session = TestSession.model_construct(
                testSessionId=self.id, status=status, startedAt=self.started_at, stoppedAt=stopped
            )
        context = self.context
        return session_outcome(
            context.where, context.environment, session, results or [], groups or [], code, problem, no_match
        )

    def run(self) -> SessionOutcome:
        context, request = self.context, self.request
        where, gate = context.where, context.plan.gate
        if request.runLocation not in self.source.locations:
            problem = "runLocation: unknown location; allowed: " + ", ".join(self.source.locations)
            context.emit(SessionFailed(where, problem))
            return self._outcome(ExitCode.USAGE, problem)
        # No target selects every activated check: Target's defaults, constructed (nothing to validate).
        target = request.target or Target.model_construct()
        matched = [c for c in self.source.checks.checks if target.selects(c.id, c.tags, c.activated)]
        if not matched:
            context.emit(NoMatch(where, NO_MATCH))
            problem = f"no check matched the target: {NO_MATCH}"
            return self._outcome(no_match_exit_code(gate), problem, no_match=True)
        context.emit(Triggered(where, self.id, None))
        self.runs = [_Run(check, id) for check, id in zip(matched, _new_ids(len(matched)), strict=True)]
        if context.stop.is_set():
            return self._outcome(context.stop_code() or ExitCode.INTERRUPTED, status="CANCELLED")
        self.source._stops[self.id] = self.stop
        try:
            self._start()
            ended = self._wait()
        finally:
            self.stop.set()  # whatever still runs ends within a second (the engine's guarantee)
            if self.workers is not None:
                self.workers.close()  # and every worker process ends with the session
            self.source._stops.pop(self.id, None)
        return ended if ended is not None else self._judged()

    def _start(self) -> None:
        request, source = self.request, self.source
        variables = VariableSources(
            session=tuple(variables_from(request.environmentVariables)),
            account=tuple(variables_from(source.checks.variables)),
            runtime={"ACCOUNT_ID": ACCOUNT_ID, "REGION": request.runLocation},
        )
        self.variables = variables
        for index, run in enumerate(self.runs):
            plan = run.check.plan
            if _runs_here(run):
                self.waiting.append(index)
                continue
            reason = plan.reason or "it cannot run here"
            message = cannot_run_message(reason, plan.leave_out)
            self.inbox.put((index, Attempt.not_run(FailureKind.NOT_RUNNABLE_LOCALLY, message), True))
        self._start_workers()
        self._feed()

    def _start_workers(self) -> None:
        from runner.checks.protocols import SELF_QUEUED

        engine = sum(1 for i in self.waiting if self.runs[i].check.checkType not in SELF_QUEUED)
        count = workers_for(engine, self.source.workers)
        if count:  # each process (this one too) runs its share of CONCURRENCY at once
            threads = max(1, CONCURRENCY // (count + 1))
            hello = Hello(self.variables, self.context.plan.timeout_seconds + 5, threads, BODY_BYTES)
            self.workers = Workers.start(
                count,
                hello,
                lambda index, attempt, final: self.inbox.put((index, attempt, final)),
                self._run_here,
            )

    def _run_here(self, task: Task) -> None:
        """A check a worker took and never started (it never became ready): on the run's own threads."""
        source = self.source
        source._pool.post(
            source.execute,
            task.position,
            task.check,
            self.variables,
            task.retry,
            task.max_run,
            self.stop,
            self.inbox,
        )

    def _feed(self) -> None:
        """Checks to the pools until HANDED are there, waiting or running: the pools' queues hold a
        window of the session's checks, not all of them."""
        from runner.checks.protocols import SELF_QUEUED

        request, source = self.request, self.source
        while self.waiting and len(self.out) < HANDED:
            index = self.waiting.popleft()
            check = self.runs[index].check
            max_run = DEFAULT_MAX_RUN_SECONDS.get(check.checkType, DEFAULT_MAX_RUN_SECONDS["default"])
            retry = (
                request.retryStrategy or check.retryStrategy
            )  # as production: the session's, else the check's
            pool = source._queued if check.checkType in SELF_QUEUED else source._pool
            if pool is source._pool and self.workers is not None and self.workers.takes(len(self.out)):
                self.workers.submit(Task(index, check, retry, max_run))
            else:
                pool.post(source.execute, index, check, self.variables, retry, max_run, self.stop, self.inbox)
            self.out[index] = None

    def _wait(self) -> SessionOutcome | None:
        """Every attempt as it ends, until every check has its final one: None; or the outcome of a
        session the run's deadline or a signal ended."""
        context = self.context
        begun = self.begun = context.clock()
        deadline = begun + context.plan.timeout_seconds
        left = len(self.runs)
        next_progress = begun
        while left:
            if context.stop.is_set():
                return self._ended_early(context.stop_code() or ExitCode.INTERRUPTED)
            now = context.clock()
            if now >= deadline:
                return self._timed_out()
            try:
                item = self.inbox.get(timeout=max(0.0, min(0.2, deadline - now)))
            except queue.Empty:
                continue
            fresh: list[int] = []
            while True:
                index, attempt, final = item
                if self._record(index, attempt, final):
                    fresh.append(index)
                try:
                    item = self.inbox.get_nowait()
                except queue.Empty:
                    break
            left -= len(fresh)
            for index in fresh:
                self.out.pop(index, None)
            self._feed()
            for index in fresh:
                self.running.pop(index, None)  # its placeholder (~1.2 KiB) is not shown again
                result = self.results[index] = self._result(index)
                self._settle(self.runs[index])
                context.emit(ResultFinished(context.where, result, self.started_at))
            if self.new_failure:  # most drains bring passes only: nothing to analyse
                self._analyse()
            now = context.clock()
            if now >= next_progress or not left:
                named = tuple(self._running_result(i) for i in itertools.islice(self.out, RUNNING_SHOWN))
                context.emit(Progress(context.where, now - begun, named, len(self.runs), len(self.results)))
                next_progress = now + PROGRESS_EVERY
            if len(self.out) >= HANDED // 2:
                # Attempts end one at a time on many threads: while the pools hold plenty to do, a
                # few are let gather instead of a wake of this thread for each (the interpreter it
                # takes is the checks' own); a signal or the run's stop ends the wait at once.
                context.stop.wait(GATHER_SECONDS)
        return None

    def _record(self, index: int, attempt: Attempt, final: bool) -> bool:
        """An attempt of run `index` ended; True when it was the run's final one."""
        run = self.runs[index]
        if run.final is not None:
            return False
        ended = attempt.started_at + attempt.duration_ms / 1000 if attempt.started_at else time.time()
        group = None
        if not attempt.passed and not attempt.cancelled:
            message = attempt.message or str(attempt.error_kind or "failed")
            # Only the failure's own evidence is kept: a pass says nothing a group needs.
            group = self.source.book.record(run.check, message, attempt, ended, self.context.environment)
            self.new_failure = True
        if final or attempt.cancelled:
            # A pass is kept whole only until its result is made (_settle), a flaky one as its
            # result shows it (its time, its files), not its evidence (~0.9 KiB).
            run.final = attempt.as_kept_passed() if attempt.passed and run.tries else attempt
            run.group, run.ended = group, ended
            return True
        run.tries = (*run.tries, (str(uuid.uuid4()), attempt, group or ""))
        return False

    @staticmethod
    def _settle(run: _Run) -> None:
        """A pass without retries, its result made: the result is final (no error group's message can
        change it: `_final_result`), so its attempt goes; that it passed is what is left."""
        final = run.final
        if final is not None and final.passed and not run.tries:
            run.final = _PASSED

    # --- what a result says ----------------------------------------------------------------------

    def _result(self, index: int, ended_by_us: bool = False) -> ResultOutcome:
        """The run's result. Only the fields that differ from their defaults are given: a pass
        without retries (most of 10,000) is 8 fields to validate, not 20."""
        run = self.runs[index]
        check, final = run.check, run.final
        fields: dict[str, object] = {
            "id": run.id,
            "checkId": check.id,
            "name": check.name,
            "checkType": check.checkType,
            "runLocation": self.request.runLocation,
        }
        groups = (
            {g: self.source.book.outcome(g) for g in self._groups_of(run)} if run.tries or run.group else {}
        )
        if run.tries:
            fields["attempts"] = 1 + len(run.tries)
            fields["failedAttempts"] = [
                AttemptOutcome(
                    id=try_id,
                    status="FAILED",
                    durationSeconds=_seconds(attempt),
                    error=groups[group].message if group in groups else None,
                )
                for try_id, attempt, group in run.tries
            ]
        if final is None or final.cancelled:
            status = "CANCELLED" if ended_by_us or final is not None else "RUNNING"
            return ResultOutcome(**fields, status=status, verdict=_verdict(final, bool(run.tries)))
        verdict = _verdict(final, bool(run.tries))
        fields["status"] = "PASSED" if final.passed else "FAILED"
        fields["verdict"] = verdict
        fields["durationSeconds"] = _seconds(final)
        if run.group:
            fields["errorGroupIds"] = [run.group]
            if verdict in ("failed", "error", "degraded"):
                knowledge = classify([groups[run.group]], self.started_at)
                fields.update(
                    known=knowledge.known,
                    firstSeen=knowledge.firstSeen,
                    lastSeenBefore=knowledge.lastSeenBefore,
                )
        # A degraded pass says why (the threshold and the measure: checks/judge.py), a failure its group.
        error = final.message if verdict == "degraded" else groups[run.group].message if run.group else None
        if error is not None:
            fields["error"] = error
        if final.files:
            fields["attachments"] = checked_attachments({"name": f.name, "path": f.path} for f in final.files)
        if final.error_kind is FailureKind.INTERNAL_ERROR:
            fields["internalError"] = final.traceback
        if final.tests:
            fields["tests"] = checked_suite_tests(
                {"name": t.name, "status": t.status, "runs": t.runs} for t in final.tests
            )
        return ResultOutcome.model_validate(fields)

    def _final_result(self, index: int, ended_by_us: bool = False) -> ResultOutcome:
        """The run's result at the session's end: as first reported, unless it has an error group
        (its message may have changed since, with a later failure in the group) or is unfinished."""
        run = self.runs[index]
        reported = self.results.get(index)
        if reported is not None and not (run.tries or run.group):
            return reported
        return self._result(index, ended_by_us)

    @staticmethod
    def _groups_of(run: _Run) -> list[str]:
        ids = [group for _id, _attempt, group in run.tries if group]
        return [*ids, run.group] if run.group else ids

    def _current(self) -> list[ResultOutcome]:
        """Every check of the session as it stands: its final result, or running (at a deadline)."""
        return [self.results.get(i) or self._running_result(i) for i in range(len(self.runs))]

    def _running_result(self, index: int) -> ResultOutcome:
        held = self.running.get(index)
        if held is None or held.attempts != 1 + len(self.runs[index].tries):
            held = self.running[index] = self._result(index)
        return held

    def _ranked(self) -> list[tuple[str, int]]:
        """The session's error groups, most frequent first (ties: in the order the results show them)."""
        counts: Counter[str] = Counter()
        for run in self.runs:
            if run.tries or run.group:
                counts.update(self._groups_of(run))
        return counts.most_common()

    def _analyse(self) -> None:
        """Analyses of the groups seen so far, most frequent first, up to rca.max in all."""
        plan = self.context.plan.analyses
        self.new_failure = False
        if not plan.enabled or len(self.analysed) >= plan.max_groups:
            return
        names: dict[str, list[str]] = {}
        for run in self.runs:
            for group in self._groups_of(run) if run.tries or run.group else ():
                if run.check.name not in names.setdefault(group, []):
                    names[group].append(run.check.name)
        for group, _count in self._ranked():
            if len(self.analysed) >= plan.max_groups:
                return
            if group in self.analysed:
                continue
            analysis = self.analysed[group] = self.source.book.analysis(group, plan, time.time())
            if analysis.state == "completed":
                done = self.source.book.outcome(group).model_copy(update={"analysis": analysis})
                self.context.emit(AnalysisReady(self.context.where, tuple(names[group]), done))

    def _groups(self) -> list[ErrorGroupOutcome]:
        plan = self.context.plan.analyses
        out = []
        for rank, (group, count) in enumerate(self._ranked()[:MAX_GROUPS_READ]):
            if not plan.enabled:
                state = AnalysisOutcome(state="disabled", reason="analyses are off (rca.enabled: false)")
            elif group in self.analysed:
                state = self.analysed[group]
            elif rank >= plan.max_groups or len(self.analysed) >= plan.max_groups:
                state = AnalysisOutcome(state="skipped", reason=f"beyond rca.max ({plan.max_groups})")
            else:
                state = AnalysisOutcome(state="timeout", reason="interrupted")
            out.append(self.source.book.outcome(group).model_copy(update={"count": count, "analysis": state}))
        return out

    # --- the end -------------------------------------------------------------------------------------

    def _judged(self) -> SessionOutcome:
        context = self.context
        status = "FAILED" if any(r.final is not None and not r.final.passed for r in self.runs) else "PASSED"
        context.emit(SessionFinished(context.where, status, context.clock() - self.begun))
        self._analyse()
        groups = self._groups()
        # A failure's result again, with its groups' messages as they are now; a pass is as reported.
        results = [self._final_result(i) for i in range(len(self.runs))]
        self._save(status, results)
        problem = unexplained_end(status, results, vanished=0)
        if problem is not None:
            return self._outcome(NOTHING_JUDGED_CODE, problem, results, groups, status=status)
        code = checks_exit_code(results, context.plan.gate)
        judged = self._outcome(code, None, results, groups, status=status)
        return with_internal_errors(judged, context.where, context.emit)

    def _timed_out(self) -> SessionOutcome:
        context = self.context
        before = self._current()
        timeout = context.plan.timeout_seconds
        finished = tuple(r for r in before if r.verdict != "running")
        context.emit(
            DeadlinePassed(
                context.where, timeout, finished, tuple(r for r in before if r.verdict == "running")
            )
        )
        self.stop.set()
        problem = f"the session did not finish within the {timeout:g} s deadline; it was cancelled"
        results = [self._final_result(i, ended_by_us=True) for i in range(len(self.runs))]
        self._save("CANCELLED", results)
        return self._outcome(ExitCode.TIMEOUT, problem, results, self._groups(), status="CANCELLED")

    def _ended_early(self, code: ExitCode) -> SessionOutcome:
        self.stop.set()
        results = [self._final_result(i, ended_by_us=True) for i in range(len(self.runs))]
        self._save("CANCELLED", results)
        return self._outcome(code, None, results, self._groups(), status="CANCELLED")

    def _save(self, status: str, results: list[ResultOutcome]) -> None:
        """The session in the state file as the service shows it (what a later sharded run reads its
        checks' durations from)."""
        state = self.source.state
        if state is None:
            return
        from runner.models import SessionResult

        rows = [
            SessionResult(
                testSessionResultId=r.id,
                checkId=r.checkId,
                name=r.name,
                checkType=r.checkType,
                runLocation=r.runLocation,
                status=r.status,
                resultType="FINAL",
                errorGroupIds=r.errorGroupIds,
                responseTime=round(r.durationSeconds * 1000) if r.durationSeconds is not None else None,
            )
            for r in results
        ]
        ended = max((r.ended for r in self.runs if r.ended is not None), default=self.start)
        session = TestSession(
            testSessionId=self.id,
            name=self.request.name,
            status=status,
            startedAt=self.started_at,
            stoppedAt=moment(ended),
            timeElapsed=round((ended - self.start) * 1000),
            errorGroupIds=[g for g, _count in self._ranked()],
            results=rows,
        )
        state.save_session(ACCOUNT_ID, session, "", time.time())


# What is kept of a pass without retries once its result is made (_settle): that it passed.
_PASSED = Attempt(number=1, started_at=0.0, duration_ms=0.0, passed=True)
# uuid4's version (4) and variant (RFC 4122) bits, as uuid.UUID(version=4) sets them.
_UUID_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_SET = (0x8000 << 48) | (4 << 76)


def _new_ids(count: int) -> list[str]:
    """`count` random ids as str(uuid.uuid4()) writes them, from one read of the system's random
    source (not a read and a UUID object for each result)."""
    raw = os.urandom(16 * count)
    ids = []
    for start in range(0, 16 * count, 16):
        h = f"{int.from_bytes(raw[start : start + 16], 'big') & _UUID_CLEAR | _UUID_SET:032x}"
        ids.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return ids


def _runs_here(run: _Run) -> bool:
    """The engine runs it (its plan is REAL); else it fails closed without a run."""
    plan = run.check.plan
    return plan.mode is Mode.REAL and plan.parsed is not None


def _seconds(attempt: Attempt) -> float:
    """What the service reports of an attempt's time: its response time, else its own duration."""
    ms = attempt.response_time_ms if attempt.response_time_ms is not None else attempt.duration_ms
    return round(round(ms) / 1000.0, 3)


def _verdict(final: Attempt | None, retried: bool) -> ResultVerdict:
    """The check's verdict, by the policy's one rule (job/policy.py `verdict_of`) from its final
    attempt: none yet is unfinished; a cancelled one was cancelled by this run (deadline, signal:
    nobody else can cancel a check run here); a failure whose error class is not said is an error."""
    if final is None:
        return verdict_of(CheckFacts(Ran.UNFINISHED, retried=retried))
    if final.cancelled:
        return verdict_of(CheckFacts(Ran.CANCELLED, retried=retried, ended_by_us=True))
    if final.error_class is None:
        failure = Failure.NONE if final.passed else Failure.ERROR
    else:
        failure = Failure.ERROR if final.error_class.is_error else Failure.ASSERTION
    ran = Ran.PASSED if final.passed else Ran.FAILED
    return verdict_of(CheckFacts(ran, failure, final.degraded, retried))
