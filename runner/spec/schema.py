"""The JSON Schema of a spec file, for editors (yaml-language-server) and for `testsession schema`."""

from __future__ import annotations

import copy
from typing import Any

from runner.spec.model import SESSION_KEYS, RunSpec

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ENV_REFERENCE = r"^(?:[^$]|\$\$\{|\$(?!\{))*\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}.*$"

# The shared API models carry no descriptions of their own; these are the spec's.
_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "Target": {
        "matchTags": "Tag groups: a check matches a group when it has every tag of the group, and the "
        "target when it matches any group. Example: [[smoke], [api, checkout]].",
        "checkId": "Explicit check ids (UUIDs). With matchTags too, a check must pass both filters.",
        "allowDeactivated": "Also run deactivated checks.",
    },
    "EnvironmentVariable": {
        "key": "Variable name.",
        "value": "Value (text; null for none).",
        "secret": "Masked in every output and report of the runner, and secret in the service.",
        "locked": "Locked variable.",
    },
    "RetryStrategy": {
        "type": "Backoff between retries.",
        "baseBackoffSeconds": "Seconds before the first retry.",
        "maxRetries": "Retries of a failed check run, 1 to 10 (not with SINGLE_RETRY: it retries once).",
        "maxDurationSeconds": "Longest time spent retrying, 0 to 600 seconds (not with SINGLE_RETRY).",
        "sameRegion": "Retry in the same location.",
        "onlyOn": "Retry only on these kinds of failure, e.g. [NETWORK_ERROR].",
    },
    "SessionMetadata": {
        "environment": "Where the build under test runs, e.g. preview or staging.",
        "repoUrl": "Repository URL (credentials are stripped). Default: from CI or git origin.",
        "commitId": "Commit sha. Default: from CI or git HEAD.",
        "commitOwner": "Commit author. Default: from CI or git.",
        "commitMessage": "First line of the commit message. Default: from CI or git.",
        "branchName": "Branch. Default: from CI or git (empty on a detached HEAD).",
        "github": "GitHub reporting details; filled automatically in GitHub Actions.",
    },
}


def _allow_references(node: Any) -> Any:
    """Numbers, booleans and enums may also be written as ${VAR} (expanded before validation)."""
    if isinstance(node, list):
        return [_allow_references(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _allow_references(v) for k, v in node.items()}
    if node.get("type") in ("number", "integer", "boolean") or "enum" in node or "const" in node:
        keep = {k: node.pop(k) for k in ("description", "default", "title") if k in node}
        return {**keep, "anyOf": [node, {"$ref": "#/$defs/EnvReference"}]}
    return node


def _environment_variables(items: dict[str, Any]) -> dict[str, Any]:
    text = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]}
    mapping = {
        "type": "object",
        "description": "KEY: value, or KEY: {value, secret, locked}.",
        "maxProperties": 50,
        "additionalProperties": {
            "anyOf": [
                text,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "value": text,
                        "secret": {"type": "boolean"},
                        "locked": {"type": "boolean"},
                    },
                },
            ]
        },
    }
    description = items.pop("description", "")
    default = items.pop("default", None)
    return {"description": description, "default": default, "anyOf": [items, mapping]}


def spec_json_schema() -> dict[str, Any]:
    schema = RunSpec.model_json_schema()
    defs = schema.setdefault("$defs", {})
    for model, fields in _DESCRIPTIONS.items():
        for name, text in fields.items():
            prop = defs.get(model, {}).get("properties", {}).get(name)
            if prop is not None:
                prop.setdefault("description", text)
    session = defs["SessionSpec"]
    session["properties"]["environmentVariables"] = _environment_variables(
        session["properties"]["environmentVariables"]
    )
    schema["properties"]["sessions"]["minItems"] = 1
    comment = schema["properties"]["comment"]
    schema["properties"]["comment"] = {
        "description": comment.pop("description", ""),
        "anyOf": [{"type": "boolean"}, comment],
    }
    # The single-session form: a session's fields at the top level, beside the settings.
    for key in SESSION_KEYS:
        schema["properties"][key] = copy.deepcopy(session["properties"][key])
    schema["anyOf"] = [
        {"required": ["sessions"], "not": {"required": ["runLocation"]}},
        {"required": ["runLocation"], "not": {"required": ["sessions"]}},
    ]
    schema = _allow_references(schema)
    schema["$defs"]["EnvReference"] = {
        "type": "string",
        "pattern": ENV_REFERENCE,
        "description": "A ${VAR} or ${VAR:-default} reference, expanded from the environment.",
    }
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "testsession target spec",
        "description": (
            "The target spec of `testsession run SPEC`: one or more test sessions (under sessions:, or "
            "a single session's fields at the top level) and the wait, rca, reports, gate and comment "
            "settings. "
            "Any string value may use ${VAR} or ${VAR:-default}, expanded from the environment "
            "($${ is a literal ${); an unset variable without a default is an error."
        ),
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }
