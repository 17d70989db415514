"""Test sessions: the trigger body we send and the session the service returns."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from runner.models.base import ApiModel, RequestModel, empty_list

# The locations of production that a check can run from (a checks file's run adds `local`).
CHECK_LOCATIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1", "eu-west-1",
    "eu-central-1", "eu-west-2", "eu-west-3", "eu-north-1", "eu-south-1", "me-south-1",
    "ap-southeast-1", "ap-northeast-1", "ap-east-1", "ap-southeast-2", "ap-southeast-3",
    "ap-northeast-2", "ap-northeast-3", "ap-south-1", "af-south-1",
)  # fmt: skip

SESSION_STATUSES = ("RUNNING", "FAILED", "PASSED", "CANCELLED")
FINAL_SESSION_STATUSES = frozenset({"FAILED", "PASSED", "CANCELLED"})
RESULT_TYPES = ("FINAL", "ATTEMPT", "PENDING")
CHECK_TYPES = (
    "AGENTIC", "API", "BROWSER", "HEARTBEAT", "ICMP", "MULTI_STEP", "TCP",
    "PLAYWRIGHT", "URL", "DNS", "SSL", "GRPC", "TRACEROUTE",
)  # fmt: skip
RETRY_TYPES = ("FIXED", "LINEAR", "EXPONENTIAL", "SINGLE_RETRY")
MAX_ENVIRONMENT_VARIABLES = 50


# Trigger rules of the production service of this API family where our document is silent
# (docs/production-contract.md): it answers 400 to a body that breaks them, so we do too.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
RETRY_ONLY_ON = ("NETWORK_ERROR",)


def _check_id(value: str) -> str:
    if not re.match(UUID_PATTERN, value):  # compiled on first use (re's cache), not at import
        raise ValueError("must be a check id (a uuid such as 0b9a3c4d-1111-4a5b-8c6d-000000000001)")
    return value


CheckId = Annotated[str, AfterValidator(_check_id)]
Tag = Annotated[str, Field(min_length=1)]


class Target(RequestModel):
    matchTags: list[list[Tag]] | None = None
    checkId: list[CheckId] | None = None
    allowDeactivated: bool = False

    def selects(self, check_id: str, tags: Iterable[str], activated: bool) -> bool:
        """Whether this target selects the check: the emulator's trigger and a sharded run's split
        (runner/job/shard.py) both ask here. With tags and ids both given, a check passes both."""
        if not activated and not self.allowDeactivated:
            return False
        carried = set(tags)
        if self.matchTags and not any(all(t in carried for t in group) for group in self.matchTags):
            return False
        return not (self.checkId and check_id not in self.checkId)


class EnvironmentVariable(RequestModel):
    key: str = Field(min_length=1)
    secret: bool = False
    locked: bool = False
    # Required, and may be null; a text value of a variable that is not secret has at least 1
    # character (a secret one may be empty).
    value: str | None

    @field_validator("value")
    @classmethod
    def _value_rule(cls, value: str | None, info: ValidationInfo) -> str | None:
        if not info.data.get("secret", False) and value == "":
            raise ValueError("a variable that is not secret needs a value of at least 1 character, or null")
        return value

    @model_serializer(mode="wrap")
    def _wire(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        data["value"] = self.value  # even when null (to_body leaves nulls out): production requires it
        return data


# Production's SINGLE_RETRY retries once and declares neither field: they are refused, and never sent.
NOT_FOR_SINGLE_RETRY = ("maxRetries", "maxDurationSeconds")


class RetryStrategy(RequestModel):
    type: Literal["FIXED", "LINEAR", "EXPONENTIAL", "SINGLE_RETRY"]
    baseBackoffSeconds: float = Field(default=60, ge=0, allow_inf_nan=False)
    maxRetries: int = Field(default=2, ge=1, le=10)
    maxDurationSeconds: float = Field(default=600, ge=0, le=600, allow_inf_nan=False)
    sameRegion: bool = True
    onlyOn: list[Literal["NETWORK_ERROR"]] | None = None

    @model_validator(mode="after")
    def _single_retry_fields(self) -> "RetryStrategy":
        given = [name for name in NOT_FOR_SINGLE_RETRY if name in self.model_fields_set]
        if self.type == "SINGLE_RETRY" and given:
            raise ValueError(f"SINGLE_RETRY retries once: leave out {' and '.join(given)}")
        return self

    @model_serializer(mode="wrap")
    def _wire(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.type == "SINGLE_RETRY":
            for name in NOT_FOR_SINGLE_RETRY:
                data.pop(name, None)
        return data


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
    # Omitted when unknown; never sent as null or "" (production: at least 1 character, not null).
    environment: str | None = Field(default=None, min_length=1)
    repoUrl: str | None = None
    commitId: str | None = None
    commitOwner: str | None = None
    commitMessage: str | None = None
    branchName: str | None = None
    github: GithubMetadata | None = None

    @field_validator("environment", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        # Runs only for a value that was given: an explicit null is refused, an omitted one is fine.
        if value is None:
            raise ValueError("must be text of at least 1 character, not null (or leave it out)")
        return value


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
    errorGroupIds: list[str] = Field(default_factory=empty_list)
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
    errorGroupIds: list[str] = Field(default_factory=empty_list)
    startedAt: datetime | None = None
    timeElapsed: float | None = None
    stoppedAt: datetime | None = None
    metadata: SessionMetadataOut | None = None
    results: list[SessionResult] = Field(default_factory=empty_list)

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_SESSION_STATUSES
