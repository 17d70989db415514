"""The one wording of a validation problem: `field.path: what is allowed`, never the value given.

Used for request bodies (client and emulator), world files and, through runner/spec/problems.py,
which adds the spec's own hints (allowed keys, did-you-mean), for spec files.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

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
        least = ctx.get("min_length")
        return (
            f"at least {_counted(least, 'character')}"
            if isinstance(least, int) and least > 1
            else "must not be empty"
        )
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


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


@functools.lru_cache(maxsize=1024)
def model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that validates the mapping at `loc`, if there is one (cached: a file of 10,000
    checks asks the same few questions 10,000 times, and each answer unwraps type annotations)."""
    current: Any = root
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            if typing.get_origin(current) is not list or not args:
                return None
            current = args[0]
        elif isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = current.model_fields[part].annotation
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def unknown_key_message(key: str, allowed: list[str], likely: Mapping[str, str] | None = None) -> str:
    """`likely`: what a key that looks like none of `allowed` is usually meant as (path -> property)."""
    close = [likely[key]] if likely and likely.get(key) in allowed else []
    if not close:
        import difflib  # only for a key that is wrong: not on every run's start-up path

        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if not close:  # case slips (runlocation) are the commonest typo
        close = [a for a in allowed if a.lower() == key.lower()]
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field {key!r}: {hint}allowed: {', '.join(allowed)}"


def described_with_hints(exc: ValidationError, root: type[BaseModel]) -> list[tuple[Loc, str]]:
    """(field path, what is allowed) per problem; an unknown field gets the allowed ones and a
    did-you-mean, as spec files do."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = clean_loc(err["loc"])
        if err["type"] == "extra_forbidden" and loc:
            model = model_at(root, loc[:-1])
            message = unknown_key_message(str(loc[-1]), list(model.model_fields) if model else [])
        else:
            message = error_message(err)
        problems.append((loc, message))
    return problems


def describe_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    """One line per problem: `field.path: what is allowed`."""
    lines = []
    for err in exc.errors(include_url=False):
        path = format_loc(clean_loc(err["loc"]))
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        lines.append(f"{path or '(body)'}: {error_message(err)}")
    return lines
