"""What the GitHub and GitLab front ends share: the failing checks of the digest as flat values, and
the console as they see it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from runner.core.text import sanitize
from runner.job.digest import Digest, Item
from runner.job.outcome import Outcome

MAX_ERROR = 1000  # characters of an error or root cause in an output or annotation


class Log(Protocol):
    """The console's writing side (`ci/console.py` Console), without importing it: the platform
    front ends print through it, and the console itself asks the platform for its syntax."""

    def line(self, text: str) -> None: ...

    def always(self, text: str) -> None: ...

    def section(self, name: str, title: str, collapsed: bool = False) -> AbstractContextManager[None]: ...


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
    known: bool | None = None

    def as_json(self) -> dict[str, str | bool | None]:
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
            "known": self.known,
        }


def flat(text: str | None, limit: int = MAX_ERROR) -> str:
    """One line for an output value or an annotation: the one sanitiser, line breaks joined."""
    return sanitize(text, limit=limit, lines="join")


def _known(item: Item) -> bool | None:
    """The digest's decision (the error group and the baseline weighed): None when it cannot be told."""
    if item.history is None or item.history.novelty == "untold":
        return None
    return item.history.novelty == "known"


def failed_checks(digest: Digest) -> list[FailedCheck]:
    """Every result that fails the gate, in the digest's reading order."""
    return [
        FailedCheck(
            name=item.result.name,
            location=item.location,
            verdict=item.result.verdict,
            status=item.result.status,
            error=flat(item.result.error),
            root_cause=flat(item.root_cause),
            link=item.result.link or "",
            check_id=item.result.checkId or "",
            session=item.session.name,
            test_session_id=item.session.testSessionId or "",
            known=_known(item),
        )
        for item in digest.failing
    ]


def session_ids(outcome: Outcome) -> list[str]:
    return [s.testSessionId for s in outcome.sessions if s.testSessionId]


def session_links(outcome: Outcome) -> list[str]:
    return [s.link for s in outcome.sessions if s.link]
