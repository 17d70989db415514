"""Incident updates, dashboards, the deprecated check update and the request for an analysis."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, field_validator, model_validator

from runner.models.base import ApiModel, RequestModel, empty_list
from runner.models.check_definitions import CheckDefinition, parse_check_definition

# CHECK_LOCATIONS lives with the sessions (a local run needs it without the resources' models).
from runner.models.sessions import CHECK_LOCATIONS as CHECK_LOCATIONS
from runner.models.sessions import UUID_PATTERN

INCIDENT_STATUSES = ("INVESTIGATING", "IDENTIFIED", "MONITORING", "RESOLVED")

RUNTIME_VERSIONS = ("2026.04", "2025.04", "2024.09", "2024.02", "2023.09", "2023.02", "2022.10")
UPDATABLE_CHECK_TYPES = (
    "AGENTIC", "API", "BROWSER", "HEARTBEAT", "ICMP", "MULTI_STEP", "TCP", "PLAYWRIGHT",
    "TRACEROUTE", "URL", "DNS", "SSL", "GRPC",
)  # fmt: skip
MAX_USER_CONTEXT = 256
CHECK_FREQUENCIES = (0, 1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
MAX_CHECK_DESCRIPTION = 510  # production's limit (our document says 500)

Location = Literal[
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1", "eu-west-1",
    "eu-central-1", "eu-west-2", "eu-west-3", "eu-north-1", "eu-south-1", "me-south-1",
    "ap-southeast-1", "ap-northeast-1", "ap-east-1", "ap-southeast-2", "ap-southeast-3",
    "ap-northeast-2", "ap-northeast-3", "ap-south-1", "af-south-1",
]  # fmt: skip


# --- incident updates -------------------------------------------------------------------------


class IncidentUpdateRequest(RequestModel):
    description: str = Field(min_length=1)
    status: Literal["INVESTIGATING", "IDENTIFIED", "MONITORING", "RESOLVED"] | None = None
    publicIncidentUpdateDate: datetime | None = None
    notifySubscribers: bool = False
    id: str | None = None
    created_at: str | None = None


class IncidentUpdate(ApiModel):
    # Production's response schema requires only `description`.
    description: str
    id: str | None = None
    status: str | None = None
    publicIncidentUpdateDate: datetime | None = None
    created_at: str | None = None
    notifySubscribers: bool = False


# --- dashboards -------------------------------------------------------------------------------


def _url_or_empty(value: str | None) -> str | None:
    if value in (None, ""):
        return value
    assert value is not None
    if not value.startswith(("http://", "https://")) or len(value) < 10:
        raise ValueError("must be an http(s) URL, an empty string or null")
    return value


class DashboardKeyRequest(RequestModel):
    """A private dashboard's key as production's request schema has it (DashboardKey)."""

    id: Annotated[str, Field(pattern=UUID_PATTERN)]
    rawKey: str
    maskedKey: str
    created_at: datetime
    updated_at: datetime | None = None


class DashboardRequest(RequestModel):
    header: str = Field(min_length=1)
    customUrl: str | None = None
    customDomain: str | None = None
    logo: str | None = None
    favicon: str | None = None
    link: str | None = None
    description: str | None = None
    width: Literal["FULL", "960PX"] = "FULL"
    refreshRate: Literal[60, 300, 600] = 60
    paginate: bool = True
    paginationRate: Literal[30, 60, 300] = 60
    checksPerPage: int = Field(default=15, ge=1, le=20)
    useTagsAndOperator: bool = False
    hideTags: bool = False
    enableIncidents: bool = False
    expandChecks: bool = False
    tags: list[str] = Field(default_factory=empty_list)
    showHeader: bool = True
    showCheckRunLinks: bool = False
    showGroupNames: bool = True  # production's default
    sortByStatus: bool = False
    customCSS: str | None = None
    isPrivate: bool = False
    showP95: bool = True
    showP99: bool = True
    keys: list[DashboardKeyRequest] = Field(default_factory=empty_list)

    @field_validator("logo", "favicon", "link")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return _url_or_empty(value)

    @field_validator("customDomain")
    @classmethod
    def _check_domain(cls, value: str | None) -> str | None:
        if value and ("/" in value or " " in value or "." not in value):
            raise ValueError("must be a host name such as status.example.com")
        return value


class DashboardKey(ApiModel):
    """A private dashboard's key as production returns it (checkly-go-sdk types.go DashboardKey)."""

    id: str | int | None = None
    maskedKey: str | None = None
    rawKey: str | None = None
    created_at: datetime | None = None


class Dashboard(ApiModel):
    # Production: `id` is a number, `dashboardId` a string (checkly-go-sdk types.go Dashboard).
    id: int | str | None = None
    dashboardId: str | None = None
    header: str = ""
    customUrl: str | None = None
    customDomain: str | None = None
    sortByStatus: bool | None = None
    showGroupNames: bool = True
    keys: list[DashboardKey | str] = Field(default_factory=empty_list)
    created_at: datetime | None = None


# --- deprecated check update ------------------------------------------------------------------


class CheckEnvironmentVariable(RequestModel):
    key: str = Field(min_length=1)
    value: str = ""
    locked: bool = False
    secret: bool = False


def frequency_offset_problem(frequency: int, offset: int, check_type: str | None) -> str | None:
    """The Limits section's frequency-offset rules; None when the pair is allowed."""
    if frequency == 0:
        if check_type is not None and check_type != "API":
            return "frequency 0 (sub-minute) is allowed for API checks only"
        if offset not in (10, 20, 30):
            return "with frequency 0, frequencyOffset must be 10, 20 or 30 (seconds)"
        return None
    limit = math.floor(frequency * 10) if frequency <= 60 else math.ceil(frequency / 60)
    if offset > limit:
        return f"with frequency {frequency}, frequencyOffset must be at most {limit}"
    return None


class IncidentTrigger(RequestModel):
    """Production's triggerIncident object (checkly-go-sdk types.go IncidentTrigger)."""

    serviceId: str = Field(min_length=1)
    severity: Literal["MINOR", "MEDIUM", "MAJOR", "CRITICAL"]
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    notifySubscribers: bool = False


class CheckUpdate(RequestModel):
    name: str | None = Field(default=None, min_length=1)
    activated: bool | None = None
    muted: bool | None = None
    doubleCheck: bool | None = None
    shouldFail: bool | None = None
    locations: list[Location] | None = None
    tags: list[str] | None = None
    alertSettings: dict[str, Any] | None = None
    useGlobalAlertSettings: bool | None = None
    groupId: int | str | None = None
    groupOrder: int | None = Field(default=None, ge=0)
    runtimeId: Literal["2026.04", "2025.04", "2024.09", "2024.02", "2023.09", "2023.02", "2022.10"] | None = (
        None
    )
    alertChannelSubscriptions: list[dict[str, Any]] | None = None
    retryStrategy: dict[str, Any] | None = None
    triggerIncident: IncidentTrigger | None = None
    runParallel: bool | None = None
    description: str | None = Field(default=None, max_length=MAX_CHECK_DESCRIPTION)
    checkType: (
        Literal[
            "AGENTIC", "API", "BROWSER", "HEARTBEAT", "ICMP", "MULTI_STEP", "TCP", "PLAYWRIGHT",
            "TRACEROUTE", "URL", "DNS", "SSL", "GRPC",
        ]
        | None
    ) = None  # fmt: skip
    frequency: Literal[0, 1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440] | None = None
    frequencyOffset: int | None = Field(default=None, ge=1)
    scriptPath: str | None = None
    environmentVariables: list[CheckEnvironmentVariable] | None = None
    setupSnippetId: int | str | None = None
    tearDownSnippetId: int | str | None = None
    localSetupScript: str | None = None
    localTearDownScript: str | None = None
    privateLocations: list[str] | None = None
    dependencies: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _frequency_offset(self) -> "CheckUpdate":
        if self.frequency is not None and self.frequencyOffset is not None:
            problem = frequency_offset_problem(self.frequency, self.frequencyOffset, self.checkType)
            if problem:
                raise ValueError(problem)
        elif self.frequency == 0 and self.checkType not in (None, "API"):
            raise ValueError("frequency 0 (sub-minute) is allowed for API checks only")
        return self


class Check(ApiModel):
    """A check as production answers it (ChecksV1Check): GET /v1/checks, GET /v1/checks/{id} and the
    answer of PUT /v1/checks/{id}. The fields of its definition (request, response times, variables,
    scripts, and whatever else production sends) are kept as extra fields, as sent."""

    id: str
    name: str = ""
    checkType: str | None = None
    activated: bool | None = None
    tags: list[str] = Field(default_factory=empty_list)
    locations: list[str] = Field(default_factory=empty_list)
    frequency: int | None = None
    frequencyOffset: int | None = None

    @field_validator("tags", "locations", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        return [] if value is None else value  # production: `locations` is nullable

    def as_sent(self) -> dict[str, Any]:
        """The check's JSON as the service sent it (defaults the answer left out stay out)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def definition(self) -> CheckDefinition:
        """The typed definition (pydantic.ValidationError when a field has an impossible shape)."""
        return parse_check_definition(self.as_sent())


class CheckList(RootModel[list[Check]]):
    """One page of GET /v1/checks: a bare array (production's ChecksV1CheckList); the total is in the
    Content-Range header (`0-99/250`)."""

    model_config = ConfigDict(defer_build=True)  # built on first use, as ApiModel's (models/base.py)


class AccountVariable(ApiModel):
    """An account's environment variable as production lists it (EnvironmentVariablesV1ReadResponse):
    a secret's value is always null ("Secret values are always returned as null"); a locked one's
    value is there for a key that may read it."""

    key: str
    value: str | None = None
    locked: bool = False
    secret: bool = False

    @field_validator("locked", "secret", mode="before")
    @classmethod
    def _null_false(cls, value: Any) -> Any:
        return False if value is None else value


class VariableList(RootModel[list[AccountVariable]]):
    """One page of GET /v1/variables: a bare array (production's EnvironmentVariablesV1ListResponse)."""

    model_config = ConfigDict(defer_build=True)


class CreateAnalysisRequest(RequestModel):
    """The body of POST /v1/error-groups/{id}/root-cause-analyses (a request model is built when its
    class is made: here, not in models/analyses, which a local run's outcome imports)."""

    userContext: str | None = Field(default=None, max_length=MAX_USER_CONTEXT)
