"""ApiClient: every call to the service goes through here.

JSON is parsed once, at this boundary, into the shared models; every failure becomes one of the
runner.core.errors classes (carrying status, the service's error and message, method and path). The API
key is only ever put in the Authorization header, never in a message.
"""

from __future__ import annotations

import importlib.metadata
import logging
import platform
import random
import re
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ValidationError

from runner import TOOL_NAME, __version__
from runner.client.ratelimit import RateLimiter
from runner.client.retry import RetryPolicy, parse_retry_after
from runner.client.transport import MAX_ANSWER_BYTES, Outgoing, Reply, Transport
from runner.core.errors import (
    AnswerTooLargeError,
    ApiError,
    BadResponseError,
    InvalidRequestError,
    MismatchedAnswerError,
    NoMatchingChecksError,
    error_class_for_status,
)
from runner.models import (
    DEFAULT_ACCOUNT_HEADER,
    NO_MATCHING_CHECKS,
    AccountVariable,
    Check,
    CheckList,
    CheckUpdate,
    CreateAnalysisRequest,
    Dashboard,
    DashboardRequest,
    ErrorBody,
    ErrorGroup,
    IncidentUpdate,
    IncidentUpdateRequest,
    RequestModel,
    RootCauseAnalysis,
    TestSession,
    TestSessionErrorGroup,
    TriggerRequest,
    VariableList,
    account_header_problem,
    describe_validation_error,
)
from runner.models import operations as ops
from runner.models.base import ApiModel
from runner.models.operations import Operation

log = logging.getLogger("runner.client")

M = TypeVar("M", bound=BaseModel)
A = TypeVar("A", bound=ApiModel | None)
R = TypeVar("R", bound=RequestModel)
T = TypeVar("T")

# The long poll holds the request up to maxWaitSeconds; the read timeout must outlast it.
LONG_POLL_MARGIN = 10.0
MAX_WAIT_SECONDS = 30
MAX_ERROR_TEXT = 200  # a non-JSON error body is quoted at most this long
# An operation without an answer body (a delete, a cancel) is done on any of these.
NO_CONTENT_SUCCESS = (200, 202, 204)
# list_checks reads at most this many checks (50 pages of production's largest page): an account
# with more is refused rather than exported in part; filters (tags, type) narrow it.
MAX_LISTED_CHECKS = 5000
MAX_LISTED_VARIABLES = 5000  # the same bound for GET /v1/variables
_TOTAL = re.compile(r"/\s*(\d+)\s*$")  # Content-Range: 0-99/250 (the CLI's parseTotalFromContentRange)


def default_user_agent() -> str:
    # requests' version from its metadata, not its module: a local run never imports requests.
    requests_version = importlib.metadata.version("requests")
    return f"{TOOL_NAME}/{__version__} (python {platform.python_version()}; requests {requests_version})"


def validate_request(model: type[R], body: R | dict[str, Any], what: str) -> R:
    """A body we are about to send, as the model; InvalidRequestError with `what: field: rule` lines."""
    if isinstance(body, model):
        return body
    if not isinstance(body, dict):
        raise InvalidRequestError(f"{what}: (body): must be a mapping (object)")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        lines = describe_validation_error(exc)
        raise InvalidRequestError("\n".join(f"{what}: {line}" for line in lines)) from None


def check_base_url(url: str) -> str:
    """The base URL, or InvalidRequestError (a usage error: nothing sent). Credentials in it are
    refused, not sent as Basic auth, and never repeated in the message."""
    if not url or not url.strip():
        raise InvalidRequestError("base URL: must not be empty")
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise InvalidRequestError("base URL: not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"{parts.scheme}:" if parts.scheme else "no scheme"
        raise InvalidRequestError(f"base URL: must start with https:// or http:// (got {shown})")
    if "@" in parts.netloc:
        raise InvalidRequestError(
            "base URL: must not contain credentials (user:password@); "
            "the API key is read from TESTSESSION_API_KEY and sent as a Bearer token"
        )
    if not parts.hostname:
        raise InvalidRequestError("base URL: has no host")
    if parts.query or parts.fragment or url.strip().endswith(("?", "#")):
        raise InvalidRequestError(
            f"base URL: must not have a query or fragment (?, #); use {_root(parts, parts.path)}"
        )
    segments = [s for s in parts.path.split("/") if s]
    for index, segment in enumerate(segments):
        if _API_VERSION.fullmatch(segment) or segment.lower() in SERVICE_SEGMENTS:
            # A path the client adds itself (.../v1) or one of the service's own: every request would
            # go to a path the service does not have, and its 404 must never read as "no match".
            root = _root(parts, "/".join(segments[:index]))
            raise InvalidRequestError(
                f"base URL: {parts.path.rstrip('/')} is a path of the API, which the client adds itself; "
                f"use {root}"
            )
    return url.strip()


# Path segments the client adds to the base URL, or the service's own pages: never in a base URL.
_API_VERSION = re.compile(r"[vV][0-9]+")
SERVICE_SEGMENTS = frozenset(
    {
        "next",
        "test-sessions",
        "test-session-error-groups",
        "error-groups",
        "root-cause-analyses",
        "status-pages",
        "maintenance-windows",
        "client-certificates",
        "dashboards",
        "checks",
        "_emulator",
        "docs",
        "openapi.json",
    }
)


def _root(parts: SplitResult, path: str) -> str:
    """The base URL with `path` as its path and no query or fragment."""
    path = "/" + path.strip("/") if path.strip("/") else ""
    return f"{parts.scheme}://{parts.netloc}{path}"


class ApiClient:
    """The service's HTTP API. Thread-safe: one client may be shared by the threads of a run."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        account_id: str,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        rate_limiter: RateLimiter | None = None,
        user_agent: str | None = None,
        retry_after_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        deadline: float | None = None,
        rng: random.Random | None = None,
        pool_size: int = 32,
        on_retry: Callable[[str, str, str, int, float], None] | None = None,
        account_header: str = DEFAULT_ACCOUNT_HEADER,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        transport: Transport | None = None,
    ) -> None:
        self.base_url = check_base_url(base_url).rstrip("/")
        problem = account_header_problem(account_header)
        if problem:
            raise InvalidRequestError(f"account header: {problem}")
        self.account_header = account_header
        parts = urlsplit(self.base_url)
        # For messages: the host only, never credentials embedded in the URL.
        self._where = parts.hostname or "the service"
        if parts.port:
            self._where += f":{parts.port}"
        self.account_id = account_id
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_answer_bytes = max_answer_bytes
        self.retry_policy = RetryPolicy(
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            retry_after_max=retry_after_max,
        )
        self.rate_limiter = rate_limiter if rate_limiter is not None else RateLimiter()
        # Monotonic time (of `clock`) after which no retry is started; the runner sets it.
        self.deadline = deadline
        self._sleep = sleep
        # Told before each retry (method, path, what happened, retry number, delay).
        self.on_retry = on_retry
        self._clock = clock
        self._rng = rng or random.Random()
        self._count_lock = threading.Lock()
        self._request_count = 0
        self._api_key = api_key  # only for masking it, should a proxy ever echo it in an error page
        if transport is None:
            from runner.client.network import HttpTransport  # requests, only when a call goes out

            transport = HttpTransport(pool_size)
        self._transport: Transport = transport
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            account_header: account_id,
            "User-Agent": user_agent or default_user_agent(),
            "Accept": "application/json",
            # Only what the bounded reader can inflate in steps (no br, no zstd).
            "Accept-Encoding": "gzip, deflate",
        }

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never shows the key
        return f"ApiClient(base_url={self.base_url!r}, account_id={self.account_id!r})"

    @property
    def request_count(self) -> int:
        """HTTP requests sent by this client, retries included."""
        with self._count_lock:
            return self._request_count

    # --- test sessions --------------------------------------------------------------------------

    def trigger(self, request: TriggerRequest | dict[str, Any]) -> TestSession:
        return self._call(ops.TRIGGER, body=validate_request(TriggerRequest, request, "trigger body"))

    def get_session(self, test_session_id: str) -> TestSession:
        op = ops.GET_SESSION
        return self._request(
            op,
            op.url_path(test_session_id),
            lambda r: _same_session(self._answer(r, op), test_session_id, r),
        )

    def await_completion(self, test_session_id: str, max_wait_seconds: float = 30) -> TestSession | None:
        """Long poll: the final session, or None when it is still running after the wait (408).

        max_wait_seconds is rounded up and clamped to the API's 1..30.
        """
        op = ops.COMPLETION
        wait = min(max(int(-(-max_wait_seconds // 1)), 1), MAX_WAIT_SECONDS)

        def parse(response: Reply) -> TestSession | None:
            if response.status_code == 408:
                return None
            return _same_session(self._answer(response, op), test_session_id, response)

        # The whole call, retries included, ends by the wait plus one answer's time: a caller that
        # asked for `wait` seconds gets an answer or an error by then, never minutes later.
        answer_seconds = wait + min(self.read_timeout, LONG_POLL_MARGIN)
        return self._request(
            op,
            op.url_path(test_session_id),
            parse,
            params={"maxWaitSeconds": wait},
            read_timeout=max(self.read_timeout, wait + LONG_POLL_MARGIN),
            answer_seconds=answer_seconds,
            call_deadline=self._clock() + answer_seconds,
        )

    def cancel(self, test_session_id: str, *, within: float | None = None) -> None:
        """Cancels the session. With `within`: one attempt that waits at most that long for an
        answer (a run shutting down on a signal has seconds, not minutes)."""
        op = ops.CANCEL
        self._request(
            op,
            op.url_path(test_session_id),
            self._no_content,
            read_timeout=within,
            answer_seconds=within,
            retry=within is None,
        )

    # --- error groups and analyses --------------------------------------------------------------

    def get_test_session_error_group(self, error_group_id: str) -> TestSessionErrorGroup:
        return self._call(ops.GET_TEST_SESSION_ERROR_GROUP, error_group_id)

    def get_error_group(self, error_group_id: str) -> ErrorGroup:
        return self._call(ops.GET_ERROR_GROUP, error_group_id)

    def create_test_session_error_group_analysis(
        self, error_group_id: str, user_context: str | None = None
    ) -> RootCauseAnalysis:
        op = ops.CREATE_TEST_SESSION_ERROR_GROUP_ANALYSIS
        return self._create_analysis(op, error_group_id, user_context)

    def create_error_group_analysis(
        self, error_group_id: str, user_context: str | None = None
    ) -> RootCauseAnalysis:
        return self._create_analysis(ops.CREATE_ERROR_GROUP_ANALYSIS, error_group_id, user_context)

    def _create_analysis(
        self, op: Operation[RootCauseAnalysis], error_group_id: str, user_context: str | None
    ) -> RootCauseAnalysis:
        path = op.url_path(error_group_id)  # a bad id is refused before the body is looked at
        body = validate_request(CreateAnalysisRequest, {"userContext": user_context}, "analysis request")
        return self._request(op, path, lambda r: self._answer(r, op), body=body)

    def get_analysis(self, analysis_id: str) -> RootCauseAnalysis:
        """200 completed or 202 pending; check `.is_completed`."""
        return self._call(ops.GET_ANALYSIS, analysis_id)

    # --- incidents, maintenance windows, certificates -------------------------------------------

    def add_incident_update(
        self, incident_id: str, update: IncidentUpdateRequest | dict[str, Any]
    ) -> IncidentUpdate:
        body = validate_request(IncidentUpdateRequest, update, "incident update")
        return self._call(ops.INCIDENT_UPDATE, incident_id, body=body)

    def delete_maintenance_window(self, window_id: str | int) -> None:
        self._call(ops.DELETE_MAINTENANCE_WINDOW, window_id)

    def delete_maintenance(self, window_id: str | int, maintenance_id: str) -> None:
        self._call(ops.DELETE_MAINTENANCE, window_id, maintenance_id)

    def delete_client_certificate(self, certificate_id: str) -> None:
        self._call(ops.DELETE_CLIENT_CERTIFICATE, certificate_id)

    # --- dashboards and checks ------------------------------------------------------------------

    def create_dashboard(self, request: DashboardRequest | dict[str, Any]) -> Dashboard:
        return self._call(ops.CREATE_DASHBOARD, body=validate_request(DashboardRequest, request, "dashboard"))

    def update_check(
        self, check_id: str, update: CheckUpdate | dict[str, Any], auto_assign_alerts: bool = True
    ) -> Check:
        """Deprecated by the service: PUT /v1/checks/api/{id} and PUT /v1/checks/browser/{id} replace it."""
        warnings.warn(
            "PUT /v1/checks/{id} is deprecated by the service; "
            "use PUT /v1/checks/api/{id} or PUT /v1/checks/browser/{id}",
            DeprecationWarning,
            stacklevel=2,
        )
        body = validate_request(CheckUpdate, update, "check update")
        return self._call(
            ops.UPDATE_CHECK,
            check_id,
            body=body,
            params={"autoAssignAlerts": "true" if auto_assign_alerts else "false"},
        )

    def get_check(self, check_id: str) -> Check:
        """The check with its definition (`.definition()`); secret variable values are null."""
        return self._call(ops.GET_CHECK, check_id)

    def list_checks(
        self,
        *,
        tags: tuple[str, ...] | list[str] = (),
        check_type: str | None = None,
        search: str | None = None,
        page_size: int = ops.CHECKS_PAGE_LIMIT,
        max_checks: int = MAX_LISTED_CHECKS,
    ) -> list[Check]:
        """Every check of the account that matches (production's filters: at least one of `tags`,
        the type, a part of the name), page by page until the last. Bounded: more than `max_checks`
        checks is AnswerTooLargeError, a service that answers the same page again is BadResponseError.
        A check listed twice (the list moved between two pages) is kept once."""
        if not 1 <= page_size <= ops.CHECKS_PAGE_LIMIT:
            raise InvalidRequestError(f"page size: must be 1 to {ops.CHECKS_PAGE_LIMIT}")
        op = ops.LIST_CHECKS
        params: dict[str, Any] = {"limit": page_size}
        if tags:
            params["tag"] = list(tags)  # repeated: tag=a&tag=b (OpenAPI: an array, form style)
        if check_type:
            params["checkType"] = check_type
        if search:
            params["search"] = search
        return self._paged(
            op, params, self._check_page, lambda check: check.id,
            page_size=page_size, limit=max_checks, longer_is_all=False,
            repeated="checks",
            too_many=f"{max_checks} checks (the client's limit): narrow the list with tags",
        )  # fmt: skip

    def list_variables(
        self, *, page_size: int = ops.VARIABLES_PAGE_LIMIT, max_variables: int = MAX_LISTED_VARIABLES
    ) -> list[AccountVariable]:
        """Every environment variable of the account (a secret's value is null), page by page until a
        page shorter than `page_size`; a page longer than asked means the service sent them all at
        once (production's own CLI asks without paging). Bounded as list_checks: more than
        `max_variables` is AnswerTooLargeError, a page of only known keys BadResponseError."""
        if not 1 <= page_size <= ops.VARIABLES_PAGE_LIMIT:
            raise InvalidRequestError(f"page size: must be 1 to {ops.VARIABLES_PAGE_LIMIT}")
        op = ops.LIST_VARIABLES
        return self._paged(
            op, {"limit": page_size}, lambda r: (self._variable_page(r), None), lambda variable: variable.key,
            page_size=page_size, limit=max_variables, longer_is_all=True,
            repeated="variables", too_many=f"{max_variables} environment variables (the client's limit)",
        )  # fmt: skip

    def _paged(
        self,
        op: Operation[Any],
        params: dict[str, Any],
        read: Callable[[Reply], tuple[list[T], int | None]],
        key: Callable[[T], str],
        *,
        page_size: int,
        limit: int,
        longer_is_all: bool,
        repeated: str,
        too_many: str,
    ) -> list[T]:
        """Every item of a paged list operation, page by page until the last: a short page, the total
        a Content-Range names, or (`longer_is_all`) a page longer than asked, which holds them all.
        Bounded: more than `limit` items is AnswerTooLargeError, a page of only items seen before
        BadResponseError. An item listed twice (the list moved between two pages) is kept once."""
        found: dict[str, T] = {}
        page = 1
        while True:
            items, total = self._request(op, op.url_path(), read, params={**params, "page": page})
            fresh = [item for item in items if key(item) not in found]
            if items and not fresh:
                raise BadResponseError(
                    f"page {page} holds only {repeated} of earlier pages: the service does not page as "
                    "documented",
                    status=200, method=op.method, path=op.template,
                )  # fmt: skip
            found.update((key(item), item) for item in fresh)
            if len(found) > limit or (total or 0) > limit:
                raise AnswerTooLargeError(
                    f"the account lists more than {too_many}",
                    status=200, method=op.method, path=op.template,
                )  # fmt: skip
            last = len(items) < page_size or (longer_is_all and len(items) > page_size)
            if last or (total is not None and page * page_size >= total):
                return list(found.values())
            page += 1

    def _variable_page(self, response: Reply) -> list[AccountVariable]:
        return self._model(response, VariableList, _success_statuses(ops.LIST_VARIABLES)).root

    def _check_page(self, response: Reply) -> tuple[list[Check], int | None]:
        """One page of GET /v1/checks and the total its Content-Range names (None without one)."""
        page = self._model(response, CheckList, _success_statuses(ops.LIST_CHECKS))
        match = _TOTAL.search(response.headers.get("Content-Range", ""))
        return page.root, int(match.group(1)) if match else None

    # --- the one request loop -------------------------------------------------------------------

    def _call(
        self,
        op: Operation[A],
        *values: str | int,
        body: RequestModel | None = None,
        params: dict[str, Any] | None = None,
    ) -> A:
        """One operation whose answer is its model (or nothing, for a 204 operation)."""
        path = op.url_path(*values)
        if op.response is None:
            self._request(op, path, self._no_content, body=body, params=params)
            return cast(A, None)
        return self._request(op, path, lambda r: self._answer(r, op), body=body, params=params)

    def _request(
        self,
        op: Operation[Any],
        path: str,
        parse: Callable[[Reply], T],
        *,
        params: dict[str, Any] | None = None,
        body: BaseModel | None = None,
        read_timeout: float | None = None,
        retry: bool = True,
        answer_seconds: float | None = None,
        call_deadline: float | None = None,
    ) -> T:
        method, kind = op.method, op.kind
        json_body = body.to_body() if isinstance(body, RequestModel) else None
        deadlines = [d for d in (self.deadline, call_deadline) if d is not None]
        retry_deadline = min(deadlines) if deadlines else None
        attempt = 0
        while True:
            try:
                seconds = answer_seconds or self.read_timeout
                if call_deadline is not None:
                    seconds = min(seconds, max(call_deadline - self._clock(), 0.001))
                response = self._send(method, path, params, json_body, read_timeout, seconds)
                return parse(response)
            except ApiError as exc:
                delay = self.retry_policy.next_delay(exc, attempt, kind, self._rng) if retry else None
                if (
                    delay is not None
                    and retry_deadline is not None
                    and self._clock() + delay >= retry_deadline
                ):
                    delay = None
                if delay is None:
                    if attempt:
                        exc.message = f"{exc.message} (gave up after {attempt + 1} attempts)"
                    raise
                log.info("%s %s: %s; retry %d in %.2fs", method, path, _short(exc), attempt + 1, delay)
                if self.on_retry is not None:
                    self.on_retry(method, path, _short(exc), attempt + 1, delay)
                self._sleep(delay)
                attempt += 1

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        json_body: dict[str, Any] | None,
        read_timeout: float | None,
        answer_seconds: float,
    ) -> Reply:
        """One request and its whole answer, read within `answer_seconds` of wall-clock time (from
        the moment it is sent) and `max_answer_bytes` of decoded body."""
        with self.rate_limiter.slot():
            with self._count_lock:
                self._request_count += 1
            return self._transport.send(
                Outgoing(
                    method,
                    self.base_url + path,
                    where=self._where,
                    path=path,
                    headers=self._headers,
                    timeout=(
                        min(self.connect_timeout, read_timeout or self.connect_timeout),
                        min(read_timeout or self.read_timeout, answer_seconds),
                    ),
                    answer_seconds=answer_seconds,
                    max_bytes=self.max_answer_bytes,
                    params=params,
                    json=json_body,
                )
            )

    # --- answers --------------------------------------------------------------------------------

    def _raise_for_status(self, response: Reply, ok: tuple[int, ...]) -> None:
        if response.status_code in ok:
            return
        method = response.request.method or "?"
        path = urlsplit(response.request.url or "").path
        status = response.status_code
        error: str | None = None
        message = response.reason or "error"
        attributes: dict[str, Any] = {}
        error_code: str | None = None
        service_body = False
        if 200 <= status < 300:
            raise BadResponseError(f"unexpected status {status}", status=status, method=method, path=path)
        try:
            data = response.json()
        except ValueError:
            data = None
        try:
            parsed = ErrorBody.model_validate(data)
            error, attributes = parsed.error or None, dict(parsed.attributes or {})
            message = parsed.message or parsed.error or message
            error_code, service_body = _error_code(parsed.errorCode), True
        except ValidationError:
            if isinstance(data, dict) and isinstance(data.get("message"), str):
                # {message, errorCode} without statusCode: a shape the service's own CLI accepts too.
                message, error_code = data["message"][:MAX_ERROR_TEXT], _error_code(data.get("errorCode"))
            else:
                text = response.text.strip().replace("\n", " ")
                if text and status >= 400:
                    message = text[:MAX_ERROR_TEXT]
        if self._api_key and len(self._api_key) >= 3:
            message = message.replace(self._api_key, "***")
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is not None:
            # The header is authoritative; the retry policy reads it from here.
            attributes["retryAfterSeconds"] = retry_after
        cls = error_class_for_status(status)
        if status == 403 and error_code == NO_MATCHING_CHECKS:
            cls = NoMatchingChecksError
        url = urlsplit(response.request.url or "")._replace(query="", fragment="").geturl()
        raise cls(
            message,
            status=status,
            error=error,
            attributes=attributes,
            method=method,
            path=path,
            error_code=error_code,
            service_body=service_body,
            url=url or None,
        )

    def _model(self, response: Reply, model: type[M], ok: tuple[int, ...] = (200,)) -> M:
        self._raise_for_status(response, ok)
        try:
            # Straight from the bytes (a session of 10,000 results: no dicts built only to be read
            # once). Anything it refuses (not JSON to it, or not the model) is read the long way
            # below, so what is accepted and every error are as they were.
            return model.model_validate_json(response.content)
        except ValidationError:
            pass
        method = response.request.method or "?"
        path = urlsplit(response.request.url or "").path
        try:
            data = response.json()
        except ValueError:
            raise BadResponseError(
                f"answer is not JSON (status {response.status_code})",
                status=response.status_code,
                method=method,
                path=path,
            ) from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(describe_validation_error(exc)[:3])
            raise BadResponseError(
                f"answer does not fit {model.__name__}: {problems}",
                status=response.status_code,
                method=method,
                path=path,
            ) from None

    def _answer(self, response: Reply, op: Operation[A]) -> A:
        model = cast("type[ApiModel] | None", op.response)
        assert model is not None, op.name
        return cast(A, self._model(response, model, _success_statuses(op)))

    def _no_content(self, response: Reply) -> None:
        self._raise_for_status(response, NO_CONTENT_SUCCESS)


def _success_statuses(op: Operation[Any]) -> tuple[int, ...]:
    """The operation's documented success statuses, and the plain 200 and 201 any success may
    come as (the model then decides what the answer says)."""
    return tuple(sorted({200, 201, op.status, *op.also}))


def _same_session(session: TestSession, asked: str, response: Reply) -> TestSession:
    """Another session's answer (a proxy's cache, a service bug) must never judge this one."""
    if session.testSessionId != asked:
        raise MismatchedAnswerError(
            f"answer is for test session {session.testSessionId!r}, not the one asked for ({asked!r})",
            status=response.status_code,
            method=response.request.method or "?",
            path=urlsplit(response.request.url or "").path,
        )
    return session


_ERROR_CODE = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def _error_code(value: object) -> str | None:
    """The body's errorCode when it is a plain code; service text of any other form is dropped."""
    return value if isinstance(value, str) and _ERROR_CODE.fullmatch(value) else None


def _short(exc: ApiError) -> str:
    """What happened, for a retry line: an answer only when there was one."""
    if exc.status:
        return f"the service answered {exc.status} {exc.error or ''}".strip()
    return exc.message
