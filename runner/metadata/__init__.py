"""Commit metadata of a test session: the spec's own, else the CI environment's, else the local git's.

`resolve_metadata` never fails a run: whatever cannot be found stays empty, and the reason goes to
`log` as `metadata: <field>: <why>` (shown under --verbose).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from runner.core.redact import strip_url_credentials
from runner.metadata.ci import from_ci
from runner.metadata.git import from_git
from runner.models import GithubMetadata, SessionMetadata

COMMIT_FIELDS = ("commitId", "branchName", "commitOwner", "commitMessage", "repoUrl")
# Beyond these, a value is a mistake (or an attack on whoever renders it), not metadata.
MAX_LENGTHS = {"commitId": 64, "branchName": 255, "commitOwner": 255, "commitMessage": 512, "repoUrl": 1024}
ELLIPSIS = "…"

__all__ = ["COMMIT_FIELDS", "resolve_metadata"]


def _clean(name: str, value: str, secrets: Collection[str]) -> str:
    if name == "commitMessage":
        lines = value.strip().splitlines()
        value = lines[0].strip() if lines else ""
    else:
        value = " ".join(value.split())  # no newlines or tabs in one-line fields
    if name == "repoUrl":
        value = strip_url_credentials(value, secrets) or ""
        if any(secret in value for secret in secrets):
            return ""  # a secret elsewhere in the URL (its path, inside a value): no URL at all
    limit = MAX_LENGTHS[name]
    if len(value) > limit:
        value = value[: limit - 1] + ELLIPSIS if name == "commitMessage" else value[:limit]
    return value


def _github(own: GithubMetadata | None, found: GithubMetadata | None) -> GithubMetadata | None:
    """The spec's github fields win; CI fills the rest."""
    if own is None or found is None:
        return own or found
    merged = found.model_dump()
    merged.update(own.model_dump(exclude_unset=True))
    return GithubMetadata.model_validate(merged)


def resolve_metadata(
    spec_metadata: SessionMetadata | None,
    environ: Mapping[str, str],
    cwd: str | Path,
    log: Callable[[str], None],
    secrets: Collection[str] = (),
) -> SessionMetadata:
    """The spec's metadata with empty commit fields filled from CI, then git; environment untouched.

    `secrets`: the run's secret values (the Redactor's); metadata goes to the service unmasked, so a
    repoUrl query parameter holding one is dropped, and a repoUrl still holding one is left out."""
    values: dict[str, Any] = (
        spec_metadata.model_dump(exclude={"github"}, exclude_none=True) if spec_metadata else {}
    )
    github = spec_metadata.github if spec_metadata else None
    try:
        ci = from_ci(environ, log)
        if ci is not None:
            for name in COMMIT_FIELDS:
                if not values.get(name) and name in ci.values:
                    values[name], source = ci.values[name]
                    log(f"metadata: {name}: from {ci.provider} ({source})")
            github = _github(github, ci.github)
        missing = [name for name in COMMIT_FIELDS if not values.get(name)]
        if missing:
            for name, found in from_git(cwd, missing, log).items():
                values[name] = found
                log(f"metadata: {name}: from git")
    except Exception as exc:  # metadata is a nicety: a surprise here must never fail the run
        log(f"metadata: unexpected {type(exc).__name__}; commit fields left as found")
    for name in COMMIT_FIELDS:
        value = values.get(name)
        values[name] = (_clean(name, value, secrets) or None) if isinstance(value, str) else None
        if name == "repoUrl" and isinstance(value, str) and value.strip() and not values[name]:
            log("metadata: repoUrl: left out, it holds a secret value of this run")
    values["github"] = github
    # Every value is the spec's (validated with it), a cleaned text of at most MAX_LENGTHS, None, or
    # a GithubMetadata: assembled, not validated again (a checks file's run never sends it, and so
    # never builds SessionMetadata's validator).
    return SessionMetadata.model_construct(**values)
