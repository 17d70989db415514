"""The summary where reviewers look: one sticky pull-request comment (GitHub) or merge-request note (GitLab).

A hidden marker (`<!-- testsession-runner:comment key=KEY -->`) at the top of the body finds the comment
of an earlier run, which is then updated in place; one comment per key (spec and branch).

Facts this follows:
- GitHub REST: POST/GET /repos/{owner}/{repo}/issues/{number}/comments, PATCH
  /repos/{owner}/{repo}/issues/comments/{id}; `Authorization: Bearer`; a body is at most 65,536
  characters. In Actions the token needs `permissions: pull-requests: write`.
- GitLab REST v4: POST/GET /projects/{id}/merge_requests/{iid}/notes, PUT .../notes/{note_id};
  `PRIVATE-TOKEN` header; a note is at most 1,000,000 characters. CI_JOB_TOKEN cannot write notes.

Nothing here changes a run's exit code: every problem becomes one line (CommentError), the token is
added to the run's Redactor before the first request and never printed.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import requests

from runner.ci.common import flat
from runner.client.retry import parse_retry_after
from runner.core.redact import Redactor
from runner.job.events import Event, Finished
from runner.job.outcome import Outcome
from runner.metadata.ci import load_github_event
from runner.reports.markdown import render_markdown, safe_url

if TYPE_CHECKING:
    from runner.ci.console import Console

MARKER = "<!-- testsession-runner:comment key={key} -->"
GITHUB_MAX_CHARS = 65_536
GITLAB_MAX_CHARS = 1_000_000
DEFAULT_GITLAB_TOKEN_VARIABLE = "TESTSESSION_GITLAB_TOKEN"
DEFAULT_SPEC_LABEL = "testsession.yml"
PER_PAGE = 100
MAX_PAGES = 20  # 2,000 comments: an older marker beyond that is not looked for
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a page of 100 comments of 65,536 characters fits
TIMEOUT = (5.0, 20.0)  # connect, read
MAX_RETRIES = 3
RETRY_AFTER_MAX = 30.0
MAX_SECONDS = 120.0  # the whole comment (list pages, retries, update): no retry starts after this
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DID_NOTHING_STATUSES = frozenset({429, 503})  # the only ones after which a create is sent again
MAX_KEY = 200
_KEY_CHARS = re.compile(r"[^A-Za-z0-9._/@:+=-]")

Sleep = Callable[[float], None]
SLEEP: Sleep = time.sleep  # tests replace it to see the waits without waiting


class CommentError(Exception):
    """Why the comment was not posted, in one line (already free of secrets)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message if message.startswith("not posted") else f"not posted: {message}")
        self.status = status


@dataclass(frozen=True)
class Destination:
    platform: str  # GitHub or GitLab
    where: str  # "pull request #12", "merge request !3"
    collection: str  # list and create
    item: str  # update, with {id}
    update_method: str
    headers: dict[str, str]
    max_chars: int
    run_url: str | None
    hints: dict[int, str]
    link: str | None = None  # a comment's web address, with {id}, when the answer has none


@dataclass(frozen=True)
class Posted:
    action: str  # created or updated
    destination: Destination
    comment_id: str
    url: str | None
    cut: bool

    def line(self) -> str:
        at = f": {self.url}" if self.url else f" (id {self.comment_id})"
        cut = f"; cut to {self.destination.max_chars:,} characters" if self.cut else ""
        kind = "note" if self.destination.platform == "GitLab" else "comment"
        return f"comment: {self.action} the {kind} on {self.destination.where}{at}{cut}"


def comment_key(spec_label: str | None, environ: Mapping[str, str]) -> str:
    """`<spec path>@<branch>`, with only characters that cannot end the HTML comment."""
    label = (spec_label or DEFAULT_SPEC_LABEL).replace(os.sep, "/")
    label = os.path.normpath(label).replace(os.sep, "/").removeprefix("./")
    ref = (
        environ.get("GITHUB_HEAD_REF")
        or environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME")
        or environ.get("GITHUB_REF_NAME")
        or environ.get("CI_COMMIT_REF_NAME")
        or "local"
    )
    return clean_key(f"{label}@{ref}")


def clean_key(key: str) -> str:
    cleaned = _KEY_CHARS.sub("_", key.strip())
    return re.sub("-{2,}", "-", cleaned)[:MAX_KEY] or "default"


def marker(key: str) -> str:
    return MARKER.format(key=clean_key(key))


# --- where to post ------------------------------------------------------------------------------


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


def _github(environ: Mapping[str, str]) -> tuple[Destination, str]:
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
    )
    return destination, token


def _gitlab(environ: Mapping[str, str], token_variable: str) -> tuple[Destination, str]:
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
        link=f"{project_url}/-/merge_requests/{iid}#note_{{id}}" if project_url else None,
    )
    return destination, token


def destination_for(environ: Mapping[str, str], gitlab_token_variable: str) -> tuple[Destination, str]:
    """Where the comment goes and the token; CommentError saying why not."""
    if environ.get("GITHUB_ACTIONS") == "true":
        return _github(environ)
    if environ.get("GITLAB_CI") == "true":
        return _gitlab(environ, gitlab_token_variable)
    raise CommentError("not posted: not running in GitHub Actions or GitLab CI")


# --- the body -----------------------------------------------------------------------------------


def render_body(outcome: Outcome, key: str, destination: Destination) -> tuple[str, bool]:
    """The comment's text within the platform's limit, and whether the summary had to be cut."""
    head = marker(key) + "\n"
    run_url = safe_url(destination.run_url)
    footer = "\n\n<sub>Posted by testsession-runner; updated in place on the next run"
    footer += f" · [job log and reports]({run_url})</sub>\n" if run_url else ".</sub>\n"
    summary = render_markdown(outcome).rstrip()
    if len(head) + len(summary) + len(footer) <= destination.max_chars:
        return head + summary + footer, False
    where = f"in the [job's reports]({run_url})" if run_url else "in the job's reports"
    note = (
        f"\n\n> **Cut to fit {destination.platform}'s limit of {destination.max_chars:,} characters:** "
        f"the full summary (summary.md, results.json, junit.xml) is {where}."
    )
    room = max(0, destination.max_chars - len(head) - len(footer) - len(note))
    return head + _fit(outcome, room).rstrip() + note + footer, True


def _fit(outcome: Outcome, room: int) -> str:
    """The longest summary of at most `room` characters the renderer's byte budget gives, in a few tries.

    A summary of `room` UTF-8 bytes always fits (bytes are never fewer than characters); with
    non-ASCII text a larger byte budget may still fit, so it is searched for (bounded: 8 renders).
    """
    best = render_markdown(outcome, max_bytes=room)
    low, high = room, room * 4
    for _ in range(8):
        if high - low < max(1024, room // 100):
            break
        middle = (low + high) // 2
        text = render_markdown(outcome, max_bytes=middle)
        if len(text) <= room:
            best, low = text, middle
        else:
            high = middle
    return best


# --- HTTP ---------------------------------------------------------------------------------------


class _Api:
    def __init__(self, destination: Destination, redact: Redactor, sleep: Sleep) -> None:
        self.destination = destination
        self.redact = redact
        self.sleep = sleep
        self.session = requests.Session()
        self.session.headers.update(destination.headers)
        self.session.headers["User-Agent"] = "testsession-runner"
        self.deadline = time.monotonic() + MAX_SECONDS

    def close(self) -> None:
        self.session.close()

    def call(self, method: str, url: str, **kwargs: Any) -> Any:
        """The JSON answer; retries 429/5xx (a create only on 429/503) honouring Retry-After."""
        creates = method == "POST"
        for attempt in range(MAX_RETRIES + 1):
            if time.monotonic() > self.deadline:
                raise CommentError(self._where(method, url) + f": gave up after {MAX_SECONDS:g} s")
            last = attempt == MAX_RETRIES
            try:
                response = self.session.request(method, url, timeout=TIMEOUT, stream=True, **kwargs)
            except requests.RequestException as exc:
                # A create that may have reached the platform is not sent again: no duplicate comment.
                if creates or last:
                    raise CommentError(self._where(method, url) + f": {type(exc).__name__}") from None
                self._pause(2.0**attempt)
                continue
            with response:
                body = self._read(response, method, url)
                status = response.status_code
                if status < 300:
                    return _json(body)
                retry = status in (DID_NOTHING_STATUSES if creates else RETRY_STATUSES)
                # GitHub's secondary rate limit answers 403 with Retry-After.
                retry = retry or (status == 403 and "Retry-After" in response.headers)
                if not retry or last:
                    raise CommentError(self._refused(method, url, response, body), status)
                delay = parse_retry_after(response.headers.get("Retry-After"))
                self._pause(delay if delay is not None else 2.0**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause(self, seconds: float) -> None:
        self.sleep(max(0.0, min(seconds, RETRY_AFTER_MAX, self.deadline - time.monotonic())))

    def _read(self, response: requests.Response, method: str, url: str) -> bytes:
        chunks = []
        size = 0
        try:
            for chunk in response.iter_content(64 * 1024):
                size += len(chunk)
                if time.monotonic() > self.deadline:  # a slow drip stays bounded too
                    raise CommentError(self._where(method, url) + f": gave up after {MAX_SECONDS:g} s")
                if size > MAX_ANSWER_BYTES:
                    too_large = f": answer larger than {MAX_ANSWER_BYTES} bytes"
                    raise CommentError(self._where(method, url) + too_large)
                chunks.append(chunk)
        except requests.RequestException as exc:
            raise CommentError(self._where(method, url) + f": {type(exc).__name__}") from None
        return b"".join(chunks)

    def _where(self, method: str, url: str) -> str:
        path = url.split("://", 1)[-1].partition("/")[2].partition("?")[0]
        return f"{self.destination.platform} {method} /{path}"

    def _refused(self, method: str, url: str, response: requests.Response, body: bytes) -> str:
        status = response.status_code
        detail = ""
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            message = data.get("message") or data.get("error")
            if message is not None:
                detail = flat(message if isinstance(message, str) else json.dumps(message), 200)
        hint = self.destination.hints.get(status, "")
        parts = [f"{self._where(method, url)} answered {status} {response.reason or ''}".rstrip()]
        if detail:
            parts.append(detail)
        if hint:
            parts.append(hint)
        return self.redact(": ".join(parts))


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _find(api: _Api, tag: str) -> str | None:
    """The id of the first comment whose body starts with the marker, over at most MAX_PAGES pages."""
    gitlab = api.destination.platform == "GitLab"
    for page in range(1, MAX_PAGES + 1):
        params: dict[str, str | int] = {"per_page": PER_PAGE, "page": page}
        if gitlab:
            params.update(sort="asc", order_by="created_at")
        items = api.call("GET", api.destination.collection, params=params)
        if not isinstance(items, list):
            raise CommentError(f"{api.destination.platform}: the list of comments is not a JSON list")
        for item in items:
            if not isinstance(item, dict) or (gitlab and item.get("system")):
                continue
            body = item.get("body")
            if isinstance(body, str) and body.lstrip().startswith(tag) and item.get("id") is not None:
                return str(item["id"])
        if len(items) < PER_PAGE:
            return None
    return None


def post_comment(
    outcome: Outcome,
    environ: Mapping[str, str],
    *,
    key: str,
    redact: Redactor,
    gitlab_token_variable: str = DEFAULT_GITLAB_TOKEN_VARIABLE,
    sleep: Sleep | None = None,
) -> Posted:
    """Creates or updates the comment; CommentError (one line, no secrets) when it cannot."""
    destination, token = destination_for(environ, gitlab_token_variable)
    redact.add(token)
    body, cut = render_body(outcome, key, destination)
    payload = {"body": redact(body)}
    api = _Api(destination, redact, sleep or SLEEP)
    try:
        comment_id = _find(api, marker(key))
        answer: Any = None
        action = "updated"
        if comment_id is not None:
            try:
                item = destination.item.replace("{id}", comment_id)
                answer = api.call(destination.update_method, item, json=payload)
            except CommentError as exc:
                if exc.status != 404:
                    raise
                comment_id = None  # deleted since it was listed: post a new one
        if comment_id is None:
            action = "created"
            answer = api.call("POST", destination.collection, json=payload)
    finally:
        api.close()
    answer = answer if isinstance(answer, dict) else {}
    posted_id = str(answer.get("id", comment_id or "?"))
    url = answer.get("html_url") if isinstance(answer.get("html_url"), str) else None
    if url is None and destination.link:
        url = destination.link.replace("{id}", posted_id)
    return Posted(action, destination, posted_id, url, cut)


class CommentPublisher:
    """A front end of `run`/`wait`: on Finished, posts or updates the comment; never raises."""

    def __init__(
        self,
        key: str,
        gitlab_token_variable: str,
        environ: Mapping[str, str],
        console: Console,
        redact: Redactor,
    ) -> None:
        self.key = key
        self.gitlab_token_variable = gitlab_token_variable
        self.environ = environ
        self.console = console
        self.redact = redact

    def notify(self, event: Event) -> None:
        if not isinstance(event, Finished) or event.digest.outcome.verdict == "detached":
            return
        try:
            posted = post_comment(
                event.digest.outcome,
                self.environ,
                key=self.key,
                redact=self.redact,
                gitlab_token_variable=self.gitlab_token_variable,
            )
        except CommentError as exc:
            warn(str(exc), self.redact)
            return
        except Exception as exc:  # a comment must never cost the run its exit code
            warn(f"not posted: {type(exc).__name__}", self.redact)
            return
        self.console.line(posted.line())


def comment_tokens(environ: Mapping[str, str], gitlab_token_variable: str) -> list[str]:
    """The tokens a comment may use, for the run's Redactor before anything is printed or written."""
    return [value for value in (environ.get("GITHUB_TOKEN"), environ.get(gitlab_token_variable)) if value]


def warn(message: str, redact: Redactor) -> None:
    import sys

    print(f"testsession: warning: comment: {redact(message)}", file=sys.stderr)
