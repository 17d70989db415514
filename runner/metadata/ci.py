"""Commit metadata from the CI system the runner is in (GitHub Actions, GitLab, CircleCI, Jenkins, ...)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from runner.core.ciprovider import AZURE, BITBUCKET, BUILDKITE, CIRCLECI, GITHUB, GITLAB, JENKINS, detect
from runner.core.files import read_regular
from runner.models import GithubMetadata

Log = Callable[[str], None]
Env = Mapping[str, str]

MAX_EVENT_FILE = 20_000_000  # GitHub's event payloads are far smaller; a bigger file is not one
_SHA = r"[0-9a-fA-F]{7,64}"  # compiled where first matched (re's cache): Buildkite's only


class CiInfo:
    """What the CI's environment says of the build. A slots class (made on every run's start-up path;
    a dataclass's methods are compiled when its class is made)."""

    __slots__ = ("github", "provider", "values")

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.values: dict[str, tuple[str, str]] = {}  # field -> (value, where from)
        self.github: GithubMetadata | None = None

    def set(self, name: str, value: str | None, source: str) -> None:
        value = (value or "").strip()
        if value and name not in self.values:
            self.values[name] = (value, source)


def _first(environ: Env, *names: str) -> tuple[str | None, str]:
    """The first variable of `names` that is set and not empty: (value, name)."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value, name
    return None, names[0]


def _branch(value: str | None, *prefixes: str) -> str | None:
    """refs/heads/main -> main; tags and pull-request refs are not branches."""
    if not value:
        return None
    for prefix in ("refs/heads/", *prefixes):
        if value.startswith(prefix):
            return value[len(prefix) :]
    return None if value.startswith("refs/") else value


def _person(value: str | None) -> str | None:
    """`Jane Doe <jane@example.com>` -> `Jane Doe` (the address stays out of the metadata)."""
    if not value:
        return None
    return value.split("<", 1)[0].strip() or None


def _set_all(info: CiInfo, environ: Env, spec: dict[str, tuple[str, ...]]) -> None:
    for name, variables in spec.items():
        value, source = _first(environ, *variables)
        if name == "branchName":
            value = _branch(value, "origin/")
        elif name == "commitOwner":
            value = _person(value)
        info.set(name, value, source)


def load_github_event(path: str) -> dict[str, Any]:
    """The GitHub event payload at `path` ({} when it is not a JSON object), read with a size cap.
    OSError or ValueError (too large, not JSON) when it cannot be read; the caller says so."""
    # Read only when it is a regular file: a FIFO or a device named by the variable would hold the
    # run before anything was triggered.
    data = read_regular(path, MAX_EVENT_FILE)
    if len(data) > MAX_EVENT_FILE:
        raise ValueError("too large")
    event = json.loads(data)
    return event if isinstance(event, dict) else {}


def _read_event(path: str, log: Log) -> dict[str, Any]:
    try:
        return load_github_event(path)
    except (OSError, ValueError) as exc:
        log(f"metadata: commitId: GitHub event file GITHUB_EVENT_PATH not read ({type(exc).__name__})")
        return {}


def _dig(data: Any, *keys: str) -> str | None:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, str) else None


def _github(environ: Env, log: Log) -> CiInfo:
    info = CiInfo(GITHUB)
    event_path = environ.get("GITHUB_EVENT_PATH")
    event = _read_event(event_path, log) if event_path else {}
    # On pull requests GITHUB_SHA is a merge commit nobody pushed; the head sha is the PR's commit.
    head_sha = _dig(event, "pull_request", "head", "sha")
    info.set("commitId", head_sha, "GITHUB_EVENT_PATH pull_request.head.sha")
    info.set("commitId", environ.get("GITHUB_SHA"), "GITHUB_SHA")
    info.set("branchName", environ.get("GITHUB_HEAD_REF"), "GITHUB_HEAD_REF")
    if environ.get("GITHUB_REF_TYPE") != "tag" and not environ.get("GITHUB_REF", "").startswith("refs/tags/"):
        info.set("branchName", environ.get("GITHUB_REF_NAME"), "GITHUB_REF_NAME")
    info.set("commitOwner", environ.get("GITHUB_ACTOR"), "GITHUB_ACTOR")
    info.set("commitMessage", _dig(event, "head_commit", "message"), "GITHUB_EVENT_PATH head_commit.message")
    server = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    repository = environ.get("GITHUB_REPOSITORY")
    if repository:
        info.set("repoUrl", f"{server}/{repository}", "GITHUB_SERVER_URL/GITHUB_REPOSITORY")

    def var(name: str) -> str | None:
        return environ.get(name) or None

    info.github = GithubMetadata(
        reporting=True,
        repository=var("GITHUB_REPOSITORY"),
        sha=head_sha or var("GITHUB_SHA"),
        runId=var("GITHUB_RUN_ID"),
        runAttempt=var("GITHUB_RUN_ATTEMPT"),
        workflow=var("GITHUB_WORKFLOW"),
        job=var("GITHUB_JOB"),
        eventName=var("GITHUB_EVENT_NAME"),
        ref=var("GITHUB_REF"),
        headRef=var("GITHUB_HEAD_REF"),
        baseRef=var("GITHUB_BASE_REF"),
        serverUrl=var("GITHUB_SERVER_URL"),
    )
    return info


def _gitlab(environ: Env) -> CiInfo:
    info = CiInfo(GITLAB)
    branch = ["CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_BRANCH"]
    if not environ.get("CI_COMMIT_TAG"):  # in a tag pipeline the ref name is the tag
        branch.append("CI_COMMIT_REF_NAME")
    _set_all(
        info,
        environ,
        {
            "commitId": ("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", "CI_COMMIT_SHA"),
            "branchName": tuple(branch),
            "commitOwner": ("CI_COMMIT_AUTHOR",),
            "commitMessage": ("CI_COMMIT_TITLE", "CI_COMMIT_MESSAGE"),
            "repoUrl": ("CI_PROJECT_URL",),
        },
    )
    return info


# Providers whose variables map directly: field -> variables, first set one wins.
_SIMPLE: dict[str, dict[str, tuple[str, ...]]] = {
    CIRCLECI: {
        "commitId": ("CIRCLE_SHA1",),
        "branchName": ("CIRCLE_BRANCH",),
        "commitOwner": ("CIRCLE_USERNAME",),
        "repoUrl": ("CIRCLE_REPOSITORY_URL",),
    },
    BUILDKITE: {
        "commitId": ("BUILDKITE_COMMIT",),
        "branchName": ("BUILDKITE_BRANCH",),
        "commitOwner": ("BUILDKITE_BUILD_AUTHOR",),
        "commitMessage": ("BUILDKITE_MESSAGE",),
        "repoUrl": ("BUILDKITE_REPO",),
    },
    AZURE: {
        "commitId": ("SYSTEM_PULLREQUEST_SOURCECOMMITID", "BUILD_SOURCEVERSION"),
        "branchName": ("SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCH", "BUILD_SOURCEBRANCHNAME"),
        "commitOwner": ("BUILD_REQUESTEDFOR",),
        "commitMessage": ("BUILD_SOURCEVERSIONMESSAGE",),
        "repoUrl": ("BUILD_REPOSITORY_URI",),
    },
    BITBUCKET: {
        "commitId": ("BITBUCKET_COMMIT",),
        "branchName": ("BITBUCKET_BRANCH",),
        "repoUrl": ("BITBUCKET_GIT_HTTP_ORIGIN",),
    },
    JENKINS: {
        "commitId": ("GIT_COMMIT",),
        "branchName": ("CHANGE_BRANCH", "GIT_LOCAL_BRANCH", "GIT_BRANCH", "BRANCH_NAME"),
        "commitOwner": ("GIT_AUTHOR_NAME", "CHANGE_AUTHOR"),
        "repoUrl": ("GIT_URL",),
    },
}


def from_ci(environ: Env, log: Log) -> CiInfo | None:
    provider = detect(environ)
    if provider is None:
        return None
    if provider == GITHUB:
        info = _github(environ, log)
    elif provider == GITLAB:
        info = _gitlab(environ)
    else:
        info = CiInfo(provider)
        _set_all(info, environ, _SIMPLE[provider])
    commit = info.values.get("commitId")
    if commit and not re.fullmatch(_SHA, commit[0]):  # Buildkite says HEAD when it has no sha yet
        log(f"metadata: commitId: {commit[1]} is not a commit sha; using git")
        del info.values["commitId"]
    return info
