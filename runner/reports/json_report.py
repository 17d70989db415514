"""results.json: the Outcome as documented, stable JSON (see runner/job/outcome.py, schemaVersion)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from runner.core.errors import UsageError
from runner.core.words import counted
from runner.job.outcome import SCHEMA_VERSION, Outcome, ResultOutcome
from runner.models.base import describe_validation_error

_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def render_json(outcome: Outcome) -> str:
    """`outcome.model_dump_json(indent=2)`: json_bytes as text."""
    return json_bytes(outcome).decode("utf-8")


def json_bytes(outcome: Outcome) -> bytes:
    """results.json's bytes, as `outcome.model_dump_json(indent=2)` encodes them: pydantic writes
    bytes, and a writer that takes these needs no text of 6 MiB (10,000 results) made and encoded
    again.

    A lone surrogate (from a `\\udXXX` escape in a service answer) cannot be written as UTF-8; only
    then the strings are copied with each one replaced by U+FFFD, so one bad character never costs
    the file.
    """
    try:
        return outcome.__pydantic_serializer__.to_json(outcome, indent=2)
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        fixed = Outcome.model_validate(_without_surrogates(outcome.model_dump()))
        return fixed.__pydantic_serializer__.to_json(fixed, indent=2)


# Where a session's results go in the JSON of an outcome whose sessions have none: a session's own
# key (indent=2: sessions are items of the outcome's list, their keys 6 spaces in). Only a session has
# a `results` field; a text that holds these characters is escaped (`\"results\"`), never this.
_NO_RESULTS = b'\n      "results": []'
_RESULT_INDENT = b"        "  # a result is an item of its session's list: 8 spaces in


def json_chunks(outcome: Outcome) -> Iterator[bytes]:
    """json_bytes(outcome) in pieces, a result at a time: a writer never holds the whole file (6.7 MiB
    at 10,000 results, and pydantic's growing buffer beside it: +13 MiB of peak at the end of a run).
    The outcome without its results is written once; each session's results are written in its
    place, one by one, indented as the whole would have them (a JSON text has no line break inside a
    string: every line of a result is shifted alike)."""
    bare = outcome.model_copy(
        update={"sessions": [s.model_copy(update={"results": []}) for s in outcome.sessions]}
    )
    pieces = _to_json(bare).split(_NO_RESULTS)
    if len(pieces) != len(outcome.sessions) + 1:  # never: the whole, as json_bytes writes it
        yield json_bytes(outcome)
        return
    yield pieces[0]
    for session, after in zip(outcome.sessions, pieces[1:], strict=True):
        if not session.results:
            yield _NO_RESULTS
        else:
            yield b'\n      "results": [\n'
            last = len(session.results) - 1
            for index, result in enumerate(session.results):
                text = _to_json(result)
                yield _RESULT_INDENT + text.replace(b"\n", b"\n" + _RESULT_INDENT)
                yield b"\n" if index == last else b",\n"
            yield b"      ]"
        yield after


def _to_json(value: Outcome | ResultOutcome) -> bytes:
    """`value.model_dump_json(indent=2)`'s bytes; lone surrogates replaced by U+FFFD (json_bytes)."""
    try:
        return value.__pydantic_serializer__.to_json(value, indent=2)
    except ValueError:  # PydanticSerializationError: surrogates not allowed
        fixed = type(value).model_validate(_without_surrogates(value.model_dump()))
        return fixed.__pydantic_serializer__.to_json(fixed, indent=2)


def load_outcome(text: str, source: str) -> Outcome:
    """A saved results.json back as an Outcome; UsageError with one line naming `source` if it is not."""
    try:
        outcome = Outcome.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            detail = str(errors[0]["msg"]).removeprefix("Invalid JSON: ")
            raise UsageError(f"{source}: not valid JSON ({detail})") from None
        version = _schema_version(text)
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise UsageError(_newer(source, version)) from None
        problems = describe_validation_error(exc)
        more = f" (and {counted(len(problems) - 1, 'more problem')})" if len(problems) > 1 else ""
        raise UsageError(
            f"{source}: not a testsession results file: {problems[0] if problems else exc.title}{more}"
        ) from None
    if "schemaVersion" not in outcome.model_fields_set:
        raise UsageError(
            f"{source}: not a testsession results file: schemaVersion: required field is missing "
            f"(expected {SCHEMA_VERSION})"
        )
    if outcome.schemaVersion > SCHEMA_VERSION:
        raise UsageError(_newer(source, outcome.schemaVersion))
    if outcome.schemaVersion < 1:
        raise UsageError(f"{source}: schemaVersion {outcome.schemaVersion} is not valid (expected 1)")
    if outcome.world == "checks" and outcome.service == "emulator":
        # Written before a checks file's run said where it ran: by the engine here, not the emulator.
        outcome = outcome.model_copy(update={"service": "local"})
    return outcome


def _newer(source: str, version: int) -> str:
    return (
        f"{source}: schemaVersion {version} was written by a newer testsession; "
        f"this one reads schemaVersion {SCHEMA_VERSION}: upgrade testsession-runner"
    )


def _schema_version(text: str) -> object:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data.get("schemaVersion") if isinstance(data, dict) else None
