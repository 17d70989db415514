"""Turning validation errors into `field.path: what is allowed` lines that never echo a value."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

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
    """The YAML kind of a value, said without showing it."""
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
            out += f".{part}" if out else part
    return out


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that validates the mapping at `loc`, if there is one."""
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


def unknown_key_message(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if not close:  # case slips (runlocation) are the commonest typo
        close = [a for a in allowed if a.lower() == key.lower()]
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field {key!r}: {hint}allowed: {', '.join(allowed)}"


def error_message(err: Any, root: type[BaseModel], loc: Loc) -> str:
    """What is allowed at `loc`, for one pydantic error; input text is never shown."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "extra_forbidden":
        model = model_at(root, loc[:-1])
        allowed = list(model.model_fields) if model else []
        return unknown_key_message(str(loc[-1]), allowed)
    if kind == "missing":
        return "required field is missing"
    if kind in _TYPE_NAMES:
        message = f"expected {_TYPE_NAMES[kind]}, got {kind_of(value)}"
        if kind == "list_type" and len(loc) >= 2 and loc[-2] == "matchTags":
            message += "; each item is a tag group (a list of tags), e.g. [[smoke], [api, checkout]]"
        return message
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '')}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_too_long":
        got = f" (got {len(value)})" if isinstance(value, str) else ""
        return f"at most {ctx.get('max_length')} characters{got}"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} items (got {ctx.get('actual_length')})"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} item(s)"
    message = str(err["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        message = f"{message} (got {value})"
    return message


def validation_problems(exc: ValidationError, root: type[BaseModel]) -> list[tuple[Loc, str]]:
    problems = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        problems.append((loc, error_message(err, root, loc)))
    return problems
