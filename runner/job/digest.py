"""The run's digest: computed once from the outcome, rendered by every front end and report.

Counts, the headline, and the results that fail the gate (with their message, root cause and link)
in the order a reader wants them: failures first, then errors, unfinished, cancelled, degraded.
Texts here are raw service text: each renderer passes them through the sanitiser of its output.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.core.exitcodes import ExitCode
from runner.job.outcome import (
    Counts,
    ErrorGroupOutcome,
    Outcome,
    ResultOutcome,
    SessionOutcome,
    count_results,
)
from runner.job.policy import LABELS, Gate, forgiven, result_fails

# The reading order of failing results, and of the rows of a table of all results.
ORDER = ("failed", "error", "running", "cancelled", "degraded", "flaky", "passed")

TITLES = {
    "passed": "Passed",
    "failed": "Failed",
    "no-match": "No matching checks",
    "timeout": "Timed out",
    "service-error": "Service error",
    "usage-error": "Usage error",
    "interrupted": "Interrupted",
    "detached": "Detached",
}


@dataclass(frozen=True)
class Item:
    """One result with what a reader needs beside it."""

    result: ResultOutcome
    session: SessionOutcome
    location: str
    root_cause: str | None  # of its first error group with a completed analysis
    classification: str | None

    @property
    def label(self) -> str:
        return LABELS.get(self.result.verdict, self.result.verdict)


@dataclass(frozen=True)
class Digest:
    outcome: Outcome
    gate: Gate
    counts: Counts
    items: tuple[Item, ...]  # every result, in reading order
    failing: tuple[Item, ...]  # those that fail the gate, in reading order
    forgiven: tuple[Item, ...]  # known failures that `failOn: new` lets pass

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode(self.outcome.exitCode)

    @property
    def title(self) -> str:
        return TITLES.get(self.outcome.verdict, self.outcome.verdict)

    @property
    def summary(self) -> str:
        """The headline's second half: what happened to the checks, in the gate's words."""
        total = self.counts.total
        if self.outcome.verdict == "no-match":
            unmatched = sum(1 for s in self.outcome.sessions if s.noMatch)
            where = (
                f"{unmatched} of {len(self.outcome.sessions)} sessions"
                if unmatched > 1 or len(self.outcome.sessions) > 1
                else "the session"
            )
            return f"no check matched the target of {where}"
        if total == 0:
            return "no check results"
        if self.failing:
            return f"{len(self.failing)} of {total} checks failed the gate ({breakdown(self.failing)})"
        if self.forgiven:
            n = len(self.forgiven)
            return f"gate passed: {n} known failure{'s' if n != 1 else ''}, no new ones"
        soft = [f"{getattr(self.counts, v)} {v}" for v in ("degraded", "flaky") if getattr(self.counts, v)]
        return f"all {total} checks passed" + (f" ({', '.join(soft)})" if soft else "")

    @property
    def headline(self) -> str:
        return f"{self.title} — {self.summary}"

    def count_line(self) -> str:
        c = self.counts
        parts = [f"{c.passed} passed", f"{c.failed} failed", f"{c.degraded} degraded", f"{c.flaky} flaky"]
        parts += [f"{c.error} error", f"{c.cancelled} cancelled"]
        if c.running:
            parts.append(f"{c.running} did not finish")
        return ", ".join(parts)


def breakdown(items: tuple[Item, ...] | list[Item]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.label] = counts.get(item.label, 0) + 1
    return ", ".join(f"{n} {label}" for label, n in counts.items())


def analysis_of(result: ResultOutcome, groups: dict[str, ErrorGroupOutcome]) -> tuple[str | None, str | None]:
    """Root cause and classification of the result's first error group with a completed analysis."""
    for group_id in result.errorGroupIds:
        group = groups.get(group_id)
        analysis = group.analysis if group else None
        if analysis and analysis.state == "completed" and analysis.analysis:
            return analysis.analysis.rootCause, analysis.analysis.classification
    return None, None


def digest(outcome: Outcome) -> Digest:
    gate = Gate.of(outcome)
    rank = {verdict: index for index, verdict in enumerate(ORDER)}
    items: list[Item] = []
    for session in outcome.sessions:
        groups = {group.id: group for group in session.errorGroups}
        for result in session.results:
            root_cause, classification = analysis_of(result, groups)
            location = result.runLocation or session.runLocation
            items.append(Item(result, session, location, root_cause, classification))
    items.sort(key=lambda item: rank.get(item.result.verdict, 0))  # stable: session order kept
    return Digest(
        outcome=outcome,
        gate=gate,
        counts=count_results([item.result for item in items]),
        items=tuple(items),
        failing=tuple(item for item in items if result_fails(item.result, gate)),
        forgiven=tuple(item for item in items if forgiven(item.result, gate)),
    )
