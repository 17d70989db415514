"""The service's error body, shared by the client (to read it) and the emulator (to write it)."""

from __future__ import annotations

from typing import Any

from runner.models.base import ApiModel

STILL_RUNNING_MESSAGE = (
    "Test session is still in progress, but maximum per-request wait time was exceeded. Please retry."
)


class ErrorBody(ApiModel):
    # Production answers a 401 with statusCode and error only, so `message` (and `error`) may be absent.
    statusCode: int
    error: str = ""
    message: str | None = None
    attributes: dict[str, Any] | None = None
