"""A real failure's evidence (`Attempt`) as JSON data and back: what the state file keeps of an error
group's latest failure, so that a group known from an earlier run is analysed from the same evidence
(status, timing phases, body excerpt, failed assertion, request) after a restart.

Bounded: at most MAX_EVIDENCE_CHARS of JSON per group. Over it, the list of every assertion, all
but MAX_HEADERS request headers and all but the last MAX_CONSOLE_LINES console lines of a child
process go first (the analyser reads the failed assertion and the request line), then every text is
cut to MAX_TEXT_CHARS; what still does not fit is not stored (the group
then keeps its message only, as a scripted failure has). Every text was masked when the attempt was
made (outcome.py): nothing here can hold a secret the attempt did not already hide.
Reading is lenient: data of an unknown or broken shape gives None, never an exception; an error class
or kind this version does not know (a newer file) reads as None.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import (
    AssertionResult,
    Attempt,
    EvidenceFile,
    RequestSummary,
    Step,
    SuiteTest,
    TimingPhases,
)

MAX_EVIDENCE_CHARS = 16_384
MAX_HEADERS = 20
MAX_TEXT_CHARS = 1_000
MAX_CONSOLE_LINES = 10  # the last lines: where a script's failure shows
_CHILD_FIELDS = ("steps", "console", "files", "tests")


def to_data(attempt: Attempt) -> dict[str, Any] | None:
    """The attempt as JSON data within MAX_EVIDENCE_CHARS, or None when it cannot be made to fit."""
    data = dataclasses.asdict(attempt)
    del data["traceback"]  # an internal error's: the run prints it; a group's analysis does not read it
    for name in _CHILD_FIELDS:  # a child's evidence, only when there is some: files stay as they were
        if not data[name]:
            del data[name]
    if _size(data) <= MAX_EVIDENCE_CHARS:
        return data
    data["assertions"] = []
    if data.get("request"):
        data["request"]["headers"] = data["request"]["headers"][:MAX_HEADERS]
    if data.get("console"):
        data["console"] = data["console"][-MAX_CONSOLE_LINES:]
    if _size(data) <= MAX_EVIDENCE_CHARS:
        return data
    data = _cut(data)
    return data if _size(data) <= MAX_EVIDENCE_CHARS else None


def from_data(data: Any) -> Attempt | None:
    """The attempt `to_data` wrote; None for anything else."""
    if not isinstance(data, dict):
        return None
    try:
        fields = dict(data)
        fields["timing"] = TimingPhases(**fields["timing"]) if fields.get("timing") else None
        failed = fields.get("failed_assertion")
        fields["failed_assertion"] = AssertionResult(**failed) if failed else None
        fields["assertions"] = tuple(AssertionResult(**item) for item in fields.get("assertions") or ())
        request = fields.get("request")
        if request:
            headers = tuple((str(key), str(value)) for key, value in request.get("headers") or ())
            fields["request"] = RequestSummary(**{**request, "headers": headers})
        fields["error_class"] = ErrorClass.read(fields.get("error_class"))
        fields["error_kind"] = FailureKind.read(fields.get("error_kind"))
        fields["steps"] = tuple(Step(**item) for item in fields.get("steps") or ())
        fields["console"] = tuple(str(line) for line in fields.get("console") or ())
        fields["files"] = tuple(EvidenceFile(**item) for item in fields.get("files") or ())
        fields["tests"] = tuple(SuiteTest(**item) for item in fields.get("tests") or ())
        known = {f.name for f in dataclasses.fields(Attempt)}
        return Attempt(**{name: value for name, value in fields.items() if name in known})
    except (TypeError, ValueError, AttributeError):
        return None


def _size(data: dict[str, Any]) -> int:
    return len(json.dumps(data, ensure_ascii=False))


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value[: MAX_TEXT_CHARS - 1] + "…" if len(value) > MAX_TEXT_CHARS else value
    if isinstance(value, (list, tuple)):
        return [_cut(item) for item in value]
    if isinstance(value, dict):
        return {key: _cut(item) for key, item in value.items()}
    return value
