"""Test sessions: the trigger body we send and the session the service returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from runner.models.base import ApiModel, RequestModel

SESSION_STATUSES = ("RUNNING", "FAILED", "PASSED", "CANCELLED")
FINAL_SESSION_STATUSES = frozenset({"FAILED", "PASSED", "CANCELLED"})
RESULT_TYPES = ("FINAL", "ATTEMPT", "PENDING")
CHECK_TYPES = (
    "AGENTIC", "API", "BROWSER", "HEARTBEAT", "ICMP", "MULTI_STEP", "TCP",
    "PLAYWRIGHT", "URL", "DNS", "SSL", "GRPC", "TRACEROUTE",
)  # fmt: skip
RETRY_TYPES = ("FIXED", "LINEAR", "EXPONENTIAL", "SINGLE_RETRY")
MAX_ENVIRONMENT_VARIABLES = 50


class Target(RequestModel):
    matchTags: list[list[str]] | None = None
    checkId: list[str] | None = None
    allowDeactivated: bool = False


class EnvironmentVariable(RequestModel):
    key: str = Field(min_length=1)
    value: str | None = None
    secret: bool = False
    locked: bool = False


class RetryStrategy(RequestModel):
    type: Literal["FIXED", "LINEAR", "EXPONENTIAL", "SINGLE_RETRY"] = "FIXED"
    baseBackoffSeconds: float = Field(default=60, ge=0, allow_inf_nan=False)
    maxRetries: int = Field(default=2, ge=1, le=10)
    maxDurationSeconds: float = Field(default=600, ge=0, le=600, allow_inf_nan=False)
    sameRegion: bool = True
    onlyOn: list[str] | None = None


class GithubMetadata(RequestModel):
    reporting: bool
    repository: str | None = None
    sha: str | None = None
    runId: str | None = None
    runAttempt: str | None = None
    workflow: str | None = None
    job: str | None = None
    eventName: str | None = None
    ref: str | None = None
    headRef: str | None = None
    baseRef: str | None = None
    serverUrl: str | None = None


class SessionMetadata(RequestModel):
    environment: str | None = None
    repoUrl: str | None = None
    commitId: str | None = None
    commitOwner: str | None = None
    commitMessage: str | None = None
    branchName: str | None = None
    github: GithubMetadata | None = None


class TriggerRequest(RequestModel):
    name: str = Field(min_length=1)
    runLocation: str = Field(min_length=1)
    target: Target | None = None
    environmentVariables: list[EnvironmentVariable] | None = Field(
        default=None, max_length=MAX_ENVIRONMENT_VARIABLES
    )
    retryStrategy: RetryStrategy | None = None
    refreshCache: bool | None = None
    metadata: SessionMetadata | None = None


class SessionMetadataOut(ApiModel):
    environment: str | None = None
    repoUrl: str | None = None
    commitId: str | None = None
    commitOwner: str | None = None
    commitMessage: str | None = None
    branchName: str | None = None
    github: dict[str, object] | None = None


class SessionResult(ApiModel):
    testSessionResultId: str
    testSessionResultLink: str | None = None
    checkType: str | None = None
    errorGroupIds: list[str] = Field(default_factory=list)
    status: str
    hasErrors: bool = False
    hasFailures: bool = False
    isDegraded: bool = False
    aborted: bool = False
    checkId: str | None = None
    name: str = ""
    runLocation: str | None = None
    resultType: str | None = None
    responseTime: float | None = None
    startedAt: datetime | None = None
    stoppedAt: datetime | None = None


class TestSession(ApiModel):
    __test__ = False

    testSessionId: str
    testSessionLink: str | None = None
    name: str = ""
    status: str
    errorGroupIds: list[str] = Field(default_factory=list)
    startedAt: datetime | None = None
    timeElapsed: float | None = None
    stoppedAt: datetime | None = None
    metadata: SessionMetadataOut | None = None
    results: list[SessionResult] = Field(default_factory=list)

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_SESSION_STATUSES
