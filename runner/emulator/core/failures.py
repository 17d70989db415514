"""The emulator's error answers as values: the core raises them, the shell turns them into the
service's error body (shell/errors.py)."""

from __future__ import annotations

from typing import Any


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
