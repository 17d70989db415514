"""Error groups of a finished session and their root cause analyses, fetched concurrently.

The flow per group follows gaps-filled.md: read the group; take its newest analysis if it has one;
else create one when allowed; poll it until it completes or the RCA deadline passes. An analysis that
cannot be had is reported with its reason and never changes the exit code.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass

from runner.client import ApiClient
from runner.core.errors import ApiError, PaymentRequiredError
from runner.job.outcome import AnalysisOutcome, ErrorGroupOutcome
from runner.models import ErrorGroup, RootCauseAnalysis, TestSession

MAX_WORKERS = 8
MAX_GROUPS_READ = 200  # error messages for the reports; beyond this a report names the group id only
POLL_FIRST = 0.25
POLL_MAX = 2.0


@dataclass(frozen=True)
class AnalysisPlan:
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


class AnalysisCollector:
    def __init__(
        self,
        client: ApiClient,
        plan: AnalysisPlan,
        stop: threading.Event,
        log: Callable[[str], None] = lambda _m: None,
    ) -> None:
        self.client = client
        self.plan = plan
        self.log = log
        # Set on an interrupt, and when collect() returns, so that no worker polls on after it.
        self.stop = threading.Event()
        self._outer_stop = stop

    def collect(self, session: TestSession) -> list[ErrorGroupOutcome]:
        ranked = groups_by_frequency(session)[:MAX_GROUPS_READ]
        if not ranked:
            return []
        deadline = time.monotonic() + self.plan.timeout_seconds
        outcomes = {
            gid: ErrorGroupOutcome(id=gid, count=count, analysis=self._initial_state(i))
            for i, (gid, count) in enumerate(ranked)
        }
        pool = ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(ranked)), thread_name_prefix="rca")
        futures: list[Future[None]] = [
            pool.submit(self._one, outcomes[gid], deadline, i < self._analysed_count())
            for i, (gid, _count) in enumerate(ranked)
        ]
        try:
            while not self._outer_stop.is_set():
                remaining = deadline - time.monotonic()
                _done, pending = wait_futures(futures, timeout=max(0.0, min(remaining, 0.2)))
                if not pending or remaining <= 0:
                    break
        finally:
            self.stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
        # A snapshot: workers still running past the deadline must not change what is reported.
        snapshot = [outcomes[gid].model_copy(deep=True) for gid, _count in ranked]
        reason = "interrupted" if self._outer_stop.is_set() else (
            f"not ready within rca.timeoutSeconds ({self.plan.timeout_seconds:g} s)"
        )
        for outcome in snapshot:
            analysis = outcome.analysis
            if analysis is not None and analysis.state == "pending":
                outcome.analysis = analysis.model_copy(update={"state": "timeout", "reason": reason})
        return snapshot

    def _analysed_count(self) -> int:
        return self.plan.max_groups if self.plan.enabled else 0

    def _initial_state(self, rank: int) -> AnalysisOutcome:
        if not self.plan.enabled:
            return AnalysisOutcome(state="disabled", reason="analyses are off (rca.enabled: false)")
        if rank >= self.plan.max_groups:
            return AnalysisOutcome(state="skipped", reason=f"beyond rca.max ({self.plan.max_groups})")
        return AnalysisOutcome(state="pending", reason="not fetched yet")

    def _one(self, outcome: ErrorGroupOutcome, deadline: float, analyse: bool) -> None:
        try:
            group = self.client.get_test_session_error_group(outcome.id)
        except ApiError as exc:
            self.log(f"error group {outcome.id}: {exc}")
            if analyse:
                outcome.analysis = AnalysisOutcome(state="error", reason=f"error group unreadable: {exc}")
            return
        outcome.errorHash = group.errorHash
        outcome.message = group.rawErrorMessage
        outcome.cleanedMessage = group.cleanedErrorMessage
        outcome.firstSeen = group.firstSeen
        outcome.lastSeen = group.lastSeen
        if analyse:
            outcome.analysis = self._analysis_for(group, deadline)

    def _analysis_for(self, group: ErrorGroup, deadline: float) -> AnalysisOutcome:
        try:
            newest = group.rootCauseAnalyses[0] if group.rootCauseAnalyses else None
            if newest is not None and newest.analysis is not None:
                return AnalysisOutcome(
                    state="completed",
                    id=newest.id,
                    provider=newest.provider,
                    model=newest.model,
                    analysis=newest.analysis,
                )
            if newest is not None:
                return self._poll(newest.id, deadline)
            if not self.plan.generate:
                return AnalysisOutcome(state="unavailable", reason="none exists and rca.generate is false")
            created = self.client.create_test_session_error_group_analysis(
                group.id, user_context=self.plan.context
            )
            return self._poll(created.id, deadline)
        except PaymentRequiredError as exc:
            return AnalysisOutcome(state="unavailable", reason=f"not available on this plan ({exc.message})")
        except ApiError as exc:
            return AnalysisOutcome(state="error", reason=str(exc))

    def _poll(self, analysis_id: str, deadline: float) -> AnalysisOutcome:
        interval = POLL_FIRST
        while True:
            rca: RootCauseAnalysis = self.client.get_analysis(analysis_id)
            if rca.is_completed:
                return AnalysisOutcome(
                    state="completed",
                    id=rca.id,
                    provider=rca.provider,
                    model=rca.model,
                    analysis=rca.analysis,
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.stop.is_set():
                return AnalysisOutcome(state="pending", id=analysis_id, reason="still being generated")
            if self.stop.wait(min(interval, remaining)):
                return AnalysisOutcome(state="pending", id=analysis_id, reason="interrupted")
            interval = min(POLL_MAX, interval * 1.6)
