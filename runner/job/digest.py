"""The run's digest: computed once from the outcome, rendered by every front end and report.

Counts, the headline, and the results that fail the gate (with their message, root cause and link)
in the order a reader wants them: failures first, then errors, unfinished, cancelled, degraded; and
for each failure its known/new history (runner/job/known.py), decided once. The console, markdown,
JUnit, GitHub, GitLab and the comment read these and only format them.
Texts here are raw service text: each renderer passes them through the sanitiser of its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from runner.core.exitcodes import ExitCode
from runner.core.words import counted, plural
from runner.job.known import UNTOLD, History, history, run_start
from runner.job.outcome import (
    BaselineOutcome,
    CheckRef,
    Counts,
    ErrorGroupOutcome,
    ExpiredQuarantine,
    Outcome,
    ResultOutcome,
    SessionOutcome,
    SlowerCheck,
)
from runner.job.policy import LABELS, Gate, failing_verdicts, forgiven, result_fails

# The reading order of failing results, and of the rows of a table of all results.
ORDER = ("failed", "error", "running", "cancelled", "degraded", "flaky", "passed")

TITLES = {
    "passed": "Passed",
    "failed": "Failed",
    "no-match": "No matching checks",
    "timeout": "Timed out",
    "service-error": "Service error",
    "usage-error": "Usage error",
    "build-not-started": "The build did not start",
    "interrupted": "Interrupted",
    "detached": "Detached",
}

DEMO_MARK = "DEMO (the shipped demo world: scripted results, not your build):"


@dataclass(frozen=True, slots=True)
class Item:
    """One result with what a reader needs beside it."""

    result: ResultOutcome
    session: SessionOutcome
    location: str
    root_cause: str | None  # of its first error group with a completed analysis
    classification: str | None
    history: History | None  # known or new: for results whose verdict fails (`Digest.failures`)
    fails_gate: bool
    forgiven: bool  # a known failure that `failOn: new` lets pass

    @property
    def label(self) -> str:
        return LABELS.get(self.result.verdict, self.result.verdict)

    @property
    def excused_by_quarantine(self) -> bool:
        """A failure that did not fail the gate because its check is quarantined."""
        return not self.fails_gate and not self.forgiven and self.result.quarantined is not None


@dataclass(frozen=True)
class Digest:
    outcome: Outcome
    gate: Gate
    counts: Counts
    # Every result whose verdict fails a gate that forgives nothing, in reading order, each with its
    # known/new `history`: those that fail this gate and those `failOn: new` forgives.
    failures: tuple[Item, ...]
    failing: tuple[Item, ...]  # those that fail the gate, in reading order
    forgiven: tuple[Item, ...]  # known failures that `failOn: new` lets pass
    quarantined: tuple[Item, ...]  # failures of quarantined checks: reported, not gating
    # The other results (passed, flaky, degraded unless it fails), by verdict, with their sessions
    # (parallel lists). They become Items only where a table shows them (`rows`): most results of a
    # big run pass, and 100,000 objects living until the reports are written would cost the garbage
    # collector walks over the whole run (seconds at that size).
    others: dict[str, tuple[list[ResultOutcome], list[SessionOutcome]]]

    def rows(self, limit: int) -> list[Item]:
        """The first `limit` results in reading order (see ORDER), failures with their history."""
        rows: list[Item] = []
        failures = iter(self.failures)
        pending = next(failures, None)
        groups: dict[int, dict[str, ErrorGroupOutcome]] = {}
        for verdict in ORDER:
            while pending is not None and pending.result.verdict == verdict and len(rows) < limit:
                rows.append(pending)
                pending = next(failures, None)
            results, sessions = self.others.get(verdict) or ([], [])
            for result, session in zip(results, sessions, strict=True):
                if len(rows) >= limit:
                    return rows
                found = groups.get(id(session))
                if found is None:
                    found = groups[id(session)] = {group.id: group for group in session.errorGroups}
                rows.append(_item(result, session, found))
        return rows

    # -- history and quarantine (runner/job/history.py, runner/job/quarantine.py) -----------------

    @property
    def expired_quarantine(self) -> tuple[ExpiredQuarantine, ...]:
        return tuple(self.outcome.expiredQuarantine)

    def _passing(self) -> list[tuple[ResultOutcome, SessionOutcome]]:
        return [
            (result, session)
            for verdict in ORDER
            for result, session in zip(*(self.others.get(verdict) or ([], [])), strict=True)
        ]

    @cached_property
    def unstable(self) -> tuple[Item, ...]:
        """Checks that pass now though they failed in some recent runs, or passed only on a retry."""
        return tuple(
            _item(result, session, {})
            for result, session in self._passing()
            if result.history is not None and result.history.unstable
        )

    @cached_property
    def ready_to_leave(self) -> tuple[Item, ...]:
        """Quarantined checks that passed their last READY_RUNS runs in a row."""
        return tuple(
            _item(result, session, {})
            for result, session in self._passing()
            if result.history is not None and result.history.readyToLeaveQuarantine
        )

    # -- known or new, and the baseline (runner/job/known.py, runner/job/baseline.py) ---------------

    def _novel(self, *which: str) -> tuple[Item, ...]:
        return tuple(i for i in self.failures if i.history is not None and i.history.novelty in which)

    @cached_property
    def known_failures(self) -> tuple[Item, ...]:
        """Failures already there before this build (the policy's `novelty`)."""
        return self._novel("known")

    @cached_property
    def new_failures(self) -> tuple[Item, ...]:
        """Failures first seen in this build (the policy's `novelty`: new)."""
        return self._novel("new")

    @cached_property
    def untold(self) -> tuple[Item, ...]:
        """Failures whose history could not be told: neither new nor known in any output's count, and
        never forgiven by the gate."""
        return self._novel("untold")

    @property
    def not_known(self) -> int:
        """Failures not known to have failed before (new, or untold): the CI outputs' `new-failures`,
        documented so (action.yml), since a script reading it must not take untold for known."""
        return len(self.new_failures) + len(self.untold)

    @property
    def failure_split(self) -> str:
        """'1 new, 2 known' and ', 1 cannot be told' when any: the failures in the words of known/new,
        as every output counts them; empty without failures."""
        if not self.failures:
            return ""
        split = f"{len(self.new_failures)} new, {len(self.known_failures)} known"
        return split + (f", {len(self.untold)} {UNTOLD}" if self.untold else "")

    @property
    def baseline(self) -> BaselineOutcome | None:
        """The comparison with the baseline; None when none was asked for."""
        return self.outcome.baseline

    @property
    def baseline_used(self) -> bool:
        return self.outcome.baseline is not None and self.outcome.baseline.used

    def _marked(self, mark: str) -> tuple[Item, ...]:
        """The results with this baseline mark, in reading order."""
        marked = [item for item in self.failures if item.result.baseline == mark]
        for verdict in ORDER:
            results, sessions = self.others.get(verdict) or ([], [])
            marked += [
                _item(result, session, {})
                for result, session in zip(results, sessions, strict=True)
                if result.baseline == mark
            ]
        return tuple(marked)

    @property
    def newly_failing(self) -> tuple[Item, ...]:
        return self._marked("newly-failing")

    @property
    def still_failing(self) -> tuple[Item, ...]:
        return self._marked("still-failing")

    @property
    def fixed(self) -> tuple[Item, ...]:
        """Failing in the baseline, not failing now."""
        return self._marked("fixed")

    @property
    def slower(self) -> tuple[SlowerCheck, ...]:
        return tuple(self.outcome.baseline.slower) if self.outcome.baseline else ()

    @property
    def missing(self) -> tuple[CheckRef, ...]:
        """Checks of the baseline that this run did not run."""
        return tuple(self.outcome.baseline.missing) if self.outcome.baseline else ()

    @property
    def changes(self) -> str:
        """'1 newly failing, 1 fixed, 1 slower, 1 missing' against the baseline; empty without one."""
        if not self.baseline_used:
            return ""
        parts = [
            f"{len(self.newly_failing)} newly failing",
            f"{len(self.fixed)} fixed",
            f"{len(self.slower)} slower",
        ]
        if self.missing:
            parts.append(f"{len(self.missing)} missing")
        return ", ".join(parts)

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
                f"{unmatched} of {counted(len(self.outcome.sessions), 'session')}"
                if unmatched > 1 or len(self.outcome.sessions) > 1
                else "the session"
            )
            return f"no check matched the target of {where}"
        if total == 0:
            return "no check results"
        checks = counted(total, "check")
        if self.failing:
            # "the 1 check failed the gate", "1 of 4 checks failed the gate"
            which = f"the {checks}" if total == 1 else f"{len(self.failing)} of {checks}"
            return f"{which} failed the gate ({breakdown(self.failing)})"
        if self.quarantined and self.outcome.exitCode != ExitCode.OK:
            # Never a headline that reads like a pass: the run ended without a verdict.
            failed = counted(len(self.quarantined), "quarantined check")
            return f"{failed} failed (not gating), but that is no verdict (exit code {self.outcome.exitCode})"
        excused = []
        if self.forgiven:
            excused.append(f"{counted(len(self.forgiven), 'known failure')}, no new ones")
        if self.quarantined:
            excused.append(f"{counted(len(self.quarantined), 'quarantined check')} failed")
        if excused:
            return "gate passed: " + "; ".join(excused)
        soft = [f"{getattr(self.counts, v)} {v}" for v in ("degraded", "flaky") if getattr(self.counts, v)]
        which = f"{plural(total, 'the', 'all')} {checks}"  # "the 1 check", "all 4 checks"
        if self.outcome.exitCode != ExitCode.OK:
            # Nothing failed among what was read, yet the run is no pass (the service's answers did
            # not add up, a signal, a usage error): never a headline that reads like a pass.
            return f"the {checks} read passed, but that is no verdict (exit code {self.outcome.exitCode})"
        return f"{which} passed" + (f" ({', '.join(soft)})" if soft else "")

    @property
    def headline(self) -> str:
        demo = DEMO_MARK + " " if self.outcome.world == "demo" else ""
        return f"{demo}{self.title} — {self.summary}"

    def figures(self) -> dict[str, str]:
        """The run in numbers, as CI systems pass them on (GitHub outputs, GitLab dotenv), by name."""
        c = self.counts
        return {
            "status": self.outcome.verdict,
            "exit-code": str(self.outcome.exitCode),
            "total": str(c.total),
            "passed": str(c.passed),
            "failed": str(c.failed),
            "degraded": str(c.degraded),
            "flaky": str(c.flaky),
            "error": str(c.error),
            "cancelled": str(c.cancelled),
            "new-failures": str(self.not_known),
            "known-failures": str(len(self.known_failures)),
            "fixed": str(len(self.fixed)),
        }

    def count_parts(self) -> list[str]:
        """['2 passed', '1 failed', ...]: every verdict's count, 'did not finish' only when there are any."""
        c = self.counts
        parts = [f"{c.passed} passed", f"{c.failed} failed", f"{c.degraded} degraded", f"{c.flaky} flaky"]
        parts += [f"{c.error} error", f"{c.cancelled} cancelled"]
        if c.running:
            parts.append(f"{c.running} did not finish")
        return parts

    def count_line(self) -> str:
        return ", ".join(self.count_parts())


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


def _item(
    result: ResultOutcome,
    session: SessionOutcome,
    groups: dict[str, ErrorGroupOutcome],
    history: History | None = None,
    fails_gate: bool = False,
    forgiven: bool = False,
) -> Item:
    root_cause, classification = analysis_of(result, groups) if result.errorGroupIds else (None, None)
    location = result.runLocation or session.runLocation
    return Item(result, session, location, root_cause, classification, history, fails_gate, forgiven)


def digest(outcome: Outcome) -> Digest:
    gate = Gate.of(outcome)
    since = run_start(outcome)
    failing = failing_verdicts(gate.fail_on_degraded)
    counts = dict.fromkeys(ORDER, 0)
    # Failures in reading order: one bucket per verdict, session order kept within each.
    buckets: dict[str, list[Item]] = {verdict: [] for verdict in ORDER}
    others: dict[str, tuple[list[ResultOutcome], list[SessionOutcome]]] = {v: ([], []) for v in ORDER}
    for session in outcome.sessions:
        groups = {group.id: group for group in session.errorGroups}
        for result in session.results:
            verdict = result.verdict
            counts[verdict] = counts.get(verdict, 0) + 1
            if verdict not in failing:
                results, sessions = others.get(verdict) or others.setdefault(verdict, ([], []))
                results.append(result)
                sessions.append(session)
                continue
            excused = forgiven(result, gate)
            fails = result_fails(result, gate)
            item = _item(result, session, groups, history(result, since), fails, excused)
            buckets.setdefault(verdict, []).append(item)
    failures = tuple(item for bucket in buckets.values() for item in bucket)
    return Digest(
        outcome=outcome,
        gate=gate,
        counts=Counts(total=sum(counts.values()), **counts),
        failures=failures,
        failing=tuple(item for item in failures if item.fails_gate),
        forgiven=tuple(item for item in failures if item.forgiven),
        quarantined=tuple(item for item in failures if item.excused_by_quarantine),
        others=others,
    )
