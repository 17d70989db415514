"""`run --rerun-failed results.json`: which checks of an earlier run to run again, and the spec for it.

Pure functions: the CLI reads the file and prints; this decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    return RunSpec.model_validate(data)
