"""Pydantic models of every resource of the API, shared by the client and the emulator."""

from runner.models.analyses import (
    Analysis,
    AnalysisSummary,
    Artifact,
    CreateAnalysisRequest,
    ErrorGroup,
    Evidence,
    ReferenceLink,
    RootCauseAnalysis,
)
from runner.models.base import ApiModel, RequestModel, describe_validation_error
from runner.models.errors import NO_MATCHING_CHECKS, STILL_RUNNING_MESSAGE, ErrorBody
from runner.models.headers import (
    DEFAULT_ACCOUNT_HEADER,
    PRODUCTION_ACCOUNT_HEADER,
    account_header_problem,
)
from runner.models.resources import (
    Check,
    CheckUpdate,
    Dashboard,
    DashboardRequest,
    IncidentUpdate,
    IncidentUpdateRequest,
    frequency_offset_problem,
)
from runner.models.sessions import (
    FINAL_SESSION_STATUSES,
    EnvironmentVariable,
    GithubMetadata,
    RetryStrategy,
    SessionMetadata,
    SessionResult,
    Target,
    TestSession,
    TriggerRequest,
)

__all__ = [
    "DEFAULT_ACCOUNT_HEADER",
    "FINAL_SESSION_STATUSES",
    "NO_MATCHING_CHECKS",
    "PRODUCTION_ACCOUNT_HEADER",
    "STILL_RUNNING_MESSAGE",
    "Analysis",
    "AnalysisSummary",
    "ApiModel",
    "Artifact",
    "Check",
    "CheckUpdate",
    "CreateAnalysisRequest",
    "Dashboard",
    "DashboardRequest",
    "EnvironmentVariable",
    "ErrorBody",
    "ErrorGroup",
    "Evidence",
    "GithubMetadata",
    "IncidentUpdate",
    "IncidentUpdateRequest",
    "ReferenceLink",
    "RequestModel",
    "RetryStrategy",
    "RootCauseAnalysis",
    "SessionMetadata",
    "SessionResult",
    "Target",
    "TestSession",
    "TriggerRequest",
    "account_header_problem",
    "describe_validation_error",
    "frequency_offset_problem",
]
