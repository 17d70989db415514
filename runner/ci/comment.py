"""The sticky pull-request comment / merge-request note: this run's summary, in one comment that every
later run of the same spec and branch updates in place.

Where it goes is the CI platform's (`ci/platform.py`, `ci/comment_destination.py`); its text is
`ci/comment_body.py`'s. This module publishes: it asks who the token is, finds the comment with this
key's marker among that identity's own (a comment by anyone else is never edited, whatever it
says), then updates it or creates one.

Requests use the client's pieces, so they behave as the service's calls do: `client/network`
(a bounded answer: size, wall-clock time; "never sent" told from "sent, no answer") and the
`client/retry` policy (what is sent again, backoff, Retry-After), within one deadline for the
whole comment. A platform's rate limit is waited out like a 429, GitHub's 403 with
`x-ratelimit-remaining: 0` included, when its reset falls within that deadline.

Nothing here changes a run's exit code: every problem becomes one line (CommentError), the token is
added to the run's Redactor before the first request and never printed.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from runner.ci.comment_body import comment_key, marker, render_body
from runner.ci.comment_destination import (
    DEFAULT_GITLAB_TOKEN_VARIABLE,
    GITHUB_VIEWER_QUERY,
    CommentError,
    Destination,
    comment_tokens,
)
from runner.ci.common import flat
from runner.ci.platform import CiPlatform
from runner.client.answer import BoundedAdapter
from runner.client.network import exchange
from runner.client.retry import CallKind, RetryPolicy, parse_retry_after, retry_after_of
from runner.core.errors import (
    ApiError,
    ConnectionRefusedByPeerError,
    NotFoundError,
    RateLimitedError,
    TransportError,
    error_class_for_status,
)
from runner.core.redact import Redactor
from runner.job.events import Event, Finished
from runner.job.outcome import Outcome

if TYPE_CHECKING:
    from runner.ci.console import Console

__all__ = [
    "DEFAULT_GITLAB_TOKEN_VARIABLE",
    "CommentError",
    "CommentPublisher",
    "Posted",
    "comment_key",
    "comment_tokens",
    "post_comment",
    "warn",
]

PER_PAGE = 100
MAX_PAGES = 20  # 2,000 comments: an older marker beyond that is not looked for
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a page of 100 comments of 65,536 characters fits
TIMEOUT = (5.0, 20.0)  # connect, read (each socket read)
ANSWER_SECONDS = 30.0  # one answer, from sending to its last byte
MAX_SECONDS = 120.0  # the whole comment (identity, pages, retries, update): no retry starts after this
# GitHub: a secondary rate limit without Retry-After or a used-up quota: "wait at least one minute".
SECONDARY_LIMIT_SECONDS = 60.0
# The client's policy with the comment's bounds: Retry-After is honoured as long as the deadline
# allows (a platform that asks for more than that is not asked again, see `_failure`).
POLICY = RetryPolicy(max_retries=3, backoff_base=1.0, backoff_max=16.0, retry_after_max=MAX_SECONDS)

Sleep = Callable[[float], None]
SLEEP: Sleep = time.sleep  # tests replace it to see the waits without waiting
OnRetry = Callable[[str], None]


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
        return f"comment: {self.action} the {self.destination.kind} on {self.destination.where}{at}{cut}"


@dataclass(frozen=True)
class Identity:
    """The user (or bot) the token acts as: only its own comments are ever updated."""

    id: str
    name: str


def rate_limit_wait(status: int, headers: Mapping[str, str], now: float) -> float | None:
    """Seconds a 403/429 asks to wait when it is a rate limit; None when it is not one.

    GitHub ("Rate limits for the REST API"): the primary limit answers 403 or 429 with
    `x-ratelimit-remaining: 0` and the reset in `x-ratelimit-reset` (epoch seconds); a secondary
    limit sends Retry-After. GitLab: 429 with Retry-After and `RateLimit-Reset`. A 403 without
    these is a refusal, not a limit.
    """
    if status not in (403, 429):
        return None
    retry_after = parse_retry_after(headers.get("Retry-After"))
    if retry_after is not None:
        return retry_after
    remaining = headers.get("x-ratelimit-remaining") or headers.get("RateLimit-Remaining")
    if remaining is None or remaining.strip() != "0":
        return None
    reset = headers.get("x-ratelimit-reset") or headers.get("RateLimit-Reset") or ""
    try:
        return max(0.0, float(reset) - now)
    except ValueError:
        return SECONDARY_LIMIT_SECONDS


def _span(seconds: float) -> str:
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


class PlatformApi:
    """JSON requests to GitHub's or GitLab's API for one comment, within MAX_SECONDS in all."""

    def __init__(
        self,
        destination: Destination,
        redact: Redactor,
        *,
        sleep: Sleep,
        on_retry: OnRetry | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.destination = destination
        self.redact = redact
        self.sleep = sleep
        self.on_retry = on_retry
        self.clock = clock
        self.rng = rng or random.Random()
        self.max_seconds = MAX_SECONDS  # read now: tests shorten it
        self.deadline = clock() + self.max_seconds
        self.session = requests.Session()
        adapter = BoundedAdapter(max_retries=0)  # every resend is the policy's decision
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers.update(destination.headers)
        # Only what the bounded reader inflates in steps (no br, no zstd).
        self.session.headers.update({"User-Agent": "testsession-runner", "Accept-Encoding": "gzip, deflate"})

    def close(self) -> None:
        self.session.close()

    def call(
        self,
        method: str,
        url: str,
        kind: CallKind,
        *,
        params: dict[str, str | int] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """The JSON answer (None when it has none); CommentError (one line, redacted) when it fails."""
        path = urlsplit(url).path
        attempt = 0
        while True:
            remaining = self.deadline - self.clock()
            if remaining <= 0:
                raise CommentError(f"{self._where(method, path)}: gave up after {self.max_seconds:g} s")
            try:
                return self._once(method, url, path, remaining, params, body)
            except ApiError as exc:
                delay = POLICY.next_delay(exc, attempt, kind, self.rng)
                too_late = delay is not None and self.clock() + delay >= self.deadline
                if delay is None or too_late:
                    raise self._failure(exc, method, path, attempt + 1, too_late) from None
                if self.on_retry is not None:
                    self.on_retry(
                        self.redact(
                            f"comment: {self._answer(exc)} to {method} {path}; "
                            f"retry {attempt + 1} in {delay:.1f} s"
                        )
                    )
                self.sleep(delay)
                attempt += 1

    def _once(
        self,
        method: str,
        url: str,
        path: str,
        remaining: float,
        params: dict[str, str | int] | None,
        body: dict[str, Any] | None,
    ) -> Any:
        response = exchange(
            self.session,
            method,
            url,
            where=self.destination.host,
            path=path,
            timeout=(min(TIMEOUT[0], remaining), min(TIMEOUT[1], remaining)),
            answer_seconds=min(ANSWER_SECONDS, remaining),
            max_bytes=MAX_ANSWER_BYTES,
            params=params,
            json=body,
        )
        status = response.status_code
        data = _json(response.content)
        if 200 <= status < 300:
            return data
        message = ""
        if isinstance(data, dict):
            text = data.get("message") or data.get("error")
            if text is not None:
                message = flat(text if isinstance(text, str) else json.dumps(text), 200)
        reason = response.reason or None
        wait = rate_limit_wait(status, response.headers, time.time())
        if wait is not None:
            attributes = {"retryAfterSeconds": wait}
            raise RateLimitedError(
                message, status=status, error=reason, attributes=attributes, method=method, path=path
            )
        cls = error_class_for_status(status)
        raise cls(message, status=status, error=reason, method=method, path=path)

    def _where(self, method: str, path: str) -> str:
        return f"{self.destination.platform} {method} {path}"

    def _answer(self, exc: ApiError) -> str:
        if isinstance(exc, TransportError) or not exc.status:
            return exc.message
        limited = " (rate limit)" if isinstance(exc, RateLimitedError) else ""
        return f"{self.destination.platform} answered {exc.status}{limited}"

    def _failure(self, exc: ApiError, method: str, path: str, attempts: int, too_late: bool) -> CommentError:
        """The one line for the user; `too_late`: a retry was due but would start after the deadline."""
        where = self._where(method, path)
        tries = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
        if isinstance(exc, TransportError) or not exc.status:
            text = f"{where}: {exc.message}{tries}"
            if isinstance(exc, ConnectionRefusedByPeerError):
                text += f"; {self.destination.unreachable()}"
            return CommentError(self.redact(text))
        parts = [f"{where} answered {exc.status} {exc.error or ''}".rstrip() + tries]
        if exc.message:
            parts.append(exc.message)
        wait = retry_after_of(exc)
        if isinstance(exc, RateLimitedError):
            if too_late and wait is not None:
                parts.append(
                    f"{self.destination.platform}'s rate limit for this token lifts in {_span(wait)}, "
                    f"later than the comment waits ({self.max_seconds:g} s in all)"
                )
        else:
            hint = self.destination.hints.get(exc.status, "")
            if hint:
                parts.append(hint)
        return CommentError(
            self.redact(": ".join(parts)), exc.status, rate_limited=isinstance(exc, RateLimitedError)
        )


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _id(value: Any) -> str | None:
    """An id as text: a number or a non-empty string (never a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        return None
    return str(value)


def identify(api: PlatformApi) -> Identity:
    """Who the token is: GET /user; for a GitHub installation token (403 there) the GraphQL viewer."""
    destination = api.destination
    try:
        answer = api.call("GET", destination.identity_url, CallKind.READ)
    except CommentError as exc:
        if exc.status != 403 or exc.rate_limited or destination.identity_graphql is None:
            raise
        # A query changes nothing: safe to send again, like a read.
        data = api.call(
            "POST", destination.identity_graphql, CallKind.READ, body={"query": GITHUB_VIEWER_QUERY}
        )
        data = data.get("data") if isinstance(data, dict) else None
        answer = data.get("viewer") if isinstance(data, dict) else None
        if isinstance(answer, dict):
            answer = {"id": answer.get("databaseId"), "login": answer.get("login")}
    user_id = _id(answer.get("id")) if isinstance(answer, dict) else None
    if user_id is None or not isinstance(answer, dict):
        asked = urlsplit(destination.identity_url).path
        raise CommentError(f"{destination.platform} did not say which user the token is (GET {asked})")
    name = answer.get("login") or answer.get("username")
    return Identity(user_id, name if isinstance(name, str) else "?")


def find_own(api: PlatformApi, identity: Identity, tag: str) -> str | None:
    """The id of the first comment of `identity` whose body starts with the marker `tag`, over at most
    MAX_PAGES pages; a comment by anyone else never counts, even with the marker."""
    destination = api.destination
    for page in range(1, MAX_PAGES + 1):
        params: dict[str, str | int] = {"per_page": PER_PAGE, "page": page, **destination.list_params}
        items = api.call("GET", destination.collection, CallKind.READ, params=params)
        if not isinstance(items, list):
            raise CommentError(f"{destination.platform}: the list of {destination.kind}s is not a JSON list")
        for item in items:
            if not isinstance(item, dict) or (destination.skip_field and item.get(destination.skip_field)):
                continue
            author = item.get(destination.author_field)
            if not isinstance(author, dict) or _id(author.get("id")) != identity.id:
                continue
            body = item.get("body")
            if isinstance(body, str) and body.lstrip().startswith(tag) and _id(item.get("id")) is not None:
                return str(item["id"])
        if len(items) < PER_PAGE:
            return None
    return None


def post_comment(
    outcome: Outcome,
    platform: CiPlatform,
    *,
    key: str,
    redact: Redactor,
    gitlab_token_variable: str = DEFAULT_GITLAB_TOKEN_VARIABLE,
    sleep: Sleep | None = None,
    on_retry: OnRetry | None = None,
) -> Posted:
    """Creates or updates the comment; CommentError (one line, no secrets) when it cannot."""
    destination, token = platform.comment_destination(gitlab_token_variable)
    redact.add(token)
    body, cut = render_body(
        outcome,
        key,
        platform=destination.platform,
        max_chars=destination.max_chars,
        run_url=destination.run_url,
    )
    payload = {"body": redact(body)}
    api = PlatformApi(destination, redact, sleep=sleep or SLEEP, on_retry=on_retry)
    try:
        comment_id = find_own(api, identify(api), marker(key))
        answer: Any = None
        action = "updated"
        if comment_id is not None:
            try:
                item = destination.item.replace("{id}", comment_id)
                # Setting the same body twice does no harm: retried like a read.
                answer = api.call(destination.update_method, item, CallKind.IDEMPOTENT, body=payload)
            except CommentError as exc:
                if exc.status != NotFoundError.status:
                    raise
                comment_id = None  # deleted since it was listed: post a new one
        if comment_id is None:
            action = "created"
            answer = api.call("POST", destination.collection, CallKind.CREATE, body=payload)
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

    def __init__(self, key: str, gitlab_token_variable: str, console: Console, redact: Redactor) -> None:
        self.key = key
        self.gitlab_token_variable = gitlab_token_variable
        self.console = console
        self.redact = redact

    def notify(self, event: Event) -> None:
        if not isinstance(event, Finished) or event.digest.outcome.verdict == "detached":
            return
        try:
            posted = post_comment(
                event.digest.outcome,
                self.console.platform,
                key=self.key,
                redact=self.redact,
                gitlab_token_variable=self.gitlab_token_variable,
                on_retry=self.console.line,
            )
        except CommentError as exc:
            warn(str(exc), self.redact)
            return
        except Exception as exc:  # a comment must never cost the run its exit code
            warn(f"not posted: {type(exc).__name__}", self.redact)
            return
        self.console.line(posted.line())


def warn(message: str, redact: Redactor) -> None:
    print(f"testsession: warning: comment: {redact(message)}", file=sys.stderr)
