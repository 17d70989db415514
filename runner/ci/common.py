"""What the GitHub and GitLab publishers share: which results fail the gate, and their root causes."""

from __future__ import annotations

from dataclasses import dataclass

from runner.job.outcome import Outcome, ResultOutcome, SessionOutcome
from runner.job.verdicts import FAILING_VERDICTS
from runner.reports.text import clean

MAX_ERROR = 1000  # characters of an error or root cause in an output or annotation


@dataclass(frozen=True)
class FailedCheck:
    name: str
    location: str
    verdict: str
    status: str
    error: str
    root_cause: str
    link: str
    check_id: str
    session: str
    test_session_id: str

    def as_json(self) -> dict[str, str]:
        return {
            "name": self.name,
            "location": self.location,
            "verdict": self.verdict,
            "status": self.status,
            "error": self.error,
            "rootCause": self.root_cause,
            "link": self.link,
            "checkId": self.check_id,
            "session": self.session,
            "testSessionId": self.test_session_id,
        }


def flat(text: str | None, limit: int = MAX_ERROR) -> str:
    """One line: escape codes and illegal characters removed, whitespace runs (newlines too) collapsed."""
    line = " ".join(clean(text, limit * 2).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def fails_gate(outcome: Outcome, result: ResultOutcome) -> bool:
    return result.verdict in FAILING_VERDICTS or (result.verdict == "degraded" and outcome.failOnDegraded)


def root_cause(session: SessionOutcome, result: ResultOutcome) -> str:
    """The root cause of the result's first error group that has a completed analysis, or ''."""
    groups = {group.id: group for group in session.errorGroups}
    for group_id in result.errorGroupIds:
        group = groups.get(group_id)
        analysis = group.analysis if group else None
        if analysis and analysis.state == "completed" and analysis.analysis:
            return flat(analysis.analysis.rootCause)
    return ""


def failed_checks(outcome: Outcome) -> list[FailedCheck]:
    """Every result that fails the gate, in report order (sessions, then results)."""
    failed = []
    for session in outcome.sessions:
        for result in session.results:
            if not fails_gate(outcome, result):
                continue
            failed.append(
                FailedCheck(
                    name=result.name,
                    location=result.runLocation or session.runLocation,
                    verdict=result.verdict,
                    status=result.status,
                    error=flat(result.error),
                    root_cause=root_cause(session, result),
                    link=result.link or "",
                    check_id=result.checkId or "",
                    session=session.name,
                    test_session_id=session.testSessionId or "",
                )
            )
    return failed


def session_ids(outcome: Outcome) -> list[str]:
    return [s.testSessionId for s in outcome.sessions if s.testSessionId]


def session_links(outcome: Outcome) -> list[str]:
    return [s.link for s in outcome.sessions if s.link]
