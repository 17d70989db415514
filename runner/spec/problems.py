"""Turning validation errors into `field.path: what is allowed` lines that never echo a value."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from runner.models.problems import Loc, clean_loc, format_loc, kind_of
from runner.models.problems import error_message as models_error_message

__all__ = ["Loc", "format_loc", "kind_of", "unknown_key_message", "validation_problems"]


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
    """What is allowed at `loc`: the models' wording, plus the spec's hints (allowed keys)."""
    kind = err["type"]
    if kind == "extra_forbidden":
        model = model_at(root, loc[:-1])
        allowed = list(model.model_fields) if model else []
        return unknown_key_message(str(loc[-1]), allowed)
    message = models_error_message(err)
    if kind == "list_type" and len(loc) >= 2 and loc[-2] == "matchTags":
        message += "; each item is a tag group (a list of tags), e.g. [[smoke], [api, checkout]]"
    return message


def validation_problems(exc: ValidationError, root: type[BaseModel]) -> list[tuple[Loc, str]]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = clean_loc(err["loc"])
        problems.append((loc, error_message(err, root, loc)))
    return problems
