"""Base classes: strict for what we send, lenient for what we receive."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class ApiModel(BaseModel):
    """A resource as the service returns it: unknown fields and enum values are kept, never fatal."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class RequestModel(BaseModel):
    """A body we send: every limit of the API document is checked before it leaves the machine."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    def to_body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def describe_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    """One line per problem: `field.path: rule`. Input strings are never echoed (they may be secrets)."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = _location(loc)
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        value = err.get("input")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and err["type"] != "missing":
            msg = f"{msg} (got {value})"
        lines.append(f"{path or '(body)'}: {msg}")
    return lines
