"""The target spec of `testsession run`: YAML file -> validated RunSpec, flags over it, its JSON Schema.

Modules: model (pydantic models), yamlfile (reading, line numbers), problems (error
lines), loader (load_spec/parse_spec), overrides (flags), schema (JSON Schema).
"""

from runner.spec.loader import load_spec, parse_spec
from runner.spec.model import (
    CommentSettings,
    GateSettings,
    RcaSettings,
    ReportSettings,
    RunSpec,
    SessionSpec,
    WaitSettings,
)
from runner.spec.overrides import Overrides, apply_overrides, default_spec
from runner.spec.schema import spec_json_schema

__all__ = [
    "CommentSettings",
    "GateSettings",
    "Overrides",
    "RcaSettings",
    "ReportSettings",
    "RunSpec",
    "SessionSpec",
    "WaitSettings",
    "apply_overrides",
    "default_spec",
    "load_spec",
    "parse_spec",
    "spec_json_schema",
]
