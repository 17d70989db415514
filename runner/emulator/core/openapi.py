"""The emulator's OpenAPI document, written from the operation table (runner/models/operations.py):
each row's method, path, path and query parameters (the models answers.py validates a request with),
request and response models, statuses, summary and deprecation. The models' schemas are pydantic's
(a request's in validation mode, an answer's in serialization mode), under components/schemas."""

from __future__ import annotations

import functools
from http import HTTPStatus
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from runner.emulator.core.answers import path_model, query_model
from runner.models import ErrorBody
from runner.models.operations import OPERATIONS, Operation

TITLE = "Monitoring service API (testsession emulator)"
DESCRIPTION = (
    "Local emulation of the monitoring service's public API. The /_emulator/ control routes and the "
    "HTML result pages are not part of the service and not listed here."
)
_REFS = "#/components/schemas/{model}"
_BEARER = "HTTPBearer"


@functools.cache
def document(account_header: str) -> dict[str, Any]:
    """The document of an emulator whose account header is `account_header` (the world's)."""
    keyed: list[tuple[type[BaseModel], Any]] = [(ErrorBody, "serialization")]
    keyed += [(op.request, "validation") for op in OPERATIONS if op.request]
    keyed += [(op.response, "serialization") for op in OPERATIONS if op.response]
    keyed = list(dict.fromkeys(keyed))
    refs, top = models_json_schema(keyed, ref_template=_REFS)

    def ref(model: type[BaseModel], mode: str) -> dict[str, Any]:
        return dict(refs[(model, mode)])  # type: ignore[index]

    header = {
        "name": account_header,
        "in": "header",
        "required": False,
        "description": "Account id (uuid)",
        "schema": {"type": "string", "description": "Account id (uuid)"},
    }
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        entry: dict[str, Any] = {
            "operationId": op.name,
            "summary": op.summary,
            "parameters": [*_parameters(op), header],
            "responses": _responses(op, ref),
            "security": [{_BEARER: []}],
        }
        if op.request is not None:
            schema = ref(op.request, "validation")
            if not op.body_required:
                schema = {"anyOf": [schema, {"type": "null"}]}
            entry["requestBody"] = {
                "content": {"application/json": {"schema": schema}},
                "required": op.body_required,
            }
        if op.deprecated:
            entry["deprecated"] = True
        paths.setdefault(op.template, {})[op.method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": "v1", "description": DESCRIPTION},
        "paths": paths,
        "components": {
            "schemas": top.get("$defs", {}),
            "securitySchemes": {
                _BEARER: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "API key: `Authorization: Bearer <API_KEY>`",
                }
            },
        },
    }


def _parameters(op: Operation[Any]) -> list[dict[str, Any]]:
    """The path's and the query's parameters, their schemas those of the models that validate them."""
    found = []
    for where, model in (("path", path_model(op.name)), ("query", query_model(op.name))):
        properties = model.model_json_schema()["properties"]
        for name, schema in properties.items():
            parameter = {"name": name, "in": where, "required": where == "path", "schema": schema}
            if "description" in schema:
                parameter["description"] = schema["description"]
            found.append(parameter)
    return found


def _responses(op: Operation[Any], ref: Any) -> dict[str, Any]:
    def success(status: int) -> dict[str, Any]:
        answer: dict[str, Any] = {"description": HTTPStatus(status).phrase}
        if op.response is not None:
            answer["content"] = {"application/json": {"schema": ref(op.response, "serialization")}}
        return answer

    error = {
        "description": "Error",
        "content": {"application/json": {"schema": ref(ErrorBody, "serialization")}},
    }
    return {
        **{str(status): success(status) for status in (op.status, *op.also)},
        **{str(status): error for status in op.errors},
    }
