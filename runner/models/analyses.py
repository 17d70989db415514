"""Error groups and root cause analyses."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
from datetime import datetime

from pydantic import Field

from runner.models.base import ApiModel, empty_list

# The body that asks for an analysis (CreateAnalysisRequest) is in models/resources: only the
# service's client sends it, and a request model is built when its class is made.


class Artifact(ApiModel):
    name: str
    type: str


class Evidence(ApiModel):
    artifacts: list[Artifact] = Field(default_factory=empty_list)
    description: str


class ReferenceLink(ApiModel):
    url: str
    title: str


class Analysis(ApiModel):
    classification: str
    userImpact: str
    rootCause: str
    codeFix: str | None = None
    evidence: list[Evidence] | None = None
    referenceLinks: list[ReferenceLink] | None = None


class RootCauseAnalysis(ApiModel):
    """Pending (202: id and status only) or completed (200: the rest)."""

    id: str
    status: str
    checkType: str | None = None
    provider: str | None = None
    model: str | None = None
    checkId: str | None = None
    errorGroupId: str | None = None
    durationMs: float | None = None
    analysis: Analysis | None = None
    created_at: datetime | None = None

    @property
    def is_completed(self) -> bool:
        return self.status == "COMPLETED"


class UserContextItem(ApiModel):
    """Production's userContext item (checkly-cli packages/cli/src/rest/error-groups.ts)."""

    text: str = ""
    type: str | None = None


class AnalysisSummary(ApiModel):
    """An item of an error group's rootCauseAnalyses, newest first."""

    id: str
    created_at: datetime | None = None
    analysis: Analysis | None = None
    provider: str | None = None
    model: str | None = None
    durationMs: float | None = None
    # Our document: a string; production: a list of {text, type} objects or null. Both are kept.
    userContext: str | list[UserContextItem] | None = None

    @property
    def user_context_text(self) -> str | None:
        """The context as one text, whichever shape the service sent."""
        if self.userContext is None or isinstance(self.userContext, str):
            return self.userContext
        return "\n".join(item.text for item in self.userContext if item.text) or None


class ErrorGroup(ApiModel):
    id: str
    checkId: str | None = None
    errorHash: str
    rawErrorMessage: str | None = None
    cleanedErrorMessage: str = ""
    firstSeen: datetime | None = None
    lastSeen: datetime | None = None
    archivedUntilNextEvent: bool = False
    rootCauseAnalyses: list[AnalysisSummary] = Field(default_factory=empty_list)


class PlaywrightMetadata(ApiModel):
    """Where a Playwright check suite's failure is (production's TestSessionErrorGroupPlaywrightMetadata)."""

    projectName: str = ""
    specId: str | None = None
    testFile: str = ""
    testTitle: str = ""
    suitePath: list[str] = Field(default_factory=empty_list)


class TestSessionErrorGroup(ErrorGroup):
    """A test-session error group: production adds the environments it occurred in and, for Playwright
    check suites, where in the suite (both required there, and nullable)."""

    __test__ = False

    projectId: str | None = None
    environments: list[str] | None = None
    pwtMetadata: list[PlaywrightMetadata] | None = None
    # The emulator's, not production's (whose groups carry no count): failed results in the group over
    # every session it has seen (with --state, across runs). None from a service that does not say.
    occurrences: int | None = None
