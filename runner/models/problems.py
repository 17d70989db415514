"""The one wording of a validation problem: `field.path: what is allowed`, never the value given.

Used for request bodies (client and emulator), world files and, through runner/spec/problems.py,
which adds the spec's own hints (allowed keys, did-you-mean), for spec files.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from runner.core.words import counted


def _counted(value: object, noun: str) -> str:
    """'1 character', '5 items': pydantic's limits, counted (a limit it did not give: as it is)."""
    return counted(value, noun) if isinstance(value, int) else f"{value} {noun}s"


Loc = tuple[str | int, ...]

_TYPE_NAMES = {
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "list_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
}


def kind_of(value: Any) -> str:
    """The YAML/JSON kind of a value, said without showing it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def clean_loc(loc: tuple[Any, ...]) -> Loc:
    """The field path without pydantic's internal steps (validator function names)."""
    return tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))


def error_message(err: Any) -> str:
    """What is allowed, for one pydantic error; input text is never shown (it may be a secret)."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in _TYPE_NAMES:
        return f"expected {_TYPE_NAMES[kind]}, got {kind_of(value)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '')}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_too_long":
        got = f" (got {len(value)})" if isinstance(value, str) else ""
        return f"at most {_counted(ctx.get('max_length'), 'character')}{got}"
    if kind == "too_long":
        return f"at most {_counted(ctx.get('max_length'), 'item')} (got {ctx.get('actual_length')})"
    if kind == "too_short":
        return f"at least {_counted(ctx.get('min_length'), 'item')}"
    message = str(err["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        message = f"{message} (got {value})"
    return message


def describe_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    """One line per problem: `field.path: what is allowed`."""
    lines = []
    for err in exc.errors(include_url=False):
        path = format_loc(clean_loc(err["loc"]))
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        lines.append(f"{path or '(body)'}: {error_message(err)}")
    return lines
