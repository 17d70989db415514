"""`run --rerun-failed results.json`: which checks of an earlier run to run again, and the spec for it.

Pure functions: the CLI reads the file and prints; this decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.words import counted, plural
from runner.job.outcome import Outcome, ResultOutcome
from runner.job.policy import failing_verdict
from runner.spec import RunSpec, SessionSpec


@dataclass
class RerunSelection:
    """Check ids to run again, per location, in the order of the earlier run's results."""

    by_location: dict[str, list[str]] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)  # "name [location]" of each check selected
    without_id: int = 0  # failing results that name no check id, so cannot be targeted

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.by_location.values())


def needs_rerun(outcome: Outcome, result: ResultOutcome) -> bool:
    """Failed, errored, cancelled or did not finish; degraded only when that run failed on it (the
    policy's rule before anything is forgiven: a known failure is rerun too)."""
    return failing_verdict(result, outcome.failOnDegraded)


def select_rerun(outcome: Outcome) -> RerunSelection:
    selection = RerunSelection()
    for session in outcome.sessions:
        for result in session.results:
            if not needs_rerun(outcome, result):
                continue
            if not result.checkId:
                selection.without_id += 1
                continue
            location = result.runLocation or session.runLocation
            ids = selection.by_location.setdefault(location, [])
            if result.checkId not in ids:
                ids.append(result.checkId)
                selection.labels.append(f"{result.name} [{location}]")
    return selection


def cannot_rerun(outcome: Outcome) -> str | None:
    """Why a rerun of only the failed checks of `outcome` could pass a gate by mistake, or None.

    A rerun clears what it runs again and nothing else: a session of that run that did not pass yet
    has no check to run again (the service could not be used, nothing matched, a signal before any
    result, failures without a check id) was never seen to pass, and a rerun would leave it out.
    """
    if outcome.verdict == "detached":
        return "that run was only triggered (--detach): nothing in it was judged"
    for session in outcome.sessions:
        rerunnable = any(needs_rerun(outcome, r) and r.checkId for r in session.results)
        if session.exitCode != 0 and not rerunnable:
            why = f": {session.problem.splitlines()[0][:200]}" if session.problem else ""
            return (
                f"{session.name} ({session.runLocation}) ended with exit code {session.exitCode}{why}; "
                "it has no failed check to run again"
            )
    without = sum(1 for r in outcome.all_results() if needs_rerun(outcome, r) and not r.checkId)
    if without:
        return (
            f"{counted(without, 'failing result')} {plural(without, 'names', 'name')} no check id, "
            f"so a rerun cannot target {plural(without, 'it', 'them')}"
        )
    if outcome.exitCode != 0 and not outcome.sessions:
        return f"that run ended with exit code {outcome.exitCode} before any session"
    return None


def rerun_spec(spec: RunSpec, selection: RerunSelection) -> RunSpec:
    """One session per location, targeting exactly the selected check ids there.

    Everything else of a session (name, variables, retries, metadata) comes from the spec's session
    for that location, else from its first session, so the flags and spec settings still apply.
    """
    sessions = []
    for location, ids in selection.by_location.items():
        base = next((s for s in spec.sessions if s.runLocation == location), None)
        if base is None:
            base = spec.sessions[0] if spec.sessions else SessionSpec(runLocation=location)
        data = base.model_dump(exclude_unset=True)
        previous = data.get("target") or {}
        data["runLocation"] = location
        data["target"] = {"checkId": ids, "allowDeactivated": previous.get("allowDeactivated", False)}
        sessions.append(data)
    data = spec.model_dump(exclude_unset=True)
    data["sessions"] = sessions
    # The checks named are the ones that failed: when none of them matches any more (deleted,
    # deactivated), nothing that failed was run again, and that is never a pass.
    data["gate"] = {**data.get("gate", {}), "failOnNoMatchingChecks": True}
    return RunSpec.model_validate(data)
