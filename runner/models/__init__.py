"""Pydantic models of every resource of the API, shared by the client and the emulator.

The names below are loaded on first use (PEP 562): importing one module of the package (a run's
`runner.models.sessions`) does not create the ~100 model classes of the others (resources, check
definitions, operations), which a one-check local run never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.core.lazy import lazy_names

if TYPE_CHECKING:
    from runner.models.analyses import (
        Analysis,
        AnalysisSummary,
        Artifact,
        ErrorGroup,
        Evidence,
        PlaywrightMetadata,
        ReferenceLink,
        RootCauseAnalysis,
        TestSessionErrorGroup,
    )
    from runner.models.base import ApiModel, RequestModel, describe_validation_error
    from runner.models.errors import NO_MATCHING_CHECKS, STILL_RUNNING_MESSAGE, ErrorBody
    from runner.models.headers import (
        DEFAULT_ACCOUNT_HEADER,
        PRODUCTION_ACCOUNT_HEADER,
        account_header_problem,
    )
    from runner.models.resources import (
        AccountVariable,
        Check,
        CheckList,
        CheckUpdate,
        CreateAnalysisRequest,
        Dashboard,
        DashboardKeyRequest,
        DashboardRequest,
        IncidentUpdate,
        IncidentUpdateRequest,
        VariableList,
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

_HOME = {
    "Analysis": "analyses",
    "AnalysisSummary": "analyses",
    "Artifact": "analyses",
    "CreateAnalysisRequest": "resources",
    "ErrorGroup": "analyses",
    "Evidence": "analyses",
    "PlaywrightMetadata": "analyses",
    "ReferenceLink": "analyses",
    "RootCauseAnalysis": "analyses",
    "TestSessionErrorGroup": "analyses",
    "ApiModel": "base",
    "RequestModel": "base",
    "describe_validation_error": "base",
    "NO_MATCHING_CHECKS": "errors",
    "STILL_RUNNING_MESSAGE": "errors",
    "ErrorBody": "errors",
    "DEFAULT_ACCOUNT_HEADER": "headers",
    "PRODUCTION_ACCOUNT_HEADER": "headers",
    "account_header_problem": "headers",
    "AccountVariable": "resources",
    "Check": "resources",
    "CheckList": "resources",
    "CheckUpdate": "resources",
    "Dashboard": "resources",
    "DashboardKeyRequest": "resources",
    "DashboardRequest": "resources",
    "IncidentUpdate": "resources",
    "IncidentUpdateRequest": "resources",
    "VariableList": "resources",
    "frequency_offset_problem": "resources",
    "FINAL_SESSION_STATUSES": "sessions",
    "EnvironmentVariable": "sessions",
    "GithubMetadata": "sessions",
    "RetryStrategy": "sessions",
    "SessionMetadata": "sessions",
    "SessionResult": "sessions",
    "Target": "sessions",
    "TestSession": "sessions",
    "TriggerRequest": "sessions",
}


__getattr__ = lazy_names(__name__, _HOME)


__all__ = [
    "DEFAULT_ACCOUNT_HEADER",
    "FINAL_SESSION_STATUSES",
    "NO_MATCHING_CHECKS",
    "PRODUCTION_ACCOUNT_HEADER",
    "STILL_RUNNING_MESSAGE",
    "AccountVariable",
    "Analysis",
    "AnalysisSummary",
    "ApiModel",
    "Artifact",
    "Check",
    "CheckList",
    "CheckUpdate",
    "CreateAnalysisRequest",
    "Dashboard",
    "DashboardKeyRequest",
    "DashboardRequest",
    "EnvironmentVariable",
    "ErrorBody",
    "ErrorGroup",
    "Evidence",
    "GithubMetadata",
    "IncidentUpdate",
    "IncidentUpdateRequest",
    "PlaywrightMetadata",
    "ReferenceLink",
    "RequestModel",
    "RetryStrategy",
    "RootCauseAnalysis",
    "SessionMetadata",
    "SessionResult",
    "Target",
    "TestSession",
    "TestSessionErrorGroup",
    "TriggerRequest",
    "VariableList",
    "account_header_problem",
    "describe_validation_error",
    "frequency_offset_problem",
]
