"""The target spec as pydantic models: what `testsession run SPEC` reads (field names as in the API)."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import warnings
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runner.core.errors import UsageError
from runner.core.redact import check_secret
from runner.models import (
    EnvironmentVariable,
    RetryStrategy,
    SessionMetadata,
    Target,
    TriggerRequest,
)
from runner.models.base import empty_list
from runner.models.quarantine import QuarantineEntry
from runner.models.sessions import MAX_ENVIRONMENT_VARIABLES

USER_CONTEXT_MAX = 256  # the API's limit on an analysis' userContext
# No CI job runs for a week; a larger (or infinite) wait is a typo, and would overflow timers.
MAX_SECONDS = 7 * 24 * 3600


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)


def _scalar_text(value: Any) -> Any:
    """YAML reads `PORT: 8080` as a number; an environment variable's value is text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


def env_items(value: Any) -> Any:
    """`{KEY: value}` or `{KEY: {value, secret, locked}}` -> the API's list of `{key, value, ...}` items."""
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if isinstance(item, dict):
                items.append({**item, "key": key})
            else:
                items.append({"key": key, "value": item})
        value = items
    if isinstance(value, list):
        value = [
            {**item, "value": _scalar_text(item["value"])}
            if isinstance(item, dict) and "value" in item
            else item
            for item in value
        ]
    return value


class SessionSpec(SpecModel):
    """One test session: the trigger body's own fields."""

    name: str = Field(default="testsession", min_length=1, description="Name of the test session.")
    runLocation: str = Field(
        min_length=1,
        description="Where the checks run: a public region code (e.g. eu-west-1) or a private location slug.",
    )
    target: Target | None = Field(
        default=None,
        description="Which checks run. Without filters, all eligible checks match.",
    )
    environmentVariables: list[EnvironmentVariable] = Field(
        default_factory=empty_list,
        max_length=MAX_ENVIRONMENT_VARIABLES,
        description=(
            "Environment variables for the checks (at most 50): a list of {key, value, secret, locked} "
            "or a mapping KEY: value (or KEY: {value, secret, locked}). Values marked secret are masked "
            "in every output of the runner."
        ),
    )
    retryStrategy: RetryStrategy | None = Field(
        default=None, description="How failed check runs are retried within the session."
    )
    refreshCache: bool | None = Field(
        default=None,
        description="When true, caches are skipped and dependencies are installed from scratch.",
    )
    metadata: SessionMetadata | None = Field(
        default=None,
        description=(
            "Commit metadata. Empty fields are filled from the CI environment, then from the local git "
            "repository; environment is only ever taken from here or --environment."
        ),
    )

    @field_validator("environmentVariables", mode="before")
    @classmethod
    def _accept_mapping(cls, value: Any) -> Any:
        return env_items(value)

    @field_validator("environmentVariables")
    @classmethod
    def _unique_keys(cls, value: list[EnvironmentVariable]) -> list[EnvironmentVariable]:
        seen: set[str] = set()
        duplicates = []
        for item in value:
            if item.key in seen and item.key not in duplicates:
                duplicates.append(item.key)
            seen.add(item.key)
        if duplicates:
            raise ValueError("each key once; given more than once: " + ", ".join(duplicates))
        return value

    @field_validator("environmentVariables")
    @classmethod
    def _maskable_secrets(cls, value: list[EnvironmentVariable]) -> list[EnvironmentVariable]:
        for item in value:
            if item.secret:
                try:
                    check_secret(item.value, f"secret variable {item.key}")
                except UsageError as exc:
                    raise ValueError(str(exc)) from None
        return value

    def to_trigger(self, metadata: SessionMetadata) -> TriggerRequest:
        """The trigger body; `metadata` is the resolved metadata (see runner.metadata.resolve_metadata).

        Made from parts already validated, not validated again (pydantic's `model_construct`): the
        session's fields are TriggerRequest's own models under the same limits, checked when the spec
        was read, and `metadata` is a SessionMetadata. A run that never sends the body (a checks
        file's) so never builds TriggerRequest's validator; the client's `to_body` serializes it as
        it would a validated one."""
        return TriggerRequest.model_construct(
            name=self.name,
            runLocation=self.runLocation,
            target=self.target,
            environmentVariables=list(self.environmentVariables) or None,
            retryStrategy=self.retryStrategy,
            refreshCache=self.refreshCache,
            metadata=metadata,
        )

    def secret_values(self) -> list[str]:
        """Values of the variables marked secret, for the Redactor."""
        return [v.value for v in self.environmentVariables if v.secret and v.value]


class WaitSettings(SpecModel):
    timeoutSeconds: float = Field(
        default=900,
        gt=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        description="How long the runner waits for all sessions to finish before it cancels them (exit 3).",
    )


class RcaSettings(SpecModel):
    enabled: bool = Field(default=True, description="Fetch root cause analyses of the error groups.")
    generate: bool = Field(
        default=True, description="Ask the service to generate an analysis where none exists yet."
    )
    timeoutSeconds: float = Field(
        default=120,
        ge=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        description="How long to wait for pending analyses after the sessions finish.",
    )
    max: int = Field(default=20, ge=0, description="At most this many error groups are analysed per run.")
    context: str | None = Field(
        default=None,
        max_length=USER_CONTEXT_MAX,
        description="userContext sent when an analysis is generated (at most 256 characters).",
    )

    @field_validator("context")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None


# A field named `json` shadows the deprecated BaseModel.json(); the name is the spec's, keep it quiet.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message='Field name "json"', category=UserWarning)

    class ReportSettings(SpecModel):
        junit: str | None = Field(
            default="testsession-reports/junit.xml",
            description="JUnit XML report path; null or an empty string disables it.",
        )
        markdown: str | None = Field(
            default="testsession-reports/summary.md",
            description="Markdown summary path; null or an empty string disables it.",
        )
        json: str | None = Field(  # type: ignore[assignment]
            default="testsession-reports/results.json",
            description="JSON results path (the documented results format); null or '' disables it.",
        )

        @field_validator("junit", "markdown", "json")
        @classmethod
        def _empty_disables(cls, value: str | None) -> str | None:
            return value or None


class GateSettings(SpecModel):
    failOn: Literal["any", "new"] = Field(
        default="any",
        description=(
            "any: every failed check fails the gate (exit 1). new: failed checks that were already "
            "failing before this run (their error was first seen earlier, or they failed in the "
            "baseline too) are forgiven; errors, unfinished checks, timeouts and service errors still fail."
        ),
    )
    failOnDegraded: bool = Field(default=False, description="Degraded checks fail the gate (exit 1).")
    failOnNoMatchingChecks: bool = Field(
        default=True, description="No check matched the target: exit 5 (else 0)."
    )


ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
COMMENT_KEY_PATTERN = r"^[A-Za-z0-9._/@:+=-]+$"
DEFAULT_GITLAB_TOKEN_VARIABLE = "TESTSESSION_GITLAB_TOKEN"


class CommentSettings(SpecModel):
    enabled: bool = Field(
        default=False,
        description="Post the markdown summary as a pull-request comment (GitHub) or merge-request note "
        "(GitLab) at the end of the run, updated in place on the next run. `comment: true` is short for "
        "`comment: {enabled: true}`.",
    )
    key: str | None = Field(
        default=None,
        max_length=200,
        pattern=COMMENT_KEY_PATTERN,
        description="What makes a comment the same one on the next run (letters, digits, . _ / @ : + = -). "
        "Default: the spec's path and the branch, so each spec gets one comment per pull request.",
    )
    gitlabTokenVariable: str = Field(
        default=DEFAULT_GITLAB_TOKEN_VARIABLE,
        pattern=ENV_NAME_PATTERN,
        description="Name of the environment variable holding the GitLab token that writes the note "
        "(a project access token with the api scope; the job token cannot write notes).",
    )


BUILD_URL_PATTERN = r"^https?://[^/?#\s]+([/?#]\S*)?$"
MAX_BUILD_SECONDS = 3600.0  # a build that takes longer to answer is not waited for by a gate


class BuildSettings(SpecModel):
    """The build under test, started before the checks and stopped after (Playwright's webServer)."""

    command: str | None = Field(
        default=None,
        min_length=1,
        description="Shell command that starts the build and keeps running (e.g. `docker compose up`, "
        "`npm start`); run in its own process group, stopped (SIGTERM, then SIGKILL) when the run ends. "
        "Not started when the url already answers. None: only wait for the url.",
    )
    url: str = Field(
        pattern=BUILD_URL_PATTERN,
        description="http(s) URL that answers (status 200-403) once the build is up, e.g. "
        "http://127.0.0.1:8380/health.",
    )
    timeoutSeconds: float = Field(
        default=60,
        gt=0,
        le=MAX_BUILD_SECONDS,
        allow_inf_nan=False,
        description="How long to wait for the url to answer; past it the run ends with exit 4, "
        "naming the url and the command's last lines of output.",
    )
    reuseExisting: bool | None = Field(
        default=None,
        description="Whether a url that already answers before the command was started is taken as "
        "the build (the command is not started). Default: yes, except in CI (CI=true), where it is an "
        "error (exit 2): it may be a build that a killed run left (Playwright's reuseExistingServer).",
    )


SHARD_PATTERN = r"^(auto|[1-9][0-9]*/[1-9][0-9]*)$"


class ShardSettings(SpecModel):
    part: str = Field(
        pattern=SHARD_PATTERN,
        description="This job's part of the matched checks: i/n (e.g. 2/4), or auto: GitLab's "
        "CI_NODE_INDEX/CI_NODE_TOTAL (`parallel: N`). `shard: 2/4` is short for `shard: {part: 2/4}`.",
    )
    durations: str | None = Field(
        default=None,
        description="A results.json of an earlier run (or an emulator state file) whose durations balance "
        "the parts; every part must read the same one. Null: the parts get equal numbers of checks.",
    )

    @field_validator("durations")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None


def _default_settings() -> Any:
    """A settings section the spec leaves out: `{}`, validated into the section's model by RunSpec's
    own validator (`validate_default`). A `default_factory` of the section's class would build that
    class's validator for the default alone: four more validators on every run's start-up."""
    return {}


class RunSpec(SpecModel):
    """A whole run: one or more sessions and the settings of the runner."""

    sessions: list[SessionSpec] = Field(
        default_factory=empty_list, description="The test sessions to trigger, one or more."
    )
    wait: WaitSettings = Field(
        default_factory=_default_settings, validate_default=True, description="Waiting for the sessions."
    )
    rca: RcaSettings = Field(
        default_factory=_default_settings,
        validate_default=True,
        description="Root cause analyses of failures.",
    )
    reports: ReportSettings = Field(
        default_factory=_default_settings, validate_default=True, description="Report files."
    )
    gate: GateSettings = Field(
        default_factory=_default_settings, validate_default=True, description="What fails the run."
    )
    baseline: str | None = Field(
        default=None,
        description=(
            "The results.json of an earlier run (e.g. the last run on the default branch) to compare "
            "with: newly failing, still failing, fixed, slower, missing checks. Missing or unusable: "
            "a warning, and the run goes on without it. Null or an empty string: no baseline."
        ),
    )

    build: BuildSettings | None = Field(
        default=None,
        description="The build under test: {command, url, timeoutSeconds}; started (unless its url "
        "already answers) and awaited before the checks, stopped after.",
    )
    checks: str | None = Field(
        default=None,
        description=(
            "A checks file (YAML or JSON, production's shape) to run against the build on this machine "
            "with the embedded engine, as `run --checks FILE` does; relative to the spec's folder. "
            "Sessions then need no runLocation: their results are at location local."
        ),
    )
    comment: CommentSettings = Field(
        default_factory=_default_settings,
        validate_default=True,
        description="The pull-request comment / merge-request note: true, false or {enabled, key, "
        "gitlabTokenVariable}.",
    )

    shard: ShardSettings | None = Field(
        default=None,
        description="Run one part of the matched checks (a CI matrix of jobs; `testsession merge` joins "
        "their results.json into one report and one gate). Null: every matched check.",
    )

    quarantine: list[QuarantineEntry] = Field(
        default_factory=empty_list,
        description="Checks whose failure does not fail the gate until a day: [{check (its name or id), "
        "owner, reason, until (YYYY-MM-DD, at most 90 days ahead)}]. They run as always; an entry past "
        "its day no longer holds.",
    )

    @field_validator("shard", mode="before")
    @classmethod
    def _shard_part(cls, value: Any) -> Any:
        return {"part": value} if isinstance(value, str) else value

    @field_validator("baseline")
    @classmethod
    def _empty_is_no_baseline(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("comment", mode="before")
    @classmethod
    def _comment_switch(cls, value: Any) -> Any:
        if isinstance(value, (bool, str)):
            return {"enabled": value}
        return value


SESSION_KEYS = tuple(SessionSpec.model_fields)
SETTINGS_KEYS = (
    "wait", "rca", "reports", "gate", "baseline", "build", "comment", "shard", "checks", "quarantine",
)  # fmt: skip
