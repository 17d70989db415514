"""Turning validation errors into `field.path: what is allowed` lines that never echo a value."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from runner.models.problems import Loc, clean_loc, format_loc, kind_of, model_at, unknown_key_message
from runner.models.problems import error_message as models_error_message

__all__ = ["Loc", "format_loc", "kind_of", "unknown_key_message", "validation_problems"]


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
