"""Base classes: strict for what we send, lenient for what we receive."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from runner.models.problems import describe_validation_error

__all__ = [
    "ApiModel",
    "RequestModel",
    "describe_validation_error",
    "empty_dict",
    "empty_list",
]

# A model's validator is built when it is first used, not when its module is imported
# (pydantic's `defer_build`): the API has ~60 models and a run uses a few. A request body too: a
# checks file's run imports the trigger body's models with the spec, and never validates or sends
# one (~1 ms of start-up each, when they were built at import).


class ApiModel(BaseModel):
    """A resource as the service returns it: unknown fields and enum values are kept, never fatal."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class RequestModel(BaseModel):
    """A body we send: every limit of the API document is checked before it leaves the machine."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, validate_assignment=True, defer_build=True
    )

    def to_body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# The modules of models that a run builds (the resources, sessions, check definitions, spec, outcome)
# write real annotations, without `from __future__ import annotations`: pydantic compiles each
# string annotation (typing.ForwardRef) when it creates a model class, ~600 compilations in a
# one-check run (~2% of its start-up); real ones it reads as they are. A name defined further down
# is quoted where it is used.


# A field that starts empty: `Field(default_factory=empty_list)`, not `default_factory=list`. When a
# validator is built, pydantic reads its default factory's signature, and a builtin's is parsed from
# its text (inspect tokenizes it: compiling tokenize's patterns alone was ~1% of a one-check run's
# start-up); a function's is read directly. The value is the same fresh `[]` or `{}`.


def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[str, Any]:
    return {}
