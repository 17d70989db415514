"""ApiClient: every call to the service goes through here.

JSON is parsed once, at this boundary, into the shared models; every failure becomes one of the
runner.core.errors classes (carrying status, the service's error and message, method and path). The API
key is only ever put in the Authorization header, never in a message.
"""

from __future__ import annotations

import http.client
import logging
import platform
import random
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import requests
import urllib3
from pydantic import BaseModel, ValidationError

from runner import TOOL_NAME, __version__
from runner.client.answer import (
    MAX_ANSWER_BYTES,
    AnswerTooLarge,
    AnswerTooSlow,
    BoundedAdapter,
    UnknownEncoding,
    headers_by,
    load_answer,
)
from runner.client.ratelimit import RateLimiter
from runner.client.retry import CallKind, RetryPolicy, parse_retry_after
from runner.core.errors import (
    AnswerTooLargeError,
    ApiError,
    BadResponseError,
    ConnectionFailedError,
    ConnectionRefusedByPeerError,
    InvalidRequestError,
    MismatchedAnswerError,
    ReadTimeoutError,
    error_class_for_status,
)
from runner.models import (
    DEFAULT_ACCOUNT_HEADER,
    Check,
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
    TriggerRequest,
    account_header_problem,
    describe_validation_error,
)
from runner.models.base import ApiModel

log = logging.getLogger("runner.client")

M = TypeVar("M", bound=ApiModel)
R = TypeVar("R", bound=RequestModel)
T = TypeVar("T")

# The long poll holds the request up to maxWaitSeconds; the read timeout must outlast it.
LONG_POLL_MARGIN = 10.0
MAX_WAIT_SECONDS = 30
MAX_ERROR_TEXT = 200  # a non-JSON error body is quoted at most this long


def default_user_agent() -> str:
    return f"{TOOL_NAME}/{__version__} (python {platform.python_version()}; requests {requests.__version__})"


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
    return url.strip()


def _segment(value: str, what: str) -> str:
    """One path segment, quoted so an id can never change the path (e.g. "../x")."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequestError(f"{what}: must be a non-empty string")
    return quote(value, safe="")


def _window_id(value: str | int) -> str:
    """A maintenance window id: production's ids are positive integers."""
    text = str(value).strip()
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise InvalidRequestError("maintenance window id: must be a positive whole number (e.g. 2001)")
    return str(int(text))


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it wraps (requests wraps urllib3, which wraps socket errors)."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for inner in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(inner, BaseException):
                stack.append(inner)
        stack.extend(arg for arg in current.args if isinstance(arg, BaseException))


def _never_sent(exc: BaseException) -> bool:
    """True when the connection was never established, so the request cannot have reached the service."""
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    if isinstance(exc, requests.ConnectTimeout):
        return True
    return any(
        isinstance(c, (ConnectionRefusedError, NewConnectionError, ConnectTimeoutError)) for c in _causes(exc)
    )


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
        # Told before each retry (method, path, what the service answered, retry number, delay).
        self.on_retry = on_retry
        self._clock = clock
        self._rng = rng or random.Random()
        self._count_lock = threading.Lock()
        self._request_count = 0
        self._api_key = api_key  # only for masking it, should a proxy ever echo it in an error page
        self._session = requests.Session()
        # No retries inside urllib3: every resend is decided by our policy.
        adapter = BoundedAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update(
            {
                "Authorization": f"Bearer {api_key}",
                account_header: account_id,
                "User-Agent": user_agent or default_user_agent(),
                "Accept": "application/json",
                # Only what the bounded reader can inflate in steps (no br, no zstd).
                "Accept-Encoding": "gzip, deflate",
            }
        )

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        self._session.close()

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
        body = validate_request(TriggerRequest, request, "trigger body")
        return self._request(
            "POST",
            "/v1/test-sessions/trigger",
            CallKind.CREATE,
            lambda r: self._model(r, TestSession, (200, 201)),
            body=body,
        )

    def get_session(self, test_session_id: str) -> TestSession:
        path = f"/v1/test-sessions/{_segment(test_session_id, 'test session id')}"
        return self._request(
            "GET",
            path,
            CallKind.READ,
            lambda r: _same_session(self._model(r, TestSession), test_session_id, r),
        )

    def await_completion(self, test_session_id: str, max_wait_seconds: float = 30) -> TestSession | None:
        """Long poll: the final session, or None when it is still running after the wait (408).

        max_wait_seconds is rounded up and clamped to the API's 1..30.
        """
        wait = min(max(int(-(-max_wait_seconds // 1)), 1), MAX_WAIT_SECONDS)
        path = f"/v1/test-sessions/{_segment(test_session_id, 'test session id')}/completion"

        def parse(response: requests.Response) -> TestSession | None:
            if response.status_code == 408:
                return None
            return _same_session(self._model(response, TestSession), test_session_id, response)

        # The whole call, retries included, ends by the wait plus one answer's time: a caller that
        # asked for `wait` seconds gets an answer or an error by then, never minutes later.
        answer_seconds = wait + min(self.read_timeout, LONG_POLL_MARGIN)
        return self._request(
            "GET",
            path,
            CallKind.READ,
            parse,
            params={"maxWaitSeconds": wait},
            read_timeout=max(self.read_timeout, wait + LONG_POLL_MARGIN),
            answer_seconds=answer_seconds,
            call_deadline=self._clock() + answer_seconds,
        )

    def cancel(self, test_session_id: str, *, within: float | None = None) -> None:
        """Cancels the session. With `within`: one attempt that waits at most that long for an
        answer (a run shutting down on a signal has seconds, not minutes)."""
        path = f"/v1/test-sessions/{_segment(test_session_id, 'test session id')}/cancel"
        # Cancelling twice does no harm, so it is retried like a read.
        self._request(
            "POST",
            path,
            CallKind.READ,
            self._no_content,
            read_timeout=within,
            answer_seconds=within,
            retry=within is None,
        )

    # --- error groups and analyses --------------------------------------------------------------

    def get_test_session_error_group(self, error_group_id: str) -> ErrorGroup:
        path = f"/v1/test-session-error-groups/{_segment(error_group_id, 'error group id')}"
        return self._request("GET", path, CallKind.READ, lambda r: self._model(r, ErrorGroup))

    def get_error_group(self, error_group_id: str) -> ErrorGroup:
        path = f"/v1/error-groups/{_segment(error_group_id, 'error group id')}"
        return self._request("GET", path, CallKind.READ, lambda r: self._model(r, ErrorGroup))

    def create_test_session_error_group_analysis(
        self, error_group_id: str, user_context: str | None = None
    ) -> RootCauseAnalysis:
        segment = _segment(error_group_id, "error group id")
        return self._create_analysis(
            f"/v1/root-cause-analyses/test-session-error-groups/{segment}", user_context
        )

    def create_error_group_analysis(
        self, error_group_id: str, user_context: str | None = None
    ) -> RootCauseAnalysis:
        segment = _segment(error_group_id, "error group id")
        return self._create_analysis(f"/v1/root-cause-analyses/error-groups/{segment}", user_context)

    def _create_analysis(self, path: str, user_context: str | None) -> RootCauseAnalysis:
        body = validate_request(CreateAnalysisRequest, {"userContext": user_context}, "analysis request")
        return self._request(
            "POST",
            path,
            CallKind.CREATE,
            lambda r: self._model(r, RootCauseAnalysis, (200, 201, 202)),
            body=body,
        )

    def get_analysis(self, analysis_id: str) -> RootCauseAnalysis:
        """200 completed or 202 pending; check `.is_completed`."""
        path = f"/v1/root-cause-analyses/{_segment(analysis_id, 'analysis id')}"
        return self._request(
            "GET", path, CallKind.READ, lambda r: self._model(r, RootCauseAnalysis, (200, 202))
        )

    # --- incidents, maintenance windows, certificates -------------------------------------------

    def add_incident_update(
        self, incident_id: str, update: IncidentUpdateRequest | dict[str, Any]
    ) -> IncidentUpdate:
        body = validate_request(IncidentUpdateRequest, update, "incident update")
        path = f"/v1/status-pages/incidents/{_segment(incident_id, 'incident id')}/incident-updates"
        return self._request(
            "POST", path, CallKind.CREATE, lambda r: self._model(r, IncidentUpdate, (200, 201)), body=body
        )

    def delete_maintenance_window(self, window_id: str | int) -> None:
        path = f"/v1/maintenance-windows/{_window_id(window_id)}"
        self._request("DELETE", path, CallKind.READ, self._no_content)

    def delete_maintenance(self, window_id: str | int, maintenance_id: str) -> None:
        path = (
            f"/v1/maintenance-windows/{_window_id(window_id)}"
            f"/maintenances/{_segment(maintenance_id, 'maintenance id')}"
        )
        self._request("DELETE", path, CallKind.READ, self._no_content)

    def delete_client_certificate(self, certificate_id: str) -> None:
        path = f"/v1/client-certificates/{_segment(certificate_id, 'client certificate id')}"
        self._request("DELETE", path, CallKind.READ, self._no_content)

    # --- dashboards and checks ------------------------------------------------------------------

    def create_dashboard(self, request: DashboardRequest | dict[str, Any]) -> Dashboard:
        body = validate_request(DashboardRequest, request, "dashboard")
        return self._request(
            "POST",
            "/v1/dashboards",
            CallKind.CREATE,
            lambda r: self._model(r, Dashboard, (200, 201)),
            body=body,
        )

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
        path = f"/v1/checks/{_segment(check_id, 'check id')}"
        return self._request(
            "PUT",
            path,
            CallKind.CREATE,
            lambda r: self._model(r, Check),
            params={"autoAssignAlerts": "true" if auto_assign_alerts else "false"},
            body=body,
        )

    # --- the one request loop -------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        kind: CallKind,
        parse: Callable[[requests.Response], T],
        *,
        params: dict[str, Any] | None = None,
        body: BaseModel | None = None,
        read_timeout: float | None = None,
        retry: bool = True,
        answer_seconds: float | None = None,
        call_deadline: float | None = None,
    ) -> T:
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
    ) -> requests.Response:
        """One request and its whole answer, read within `answer_seconds` of wall-clock time (from
        the moment it is sent) and `max_answer_bytes` of decoded body."""
        with self.rate_limiter.slot():
            with self._count_lock:
                self._request_count += 1
            answer_deadline = time.monotonic() + answer_seconds
            try:
                with headers_by(answer_deadline):  # a status line trickled byte by byte ends here too
                    response = self._session.request(
                        method,
                        self.base_url + path,
                        params=params,
                        json=json_body,
                        timeout=(
                            min(self.connect_timeout, read_timeout or self.connect_timeout),
                            min(read_timeout or self.read_timeout, answer_seconds),
                        ),
                        allow_redirects=False,
                        stream=True,
                    )
                load_answer(response, max_bytes=self.max_answer_bytes, deadline=answer_deadline)
                return response
            except AnswerTooSlow:
                message = f"answer from {self._where} not complete within {answer_seconds:.3g} s"
                raise ReadTimeoutError(message, method=method, path=path) from None
            except AnswerTooLarge as exc:
                raise AnswerTooLargeError(f"{exc} from {self._where}", method=method, path=path) from None
            except UnknownEncoding as exc:
                message = f"answer from {self._where} in an encoding the client did not ask for ({exc})"
                raise BadResponseError(message, method=method, path=path) from None
            except zlib.error:
                raise BadResponseError(
                    f"undecodable answer from {self._where}", method=method, path=path
                ) from None
            except requests.RequestException as exc:
                raise self._transport_error(exc, method, path) from None
            except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
                raise self._body_error(exc, method, path) from None

    def _body_error(self, exc: BaseException, method: str, path: str) -> ApiError:
        """A failure while the body was read from the raw stream (urllib3's errors, not requests')."""
        if any(isinstance(c, (urllib3.exceptions.ReadTimeoutError, TimeoutError)) for c in _causes(exc)):
            message = f"no answer from {self._where} within the read timeout"
            return ReadTimeoutError(message, method=method, path=path)
        message = f"connection to {self._where} broken ({_cause_name(exc)})"
        return ConnectionFailedError(message, method=method, path=path)

    def _transport_error(self, exc: requests.RequestException, method: str, path: str) -> ApiError:
        cls: type[ApiError]
        if _never_sent(exc):
            cls, message = (
                ConnectionRefusedByPeerError,
                f"could not connect to {self._where} (request not sent)",
            )
        elif isinstance(exc, requests.Timeout):
            cls, message = ReadTimeoutError, f"no answer from {self._where} within the read timeout"
        elif isinstance(exc, requests.exceptions.ContentDecodingError):
            cls, message = BadResponseError, f"undecodable answer from {self._where}"
        elif isinstance(exc, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
            cls, message = ConnectionFailedError, f"connection to {self._where} broken ({_cause_name(exc)})"
        else:
            cls, message = ConnectionFailedError, f"request to {self._where} failed ({type(exc).__name__})"
        return cls(message, method=method, path=path)

    # --- answers --------------------------------------------------------------------------------

    def _raise_for_status(self, response: requests.Response, ok: tuple[int, ...]) -> None:
        if response.status_code in ok:
            return
        method = response.request.method or "?"
        path = urlsplit(response.request.url or "").path
        status = response.status_code
        error: str | None = None
        message = response.reason or "error"
        attributes: dict[str, Any] = {}
        if 200 <= status < 300:
            raise BadResponseError(f"unexpected status {status}", status=status, method=method, path=path)
        try:
            data = response.json()
            parsed = ErrorBody.model_validate(data)
            error, attributes = parsed.error or None, dict(parsed.attributes or {})
            message = parsed.message or parsed.error or message
        except (ValueError, ValidationError):
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
        raise cls(message, status=status, error=error, attributes=attributes, method=method, path=path)

    def _model(self, response: requests.Response, model: type[M], ok: tuple[int, ...] = (200,)) -> M:
        self._raise_for_status(response, ok)
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

    def _no_content(self, response: requests.Response) -> None:
        self._raise_for_status(response, (200, 202, 204))


def _same_session(session: TestSession, asked: str, response: requests.Response) -> TestSession:
    """Another session's answer (a proxy's cache, a service bug) must never judge this one."""
    if session.testSessionId != asked:
        raise MismatchedAnswerError(
            f"answer is for test session {session.testSessionId!r}, not the one asked for ({asked!r})",
            status=response.status_code,
            method=response.request.method or "?",
            path=urlsplit(response.request.url or "").path,
        )
    return session


def _short(exc: ApiError) -> str:
    return f"{exc.status} {exc.error or ''}".strip() if exc.status else exc.message


def _cause_name(exc: BaseException) -> str:
    """The innermost low-level reason, e.g. ConnectionResetError, RemoteDisconnected, IncompleteRead."""
    names = [type(c).__name__ for c in _causes(exc)]
    for name in reversed(names):
        if name not in ("MaxRetryError", "ProtocolError", "ConnectionError", "ChunkedEncodingError"):
            return name
    return names[-1] if names else type(exc).__name__
