"""One exception hierarchy for the whole tool, mapped to exit codes in one place (`exit_code_for`)."""

from __future__ import annotations

from typing import Any

from runner.core.exitcodes import ExitCode


class TestSessionError(Exception):
    """Base of every error the tool expects and reports as one line."""

    __test__ = False  # not a pytest test class

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(TestSessionError):
    """Bad arguments or input files: nothing was sent."""


class SpecError(UsageError):
    """A target spec with one or more problems, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class InvalidRequestError(UsageError):
    """A request body that breaks a limit of the API, caught before it is sent."""


class UnknownIdError(UsageError):
    """The service has nothing under an id (or name) the user gave: the user must act (exit 2)."""


class ApiError(TestSessionError):
    """The service answered with an error status."""

    status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error: str | None = None,
        attributes: dict[str, Any] | None = None,
        method: str | None = None,
        path: str | None = None,
        error_code: str | None = None,
        service_body: bool = False,
        url: str | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.error = error
        self.attributes = attributes or {}
        self.method = method
        self.path = path
        # The body's errorCode, when the service gave one (e.g. ERR_NO_MATCHING_CHECKS).
        self.error_code = error_code
        # True when the body was the service's JSON error shape ({statusCode, error, message}):
        # a proxy's HTML page or another API's JSON is not the service speaking.
        self.service_body = service_body
        self.url = url  # the URL called (no query; the base URL never holds credentials)

    def __str__(self) -> str:
        where = f"{self.method} {self.path}: " if self.method and self.path else ""
        status = f"{self.status} {self.error or ''}".strip() if self.status else "no answer"
        code = f" [{self.error_code}]" if self.error_code else ""
        return f"{where}{status}{code}: {self.message}"


class BadRequestError(ApiError):
    status = 400


class AuthenticationError(ApiError):
    status = 401


class PaymentRequiredError(ApiError):
    status = 402


class PermissionDeniedError(ApiError):
    status = 403


class NoMatchingChecksError(PermissionDeniedError):
    """The trigger's 403 with errorCode ERR_NO_MATCHING_CHECKS: no check matched the target. The
    only answer of the trigger that means "nothing to run"; every other 403 or 404 is an error."""


class NotFoundError(ApiError):
    status = 404


class RequestTimeoutError(ApiError):
    """408 from the completion long poll: the session is still running."""

    status = 408


class ConflictError(ApiError):
    status = 409


class RateLimitedError(ApiError):
    status = 429

    @property
    def retry_after(self) -> float | None:
        value = self.attributes.get("retryAfterSeconds")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return None
        return float(value)


class ServerError(ApiError):
    """Any 5xx."""


class TransportError(ApiError):
    """No usable answer: connection failed, timed out, or a body that is not the JSON we expect."""


class ConnectionFailedError(TransportError):
    pass


class ConnectionRefusedByPeerError(ConnectionFailedError):
    """The request provably never reached the service, so even a create may be resent."""


class ReadTimeoutError(TransportError):
    pass


class BadResponseError(TransportError):
    pass


class AnswerTooLargeError(TransportError):
    """An answer body past the client's size limit: not retried, the next one would be as large."""


class MismatchedAnswerError(ApiError):
    """An answer about another object than the one asked for (e.g. another session): a service or
    proxy fault that a resend will not cure, so it is not retried."""


STATUS_ERRORS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: PaymentRequiredError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    429: RateLimitedError,
}


def error_class_for_status(status: int) -> type[ApiError]:
    if status in STATUS_ERRORS:
        return STATUS_ERRORS[status]
    if status >= 500:
        return ServerError
    return ApiError


class DeadlineExceeded(TestSessionError):
    """The run's deadline passed before the session finished."""


class BuildPortTaken(UsageError):
    """The build's URL answers before its command was started, where reuse is not allowed (in CI, as
    Playwright's reuseExistingServer): exit 2, the user must free the port or allow reuse."""


class BuildNotReady(TestSessionError):
    """The build under test (`build:`, --build-command) exited or did not answer at its URL: exit 6
    (BUILD_NOT_STARTED), nothing ran."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived before anything was triggered; carries the exit code of the signal.

    A BaseException, as KeyboardInterrupt is: the `except Exception` that keeps a broken git or CI
    variable from failing the run must not swallow a signal and let the run go on to a verdict."""

    def __init__(self, signal_name: str, code: ExitCode) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.code = code


def internal_error(exc: BaseException) -> str:
    """The words for an error the tool did not expect: a bug, exit 4, the gate could not decide."""
    return (
        f"internal error: {type(exc).__name__}: {str(exc)[:300]}; no verdict (exit 4). This is a bug in "
        "testsession: please report it with the traceback above"
    )


def exit_code_for(exc: BaseException) -> ExitCode:
    """The single mapping from an error to the exit code of the command that met it."""
    if isinstance(exc, Interrupted):
        return exc.code
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(exc, (UsageError, BadRequestError)):
        return ExitCode.USAGE
    if isinstance(exc, DeadlineExceeded):
        return ExitCode.TIMEOUT
    if isinstance(exc, BuildNotReady):
        return ExitCode.BUILD_NOT_STARTED
    if isinstance(exc, ApiError):
        return ExitCode.SERVICE
    if isinstance(exc, TestSessionError):
        return ExitCode.SERVICE
    return ExitCode.SERVICE
