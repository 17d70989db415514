"""A session's error groups and their root cause analyses, read as soon as failures appear.

Per group (the spec's `rca` keys, docs/spec.md): read the group, for the failure's
message whether or not analyses are on; then, when analyses are on and the group is among the first
`rca.max`, take its newest analysis or create one, and poll it until it completes or the run stops
waiting. An analysis that cannot be had is reported with its reason and never changes the exit code.

The reader belongs to one session's worker thread. Its pool's tasks hand back values (futures); the
only thing they share is the event queue they report to.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import TYPE_CHECKING, NamedTuple

from runner.core.errors import ApiError, PaymentRequiredError
from runner.core.threads import DaemonPool
from runner.job.events import AnalysisReady, Event, Where
from runner.job.outcome import AnalysisOutcome, ErrorGroupOutcome
from runner.models import ErrorGroup, TestSession
from runner.models.analyses import Analysis, TestSessionErrorGroup

if TYPE_CHECKING:
    # The service's reader only: a checks file's run (job/local.py) takes its plan and bounds from
    # here and loads nothing of the client.
    from runner.client import ApiClient

MAX_WORKERS = 8
MAX_GROUPS_READ = 200  # error messages for the reports; beyond this a report names the group id only
READS_WAIT = 15.0  # seconds to wait for group reads after the session ended (each read is one GET)


class AnalysisPlan(NamedTuple):
    """The spec's `rca` keys (a value made on every run's start-up path: a NamedTuple costs a third of
    a frozen dataclass's class creation, ~3 M instructions less)."""

    enabled: bool = True
    generate: bool = True
    timeout_seconds: float = 120.0
    max_groups: int = 20
    context: str | None = None


def groups_by_frequency(session: TestSession) -> list[tuple[str, int]]:
    """The session's error groups, most frequent first (ties keep the order the service gave)."""
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for group_id in session.errorGroupIds:
        order.setdefault(group_id, len(order))
    for result in session.results:
        for group_id in result.errorGroupIds:
            order.setdefault(group_id, len(order))
            counts[group_id] += 1
    ranked = sorted(order, key=lambda g: (-counts[g], order[g]))
    return [(g, counts[g]) for g in ranked]


def checks_by_group(session: TestSession) -> dict[str, tuple[str, ...]]:
    names: dict[str, list[str]] = {}
    for result in session.results:
        for group_id in result.errorGroupIds:
            name = result.name or result.checkId or result.testSessionResultId
            if name not in names.setdefault(group_id, []):
                names[group_id].append(name)
    return {group_id: tuple(found) for group_id, found in names.items()}


def _completed(
    analysis_id: str, provider: str | None, model: str | None, content: Analysis | None
) -> AnalysisOutcome:
    return AnalysisOutcome(
        state="completed", id=analysis_id, provider=provider, model=model, analysis=content
    )


class GroupReader:
    def __init__(
        self,
        client: ApiClient,
        plan: AnalysisPlan,
        where: Where,
        emit: Callable[[Event], None],
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.plan = plan
        self.where = where
        self.emit = emit
        self.clock = clock
        self._outer_stop = stop
        self._stop = threading.Event()  # set when the reader is done: no task polls on after that
        self._pool = DaemonPool(MAX_WORKERS, "groups")
        self._reads: dict[str, Future[ErrorGroup | str]] = {}  # a str is why the group is unreadable
        # How many of the session's results were in the group when its read was sent: a count the
        # service keeps (occurrences) is read again at the end when more came after (_refresh).
        self._read_counts: dict[str, int] = {}
        self._read_groups: dict[str, ErrorGroupOutcome] = {}  # the reads done, each made an outcome once
        self._analyses: dict[str, Future[AnalysisOutcome]] = {}
        # Analyses poll until the reader finishes; this caps them should it never be asked to.
        self._cap = clock() + 3600.0

    # --- while the session runs ----------------------------------------------------------------

    def read(self, group_ids: Iterable[str]) -> None:
        """Reads the groups not read yet; `group_ids` one per failing result of the session (a group
        named twice had two of its results in it)."""
        for group_id, seen in Counter(group_ids).items():
            if group_id not in self._reads and len(self._reads) < MAX_GROUPS_READ:
                self._reads[group_id] = self._pool.submit(self._read, group_id)
                self._read_counts[group_id] = seen

    def _refresh(self, ranked: list[tuple[str, int]]) -> None:
        """Reads again a group whose occurrences the service counts when more of this session's results
        landed in it after it was read (a retry's second failure): its count then includes them all.
        A service that keeps no count (production) is never asked twice."""
        for group_id, count in ranked:
            read = self._reads.get(group_id)
            if read is None or not read.done() or count <= self._read_counts.get(group_id, count):
                continue
            group = read.result()
            if isinstance(group, TestSessionErrorGroup) and group.occurrences is not None:
                self._reads[group_id] = self._pool.submit(self._read, group_id)
                self._read_counts[group_id] = count
                self._read_groups.pop(group_id, None)  # made again from the new read

    def groups(self, group_ids: Iterable[str], timeout: float) -> dict[str, ErrorGroupOutcome]:
        """The groups read so far (message, first and last seen), waiting at most `timeout` for
        the reads of `group_ids` under way. Analyses are not included."""
        wanted = [self._reads[g] for g in group_ids if g in self._reads]
        if wanted:
            wait_futures(wanted, timeout=max(0.0, timeout))
        if len(self._read_groups) < len(self._reads):
            for gid, future in self._reads.items():
                if gid not in self._read_groups and future.done():
                    self._read_groups[gid] = _read_outcome(gid, future)
        return dict(self._read_groups)

    def analyse(self, ranked: list[str], checks: Mapping[str, tuple[str, ...]]) -> None:
        """Starts the analyses of groups read so far, in `ranked` order, up to rca.max in all."""
        if not self.plan.enabled or self._stop.is_set():
            return
        for group_id in ranked:
            if len(self._analyses) >= self.plan.max_groups:
                return
            read = self._reads.get(group_id)
            if group_id in self._analyses or read is None or not read.done():
                continue
            group = read.result()
            if isinstance(group, str):
                self._analyses[group_id] = _done(AnalysisOutcome(state="error", reason=group))
            else:
                self._analyses[group_id] = self._pool.submit(self._analysis, group, checks.get(group_id, ()))

    def analyses_to_wait_for(self, session: TestSession) -> int:
        """Analyses under way, and those of the session's groups still to start (within rca.max)."""
        if not self.plan.enabled:
            return 0
        running = sum(1 for future in self._analyses.values() if not future.done())
        unstarted = [g for g, _count in groups_by_frequency(session) if g not in self._analyses]
        room = max(0, self.plan.max_groups - len(self._analyses))
        return running + min(room, len(unstarted))

    # --- when the session ended ----------------------------------------------------------------

    def finish(self, session: TestSession | None, wait: bool) -> list[ErrorGroupOutcome]:
        """Every group of the session with what is known of it; with `wait`, reads and analyses
        under way get until their deadlines. The reader stops after this."""
        ranked = groups_by_frequency(session) if session is not None else []
        ranked = ranked[:MAX_GROUPS_READ]
        try:
            if wait and ranked:
                self._refresh(ranked)
                self.read(gid for gid, count in ranked for _ in range(count))
                self.groups([gid for gid, _count in ranked], READS_WAIT)
                self.analyse([gid for gid, _count in ranked], checks_by_group(session) if session else {})
                if self.plan.enabled:
                    self._wait_analyses(self.clock() + self.plan.timeout_seconds)
        finally:
            self._stop.set()
            self._pool.shutdown()
        return [self._snapshot(gid, count, rank) for rank, (gid, count) in enumerate(ranked)]

    def _wait_analyses(self, deadline: float) -> None:
        while not self._outer_stop.is_set():
            pending = [f for f in self._analyses.values() if not f.done()]
            remaining = deadline - self.clock()
            if not pending or remaining <= 0:
                return
            wait_futures(pending, timeout=min(remaining, 0.2))

    def _snapshot(self, group_id: str, count: int, rank: int) -> ErrorGroupOutcome:
        read = self._reads.get(group_id)
        if read is not None and read.done():
            outcome, group = _read_outcome(group_id, read), read.result()
        else:
            outcome, group = ErrorGroupOutcome(id=group_id), None
        state = self._analysis_state(group_id, group, rank)
        return outcome.model_copy(update={"count": count, "analysis": state})

    def _analysis_state(self, group_id: str, group: ErrorGroup | str | None, rank: int) -> AnalysisOutcome:
        if not self.plan.enabled:
            return AnalysisOutcome(state="disabled", reason="analyses are off (rca.enabled: false)")
        future = self._analyses.get(group_id)
        if future is not None:
            value = future.result() if future.done() else None
            if value is not None and value.state != "pending":
                return value
            reason = (
                "interrupted"
                if self._outer_stop.is_set()
                else (f"not ready within rca.timeoutSeconds ({self.plan.timeout_seconds:g} s)")
            )
            return AnalysisOutcome(state="timeout", id=value.id if value else None, reason=reason)
        if isinstance(group, str):
            return AnalysisOutcome(state="error", reason=group)
        if len(self._analyses) >= self.plan.max_groups or rank >= self.plan.max_groups:
            return AnalysisOutcome(state="skipped", reason=f"beyond rca.max ({self.plan.max_groups})")
        reason = "interrupted" if self._outer_stop.is_set() else "the error group could not be read in time"
        return AnalysisOutcome(state="timeout", reason=reason)

    # --- the pool's tasks ------------------------------------------------------------------------

    def _read(self, group_id: str) -> ErrorGroup | str:
        try:
            return self.client.get_test_session_error_group(group_id)
        except ApiError as exc:
            return f"error group unreadable: {exc}"

    def _analysis(self, group: ErrorGroup, checks: tuple[str, ...]) -> AnalysisOutcome:
        result = self._analysis_of(group)
        if result.state == "completed":
            done = _group_outcome(group, result)
            self.emit(AnalysisReady(self.where, checks, done))
        return result

    def _analysis_of(self, group: ErrorGroup) -> AnalysisOutcome:
        from runner.client.polling import wait_for_analysis  # loaded already: session.py waits with it

        try:
            newest = group.rootCauseAnalyses[0] if group.rootCauseAnalyses else None
            if newest is not None and newest.analysis is not None:
                return _completed(newest.id, newest.provider, newest.model, newest.analysis)
            if newest is not None:
                analysis_id = newest.id
            elif not self.plan.generate:
                return AnalysisOutcome(state="unavailable", reason="none exists and rca.generate is false")
            else:
                created = self.client.create_test_session_error_group_analysis(
                    group.id, user_context=self.plan.context
                )
                analysis_id = created.id
            rca = wait_for_analysis(self.client, analysis_id, self._cap, stop=self._stop)
            if rca.is_completed:
                return _completed(rca.id, rca.provider, rca.model, rca.analysis)
            return AnalysisOutcome(state="pending", id=analysis_id, reason="still being generated")
        except PaymentRequiredError as exc:
            return AnalysisOutcome(state="unavailable", reason=f"not available on this plan ({exc.message})")
        except ApiError as exc:
            return AnalysisOutcome(state="error", reason=str(exc))


def _read_outcome(group_id: str, future: Future[ErrorGroup | str]) -> ErrorGroupOutcome:
    group = future.result()
    return _group_outcome(group) if isinstance(group, ErrorGroup) else ErrorGroupOutcome(id=group_id)


def _group_outcome(group: ErrorGroup, analysis: AnalysisOutcome | None = None) -> ErrorGroupOutcome:
    """The error group as read: its message and when it was first and last seen."""
    return ErrorGroupOutcome(
        id=group.id,
        errorHash=group.errorHash,
        message=group.rawErrorMessage,
        cleanedMessage=group.cleanedErrorMessage,
        firstSeen=group.firstSeen,
        lastSeen=group.lastSeen,
        occurrences=group.occurrences if isinstance(group, TestSessionErrorGroup) else None,
        analysis=analysis,
    )


def _done(value: AnalysisOutcome) -> Future[AnalysisOutcome]:
    future: Future[AnalysisOutcome] = Future()
    future.set_result(value)
    return future
