"""Where the sticky comment goes: a GitHub pull request's comments or a GitLab merge request's notes.

Everything that differs between the two platforms is data here (URLs, headers, limits, hints, where
a listed comment names its author), so the publisher (`ci/comment.py`) never asks which one it is.
The platform object (`ci/platform.py`) picks the function below.

Facts this follows:
- GitHub REST: POST/GET /repos/{owner}/{repo}/issues/{number}/comments, PATCH
  /repos/{owner}/{repo}/issues/comments/{id}; `Authorization: Bearer`; a body is at most 65,536
  characters; a comment names its author in `user.id`. In Actions the token needs
  `permissions: pull-requests: write`. GET /user names the token's user, but answers an
  installation token (the job's GITHUB_TOKEN) 403 "Resource not accessible by integration"; the
  GraphQL `viewer` (login, databaseId) answers both kinds.
- GitLab REST v4: POST/GET /projects/{id}/merge_requests/{iid}/notes, PUT .../notes/{note_id};
  `PRIVATE-TOKEN` header; a note is at most 1,000,000 characters and names its author in
  `author.id`; GET /user names the token's user (a project access token's bot user too).
  CI_JOB_TOKEN cannot write notes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from runner.metadata.ci import load_github_event

GITHUB_MAX_CHARS = 65_536
GITLAB_MAX_CHARS = 1_000_000
DEFAULT_GITLAB_TOKEN_VARIABLE = "TESTSESSION_GITLAB_TOKEN"
GITHUB_VIEWER_QUERY = "query { viewer { login databaseId } }"


class CommentError(Exception):
    """Why the comment was not posted, in one line (already free of secrets)."""

    def __init__(self, message: str, status: int | None = None, rate_limited: bool = False) -> None:
        super().__init__(message if message.startswith("not posted") else f"not posted: {message}")
        self.status = status
        self.rate_limited = rate_limited


@dataclass(frozen=True)
class Destination:
    platform: str  # GitHub or GitLab, as messages name it
    kind: str  # comment or note
    where: str  # "pull request #12", "merge request !3"
    collection: str  # list and create
    item: str  # update, with {id}
    update_method: str
    headers: dict[str, str]
    max_chars: int
    run_url: str | None
    hints: dict[int, str]  # status -> what to do about it
    identity_url: str  # GET: the token's own user ({"id": ...})
    author_field: str  # the listed comment's author object, which has an "id"
    api_variable: str  # the variable the API address comes from, for "check ..." hints
    list_params: dict[str, str] = field(default_factory=dict)
    skip_field: str | None = None  # a listed item with this field true is never ours (GitLab's system notes)
    identity_graphql: str | None = None  # POST the viewer query here when GET identity_url answers 403
    link: str | None = None  # a comment's web address, with {id}, when the answer has none

    @property
    def host(self) -> str:
        """host[:port] of the API, for messages (never credentials)."""
        parts = urlsplit(self.collection)
        host = parts.hostname or "?"
        return f"{host}:{parts.port}" if parts.port else host

    @property
    def api(self) -> str:
        """scheme://host[:port] of the API, for messages."""
        parts = urlsplit(self.collection)
        return f"{parts.scheme}://{self.host}"

    def unreachable(self) -> str:
        """What to check when the API's host cannot be reached."""
        return (
            f"check that {self.api} is {self.platform}'s API for this job ({self.api_variable}) and that "
            "this runner can reach it (network, proxy settings HTTPS_PROXY/NO_PROXY, firewall)"
        )


def _event(path: str) -> dict[str, Any]:
    try:
        return load_github_event(path)
    except (OSError, ValueError) as exc:
        name = type(exc).__name__
        raise CommentError(f"the GitHub event file GITHUB_EVENT_PATH cannot be read ({name})") from None


def _pull_number(event: dict[str, Any]) -> int | None:
    pull = event.get("pull_request")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    issue = event.get("issue")
    # issue_comment events: on a pull request the issue carries a pull_request link.
    if isinstance(issue, dict) and isinstance(issue.get("number"), int) and issue.get("pull_request"):
        return int(issue["number"])
    return None


def _graphql_url(api: str, environ: Mapping[str, str]) -> str:
    """GITHUB_GRAPHQL_URL as Actions sets it; else beside the REST API (GHES: /api/v3 -> /api/graphql)."""
    given = environ.get("GITHUB_GRAPHQL_URL", "").strip()
    if given:
        return given
    return api[: -len("/v3")] + "/graphql" if api.endswith("/api/v3") else api + "/graphql"


def github_destination(environ: Mapping[str, str]) -> tuple[Destination, str]:
    """The pull request of this run and GITHUB_TOKEN; CommentError saying why not."""
    token = environ.get("GITHUB_TOKEN", "").strip()
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    event_path = environ.get("GITHUB_EVENT_PATH", "").strip()
    if not event_path:
        raise CommentError("not posted: GITHUB_EVENT_PATH is not set, so no pull request is known")
    number = _pull_number(_event(event_path))
    if number is None:
        event = environ.get("GITHUB_EVENT_NAME") or "unknown"
        raise CommentError(f"not posted: this run is not on a pull request (event {event})")
    if not token:
        raise CommentError(
            "not posted: GITHUB_TOKEN is not set (the action passes its github-token input; "
            "in a script step set env: GITHUB_TOKEN: ${{ github.token }})"
        )
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
        raise CommentError("not posted: GITHUB_REPOSITORY is not set to owner/name")
    api = (environ.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    server = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    run_id = environ.get("GITHUB_RUN_ID")
    destination = Destination(
        platform="GitHub",
        kind="comment",
        where=f"pull request #{number}",
        collection=f"{api}/repos/{repository}/issues/{number}/comments",
        item=f"{api}/repos/{repository}/issues/comments/{{id}}",
        update_method="PATCH",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        },
        max_chars=GITHUB_MAX_CHARS,
        run_url=f"{server}/{repository}/actions/runs/{run_id}" if run_id else None,
        hints={
            401: "GITHUB_TOKEN is not valid",
            403: "the token may not write comments: give the job `permissions: pull-requests: write` "
            "(pull requests from forks only get a read-only token)",
            404: "the repository or pull request is not visible to this token",
            422: "GitHub refused the comment body",
        },
        identity_url=f"{api}/user",
        identity_graphql=_graphql_url(api, environ),
        author_field="user",
        api_variable="GITHUB_API_URL",
    )
    return destination, token


def gitlab_destination(environ: Mapping[str, str], token_variable: str) -> tuple[Destination, str]:
    """The merge request of this pipeline and the token in `token_variable`; CommentError saying why not."""
    iid = environ.get("CI_MERGE_REQUEST_IID", "").strip()
    if not iid:
        raise CommentError("not posted: not a merge-request pipeline (CI_MERGE_REQUEST_IID is not set)")
    token = environ.get(token_variable, "").strip()
    if not token:
        raise CommentError(
            f"not posted: {token_variable} is not set (a project access token with the api scope, as a "
            "masked CI/CD variable; the job token cannot write notes)"
        )
    api = environ.get("CI_API_V4_URL", "").strip().rstrip("/")
    project = environ.get("CI_PROJECT_ID", "").strip()
    if not api or not project:
        raise CommentError("not posted: CI_API_V4_URL or CI_PROJECT_ID is not set")
    project_url = environ.get("CI_MERGE_REQUEST_PROJECT_URL") or environ.get("CI_PROJECT_URL") or ""
    project_url = project_url.rstrip("/")
    base = f"{api}/projects/{quote(project, safe='')}/merge_requests/{quote(iid, safe='')}/notes"
    destination = Destination(
        platform="GitLab",
        kind="note",
        where=f"merge request !{iid}",
        collection=base,
        item=f"{base}/{{id}}",
        update_method="PUT",
        headers={"PRIVATE-TOKEN": token},
        max_chars=GITLAB_MAX_CHARS,
        run_url=environ.get("CI_JOB_URL") or None,
        hints={
            401: f"the token in {token_variable} is not valid or has expired",
            403: f"the token in {token_variable} needs the api scope and a role that may comment "
            "(Reporter or higher)",
            404: f"the project or merge request is not visible to the token in {token_variable}",
            422: "GitLab refused the note body",
        },
        identity_url=f"{api}/user",
        author_field="author",
        api_variable="CI_API_V4_URL",
        list_params={"sort": "asc", "order_by": "created_at"},
        skip_field="system",
        link=f"{project_url}/-/merge_requests/{iid}#note_{{id}}" if project_url else None,
    )
    return destination, token


def comment_tokens(environ: Mapping[str, str], gitlab_token_variable: str) -> list[str]:
    """The tokens a comment may use, for the run's Redactor before anything is printed or written."""
    return [value for value in (environ.get("GITHUB_TOKEN"), environ.get(gitlab_token_variable)) if value]
