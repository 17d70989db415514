"""The emulator's error answers as values: the core raises them; the service's error body they become
(`error_body`) is written here once, for the API's answers (core/answers.py, in process and over HTTP)
and the shell's control API and pages (shell/errors.py) alike."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from runner.models import ErrorBody


def reason(status: int) -> str:
    """The status's reason phrase ("Not Found"), as the service writes it in `error`."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def error_body(
    status: int,
    message: str | None = None,
    attributes: dict[str, Any] | None = None,
    error_code: str | None = None,
) -> ErrorBody:
    """The service's error body; `message` defaults to the reason phrase."""
    return ErrorBody(
        statusCode=status,
        error=reason(status),
        message=reason(status) if message is None else message,
        # Left unset when there are none: no `attributes: null` or `errorCode: null` on the wire.
        **({} if attributes is None else {"attributes": attributes}),
        **({} if error_code is None else {"errorCode": error_code}),
    )


class ApiFailure(Exception):
    """An error answer of the API: status, message and optional attributes and headers."""

    def __init__(
        self,
        status: int,
        message: str,
        attributes: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        error_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.attributes = attributes
        self.headers = headers or {}
        self.error_code = error_code  # the body's errorCode, e.g. ERR_NO_MATCHING_CHECKS


def not_found(what: str) -> ApiFailure:
    return ApiFailure(404, f"{what} not found")
