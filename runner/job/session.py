"""One session of a run, on its own worker thread: trigger, watch, error groups and analyses.

The worker reports what happens as events and hands back its SessionOutcome as a value; it changes
nothing another thread reads. Results are reported as they become final: between completion long
polls the session is read at a bounded pace, and a failure's error group is read (for its message)
and analysed as soon as the failure appears, so analyses of early failures are ready at the end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from runner.client import ApiClient
from runner.client.polling import wait_for_session
from runner.core.errors import (
    ApiError,
    BadRequestError,
    NoMatchingChecksError,
    NotFoundError,
    PermissionDeniedError,
    exit_code_for,
)
from runner.core.exitcodes import ExitCode
from runner.job.analyses import GroupReader, checks_by_group, groups_by_frequency
from runner.job.events import (
    AnalysesWaiting,
    Cancelled,
    DeadlinePassed,
    Event,
    NoMatch,
    Progress,
    ResultFinished,
    SessionFailed,
    SessionFinished,
    Triggered,
    Where,
)
from runner.job.outcome import ErrorGroupOutcome, ResultOutcome, SessionOutcome
from runner.job.plan import SessionPlan, session_outcome, with_internal_errors
from runner.job.policy import (
    NO_RESULTS_FIELD,
    NOTHING_JUDGED_CODE,
    UNRUN_NAMED_CODE,
    checks_exit_code,
    no_match_exit_code,
    unexplained_end,
    unrun_named_checks,
)
from runner.job.refusals import trigger_refusal
from runner.job.verdicts import KeptRead, OutcomeMemo, check_rows, check_verdict
from runner.models import FINAL_SESSION_STATUSES, SessionResult, TestSession, TriggerRequest

MESSAGE_WAIT = 3.0  # seconds a failure's line waits for its error message before it is printed
CANCEL_WITHIN = 3.0  # seconds a cancel may take when the run is ending


class SessionWorker:
    def __init__(
        self,
        client: ApiClient,
        plan: SessionPlan,
        where: Where,
        environment: str | None,
        emit: Callable[[Event], None],
        stop: threading.Event,
        stop_code: Callable[[], ExitCode | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.plan = plan
        self.where = where
        self.environment = environment
        self.emit = emit
        self.stop = stop
        self.stop_code = stop_code
        self.clock = clock

    def _outcome(
        self,
        session: TestSession | None,
        code: ExitCode,
        problem: str | None = None,
        results: list[ResultOutcome] | None = None,
        groups: list[ErrorGroupOutcome] | None = None,
        no_match: bool = False,
    ) -> SessionOutcome:
        return session_outcome(
            self.where, self.environment, session, results or [], groups or [], code, problem, no_match
        )

    # --- entry points -------------------------------------------------------------------------

    def trigger_and_follow(self, request: TriggerRequest) -> SessionOutcome:
        session, ended = self._trigger(request)
        if ended is not None:
            return ended
        assert session is not None  # _trigger: no outcome yet, so a session
        watch = self._watch(session)
        # The trigger's answer (a row per check) is the watch's from here, and is let go at its next
        # read; this frame would keep it for the whole wait (~19 MiB at 10,000 checks).
        del session
        return self._named_checks(request, self._internal_errors(self._follow(watch)))

    def _named_checks(self, request: TriggerRequest, outcome: SessionOutcome) -> SessionOutcome:
        """A session that ran to its end without a check the target named by id never passes."""
        target = request.target
        if target is None or not target.checkId or target.matchTags or self.stop_code() is not None:
            return outcome
        if outcome.problem or outcome.exitCode not in (ExitCode.OK, ExitCode.CHECKS_FAILED):
            return outcome
        problem = unrun_named_checks(target.checkId, outcome.results)
        if problem is None:
            return outcome
        self.emit(SessionFailed(self.where, problem))
        return outcome.model_copy(update={"exitCode": int(UNRUN_NAMED_CODE), "problem": problem})

    def trigger_only(self, request: TriggerRequest) -> SessionOutcome:
        session, ended = self._trigger(request)
        return ended if ended is not None else self._outcome(session, ExitCode.OK)

    def follow(self, session: TestSession | None, followed: bool = False) -> SessionOutcome:
        assert session is not None
        if followed:
            self.emit(Triggered(self.where, session.testSessionId, session.testSessionLink, followed=True))
        return self._internal_errors(self._follow(self._watch(session)))

    def _internal_errors(self, outcome: SessionOutcome) -> SessionOutcome:
        return with_internal_errors(outcome, self.where, self.emit)

    def _watch(self, session: TestSession) -> _Watch:
        reader = GroupReader(self.client, self.plan.analyses, self.where, self.emit, self.stop, self.clock)
        return _Watch(self, reader, session)

    def _follow(self, watch: _Watch) -> SessionOutcome:
        reader = watch.reader
        try:
            return watch.run()
        except ApiError as exc:
            self.emit(SessionFailed(self.where, str(exc)))
            last = watch.session
            self._cancel(last)
            groups = reader.finish(last, wait=False)
            return self._outcome(last, exit_code_for(exc), str(exc), watch.results(last, groups), groups)
        finally:
            reader.finish(None, wait=False)

    # --- phases -------------------------------------------------------------------------------

    def _trigger(self, request: TriggerRequest) -> tuple[TestSession | None, SessionOutcome | None]:
        try:
            session = self.client.trigger(request)
        except NoMatchingChecksError as exc:  # production's no-match signal, and nothing else
            self.emit(NoMatch(self.where, exc.message))
            problem = f"no check matched the target: {exc.message}"
            return None, self._outcome(None, no_match_exit_code(self.plan.gate), problem, no_match=True)
        except BadRequestError as exc:
            self.emit(SessionFailed(self.where, str(exc)))
            return None, self._outcome(None, ExitCode.USAGE, str(exc))
        except (NotFoundError, PermissionDeniedError) as exc:  # never a no-match: see job/refusals.py
            problem = trigger_refusal(exc)
            self.emit(SessionFailed(self.where, problem))
            return None, self._outcome(None, exit_code_for(exc), problem)
        except ApiError as exc:
            self.emit(SessionFailed(self.where, str(exc)))
            return None, self._outcome(None, exit_code_for(exc), str(exc))
        self.emit(Triggered(self.where, session.testSessionId, session.testSessionLink))
        if self.stop.is_set():  # interrupted while the trigger was in flight: leave nothing running
            self._cancel(session)
            return session, self._outcome(session, self.stop_code() or ExitCode.INTERRUPTED)
        return session, None

    def _cancel(self, session: TestSession | None) -> TestSession | None:
        """Best effort, bounded: leave nothing running on the service. The session as it was left."""
        if session is None or session.is_final:
            return session
        try:
            self.client.cancel(session.testSessionId, within=CANCEL_WITHIN)
        except ApiError as exc:
            self.emit(Cancelled(self.where, session.testSessionId, problem=str(exc)))
            return session
        self.emit(Cancelled(self.where, session.testSessionId))
        try:
            return self.client.get_session(session.testSessionId)
        except ApiError:
            return session


class _Watch:
    """The wait of one session: its state lives on this worker's stack, never shared."""

    def __init__(self, worker: SessionWorker, reader: GroupReader, session: TestSession) -> None:
        self.worker = worker
        self.reader = reader
        # The last read observed, without its rows (`session` gives it back); None until `run`
        # observes the trigger's answer, which is kept until then.
        self.kept: KeptRead | None = None
        self._first: TestSession | None = session
        self.started = worker.clock()
        self.reported: set[str] = set()
        # Every result any answer showed: by id, its check id and name (all `_vanished` asks of it).
        # Not the row itself: a RUNNING placeholder's row (~1.5 KiB) would be kept for every check
        # of the session after its final row replaced it.
        self.seen: dict[str, tuple[str | None, str]] = {}
        self.first_final: dict[str, str] = {}  # the status each result had when first seen final
        self.current: list[ResultOutcome] = []  # the results of the last read, as built by `_observe`
        self.memo = OutcomeMemo()  # a check whose rows did not change is not judged again

    @property
    def session(self) -> TestSession:
        """The last read of the session, its rows made again (only when the wait ends without a
        final answer: a deadline, a signal, a failed read)."""
        if self.kept is None:  # nothing observed: the trigger's answer, final as it came
            assert self._first is not None
            return self._first
        return self.kept.read()

    def results(
        self, session: TestSession | None, groups: list[ErrorGroupOutcome], ended_by_us: bool = False
    ) -> list[ResultOutcome]:
        if session is None:
            return []
        # build_results, through the memo: the final read's outcomes are judged once, not again here.
        by_id = {g.id: g for g in groups}
        return [self.memo.outcome(session, check, by_id, ended_by_us) for check in check_rows(session)]

    def _observe(self, session: TestSession) -> bool:
        """Reports the results that became final since the last read; True when there were any."""
        self.kept = kept = KeptRead(session)
        self.seen.update((r.testSessionResultId, (r.checkId, r.name)) for r in session.results)
        for row in session.results:
            if row.resultType == "FINAL" and row.status in FINAL_SESSION_STATUSES:  # RUNNING: a placeholder
                self.first_final.setdefault(row.testSessionResultId, row.status)
        failing_groups = [g for r in session.results if r.status != "PASSED" for g in r.errorGroupIds]
        self.reader.read(failing_groups)
        self.reader.analyse([g for g, _n in groups_by_frequency(session)], checks_by_group(session))
        # Which checks became final is known from their rows: their messages are waited for first,
        # and then every result of the read is built once (a session of 1,000 results is read often),
        # with the messages of every group read so far, and kept for the end (`_ended_early`).
        checks = check_rows(session)
        # A read after the run was stopped (a signal, the run's deadline) may show this run's own
        # cancel (run.py `_shutdown` cancels before this wait sees the stop): its CANCELLED rows did
        # not finish, the verdict `_ended_early` gives them, whichever of the two saw the cancel.
        ours = self.worker.stop_code() is not None
        fresh = {c.id for c in checks if c.id not in self.reported and check_verdict(c, ours) != "running"}
        ids = [g for c in checks if c.id in fresh for g in c.row.errorGroupIds]
        groups = self.reader.groups(ids, MESSAGE_WAIT)
        self.current = [self.memo.outcome(session, check, groups, ours, kept) for check in checks]
        kept.release()  # from here only the values are kept: this read's rows go with the caller's
        for result in self.current:
            if result.id in fresh and result.id not in self.reported:
                self.reported.add(result.id)
                self.worker.emit(ResultFinished(self.worker.where, result, session.startedAt))
        elapsed = self.worker.clock() - self.started
        running = tuple(r for r in self.current if r.verdict == "running")
        total = len(self.current)
        self.worker.emit(Progress(self.worker.where, elapsed, running, total, total - len(running)))
        return bool(fresh)

    def run(self) -> SessionOutcome:
        worker = self.worker
        plan = worker.plan
        deadline = self.started + plan.timeout_seconds
        first = self._first
        assert first is not None
        final = None
        if not first.is_final:
            began = worker.clock()
            self._observe(first)
            session_id = first.testSessionId
            # Its rows are the memo's values from here (the trigger's: ~19 MiB at 10,000).
            self._first = None
            del first
            final = wait_for_session(
                worker.client,
                session_id,
                deadline,
                stop=worker.stop,
                watch=self._observe,
                clock=worker.clock,
                read_cost=worker.clock() - began,  # a big session's reads are paced from the first
            )
        else:
            final = first
        if final is None:
            return self._ended_early(deadline)
        if "results" not in final.model_fields_set:
            # The completion long poll's answer need not carry results (nor the trigger's): read
            # the session itself once more before judging it.
            again = worker.client.get_session(final.testSessionId)  # another session's answer: refused
            final = again if again.is_final else final
        self._observe(final)
        elapsed = worker.clock() - self.started
        worker.emit(SessionFinished(worker.where, final.status, elapsed))
        vanished = _vanished(self.seen.items(), final.results)
        changed = sum(
            1 for r in final.results if self.first_final.get(r.testSessionResultId, r.status) != r.status
        )
        if (vanished or changed) and worker.stop_code() is None:  # never a no-match: checks were seen
            problem = unexplained_end(final.status, [], vanished=vanished, changed=changed)
            groups = self.reader.finish(final, wait=False)
            return worker._outcome(final, NOTHING_JUDGED_CODE, problem, self.results(final, groups), groups)
        if "results" not in final.model_fields_set and worker.stop_code() is None:
            return worker._outcome(final, NOTHING_JUDGED_CODE, NO_RESULTS_FIELD)
        if not final.results and final.status == "PASSED":  # FAILED without results: not understood
            worker.emit(NoMatch(worker.where, "the session finished without results"))
            code = no_match_exit_code(plan.gate)
            return worker._outcome(
                final,
                code,
                "no check matched the target: the session finished without results",
                no_match=True,
            )
        if not final.results and final.status == "CANCELLED" and worker.stop_code() is None:
            # cancelled by someone before any result
            problem = "the session was cancelled before any check reported a result: nothing was judged"
            return worker._outcome(final, NOTHING_JUDGED_CODE, problem)
        waiting = self.reader.analyses_to_wait_for(final)
        if waiting:
            worker.emit(AnalysesWaiting(worker.where, waiting, plan.analyses.timeout_seconds))
        groups = self.reader.finish(final, wait=not worker.stop.is_set())
        stop = worker.stop_code()
        results = self.results(final, groups, ended_by_us=stop is not None)  # as `_observe`: ours
        if stop is not None:
            return worker._outcome(final, stop, None, results, groups)
        problem = unexplained_end(final.status, results, vanished=0)
        if problem is not None:
            return worker._outcome(final, NOTHING_JUDGED_CODE, problem, results, groups)
        return worker._outcome(final, checks_exit_code(results, plan.gate), None, results, groups)

    def _ended_early(self, deadline: float) -> SessionOutcome:
        """The deadline passed, or a signal stopped the run: cancel, and report what did not finish."""
        worker = self.worker
        before = self.current  # the outcomes of the last read
        if not worker.stop.is_set():
            timeout = worker.plan.timeout_seconds
            worker.emit(
                DeadlinePassed(
                    worker.where,
                    timeout,
                    tuple(r for r in before if r.verdict != "running"),
                    tuple(r for r in before if r.verdict == "running"),
                )
            )
            last = self.session
            left = worker._cancel(last) or last
            groups = self.reader.finish(left, wait=False)
            problem = f"the session did not finish within the {timeout:g} s deadline; it was cancelled"
            return worker._outcome(left, ExitCode.TIMEOUT, problem, self.results(left, groups, True), groups)
        last = self.session
        left = worker._cancel(last) or last
        groups = self.reader.finish(left, wait=False)
        code = worker.stop_code() or ExitCode.INTERRUPTED
        return worker._outcome(left, code, None, self.results(left, groups, True), groups)


def _vanished(seen: Iterable[tuple[str, tuple[str | None, str]]], final: list[SessionResult]) -> int:
    """How many results an earlier answer showed (result id, (check id, name)) that the final answer
    has no trace of: not the same result id, nor a result of the same check (by check id, or by name
    where there is none)."""
    ids = {r.testSessionResultId for r in final}
    checks = {r.checkId for r in final if r.checkId}
    names = {r.name for r in final}
    kept = (
        result_id in ids or (check_id in checks if check_id else name in names)
        for result_id, (check_id, name) in seen
    )
    return sum(1 for here in kept if not here)
