"""Command-line flags over a spec: flags win, and apply to every session."""

# No `from __future__ import annotations`: Overrides is a NamedTuple made on every run's start-up, and
# typing compiles each of its 23 annotations when they are text (typing.ForwardRef): ~0.5 % of a
# one-check run; real annotations are read as they are.

from typing import Any, NamedTuple

from pydantic import ValidationError

from runner.core.errors import SpecError, UsageError
from runner.spec.model import RunSpec
from runner.spec.problems import validation_problems

# Where a flag lands in the spec, so that a bad flag value is reported under the flag's name.
_FLAGS = {
    "runLocation": "--location",
    "target": "--tag/--check-id",
    "environmentVariables": "--env",
    "name": "--name",
    "metadata": "--environment",
    "wait": "--timeout",
    "failOn": "--fail-on",
    "baseline": "--baseline",
    "comment": "--comment/--gitlab-token-env",
    "build": "--build-command/--build-url/--build-timeout/--build-reuse",
    "shard": "--shard/--shard-durations",
}


class Overrides(NamedTuple):
    """The flags of `run` and `wait` over the spec: a value made on every run's start-up path (a
    NamedTuple's methods are not compiled when its class is made; a dataclass's are)."""

    location: str | None = None
    tags: list[list[str]] | None = None
    check_ids: list[str] | None = None
    env: list[tuple[str, str]] | None = None
    secret_env: list[tuple[str, str]] | None = None  # sent with secret: true, replacing the spec's key
    name: str | None = None
    environment: str | None = None
    timeout: float | None = None
    junit: str | None = None  # "" disables the report
    markdown: str | None = None
    json: str | None = None
    fail_on_degraded: bool | None = None
    fail_on: str | None = None  # "any" or "new"
    baseline: str | None = None  # "" means no baseline
    no_rca: bool = False
    comment: bool | None = None
    gitlab_token_env: str | None = None
    build_command: str | None = None  # "" starts nothing (only waits for the URL)
    build_url: str | None = None
    build_timeout: float | None = None
    build_reuse: bool | None = None  # --build-reuse: build.reuseExisting true
    shard: str | None = None  # "i/n" or "auto"
    shard_durations: str | None = None  # "" means none


def _session(session: dict[str, Any], o: Overrides) -> dict[str, Any]:
    # Request models tell "left out" from null (metadata.environment may be absent, never null):
    # a round trip through model_dump must not turn the one into the other.
    if session.get("metadata") is not None:
        session["metadata"] = {k: v for k, v in session["metadata"].items() if v is not None}
    if o.location is not None:
        session["runLocation"] = o.location
    if o.name is not None:
        session["name"] = o.name
    if o.tags is not None or o.check_ids is not None:
        # A flag target replaces the spec's filters: `--tag smoke` means "the smoke checks".
        previous = session.get("target") or {}
        session["target"] = {
            "matchTags": o.tags,
            "checkId": o.check_ids,
            "allowDeactivated": previous.get("allowDeactivated", False),
        }
    if o.env:
        variables = list(session.get("environmentVariables") or [])
        for key, value in o.env:
            found = next((v for v in variables if v["key"] == key), None)
            if found is not None:  # keeps the spec's secret/locked flags
                found["value"] = value
            else:
                variables.append({"key": key, "value": value})
        session["environmentVariables"] = variables
    if o.secret_env:
        keys = {key for key, _ in o.secret_env}
        variables = [v for v in session.get("environmentVariables") or [] if v["key"] not in keys]
        variables += [{"key": key, "value": value, "secret": True} for key, value in o.secret_env]
        session["environmentVariables"] = variables
    if o.environment is not None:
        session["metadata"] = {**(session.get("metadata") or {}), "environment": o.environment}
    return session


def apply_overrides(spec: RunSpec, overrides: Overrides) -> RunSpec:
    """A new RunSpec with the flags applied; a flag value that breaks a limit raises SpecError."""
    o = overrides
    data = spec.model_dump(exclude_unset=False)
    data["sessions"] = [_session(s, o) for s in data["sessions"]]
    if o.timeout is not None:
        data["wait"]["timeoutSeconds"] = o.timeout
    for kind in ("junit", "markdown", "json"):
        value = getattr(o, kind)
        if value is not None:
            data["reports"][kind] = value or None
    if o.fail_on_degraded is not None:
        data["gate"]["failOnDegraded"] = o.fail_on_degraded
    if o.fail_on is not None:
        data["gate"]["failOn"] = o.fail_on
    if o.baseline is not None:
        data["baseline"] = o.baseline or None
    if o.no_rca:
        data["rca"]["enabled"] = False
    if o.comment is not None:
        data["comment"]["enabled"] = o.comment
    if o.gitlab_token_env is not None:
        data["comment"]["gitlabTokenVariable"] = o.gitlab_token_env
    _build(data, o)
    if o.shard is not None or o.shard_durations is not None:
        shard = dict(data.get("shard") or {})
        if o.shard is not None:
            shard["part"] = o.shard
        if o.shard_durations is not None:
            shard["durations"] = o.shard_durations or None
        data["shard"] = shard
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for loc, message in validation_problems(exc, RunSpec):
            flag = next((_FLAGS[p] for p in loc if isinstance(p, str) and p in _FLAGS), None)
            path = ".".join(str(p) for p in loc if isinstance(p, str))
            problems.append(f"{flag or 'flags'}: {path}: {message}")
        raise SpecError(list(dict.fromkeys(problems))) from None


def _build(data: dict[str, Any], o: Overrides) -> None:
    if o.build_command is None and o.build_url is None and o.build_timeout is None and o.build_reuse is None:
        return
    build = dict(data.get("build") or {})
    if o.build_command is not None:
        build["command"] = o.build_command or None
    if o.build_url is not None:
        build["url"] = o.build_url
    if o.build_timeout is not None:
        build["timeoutSeconds"] = o.build_timeout
    if o.build_reuse is not None:
        build["reuseExisting"] = o.build_reuse
    if not build.get("url"):
        given = (
            "--build-command" if o.build_command else "--build-reuse" if o.build_reuse else "--build-timeout"
        )
        raise UsageError(
            f"{given} needs --build-url URL (or build.url in the spec): the address that answers "
            "once the build is up, e.g. http://127.0.0.1:8080/health"
        )
    data["build"] = build


def default_spec(overrides: Overrides, location: str | None = None) -> RunSpec:
    """The spec of `testsession run --location X [--tag ...]` with no file: defaults plus the flags.

    Without --location it has no sessions: enough for `testsession wait`, which triggers nothing.
    """
    if overrides.location is not None and not overrides.location:
        raise UsageError("--location: must not be empty")
    spec = RunSpec()
    location = overrides.location or location
    if location:
        spec = RunSpec.model_validate({"sessions": [{"runLocation": location}]})
    return apply_overrides(spec, overrides)
