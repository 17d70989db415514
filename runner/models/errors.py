"""The service's error body, shared by the client (to read it) and the emulator (to write it)."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.

from typing import Any

from runner.models.base import ApiModel

# The trigger's answer when no check matches its target: 403 with this errorCode (production's own
# CLI reads exactly this code). It is the only no-match signal besides a session with no results.
NO_MATCHING_CHECKS = "ERR_NO_MATCHING_CHECKS"

STILL_RUNNING_MESSAGE = (
    "Test session is still in progress, but maximum per-request wait time was exceeded. Please retry."
)


class ErrorBody(ApiModel):
    # Production answers a 401 with statusCode and error only, so `message` (and `error`) may be absent.
    statusCode: int
    error: str = ""
    message: str | None = None
    # A machine-readable reason beside the status (e.g. ERR_NO_MATCHING_CHECKS on a 403).
    errorCode: str | None = None
    attributes: dict[str, Any] | None = None
