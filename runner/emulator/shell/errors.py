"""Every error leaves the emulator in the service's shape
{statusCode, error, message[, errorCode][, attributes]}."""

from __future__ import annotations

from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from runner.emulator.core.failures import ApiFailure, error_body, reason
from runner.models import describe_validation_error


def error_response(
    status: int,
    message: str,
    attributes: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    error_code: str | None = None,
) -> JSONResponse:
    body = error_body(status, message, attributes, error_code).model_dump(mode="json", exclude_unset=True)
    return JSONResponse(body, status_code=status, headers=headers)


class _Errors:
    """Presents FastAPI's validation errors the way describe_validation_error reads pydantic's."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self._errors = errors

    def errors(self, include_url: bool = False) -> list[dict[str, Any]]:
        return self._errors


def validation_message(exc: RequestValidationError) -> str:
    errors = []
    for err in exc.errors():
        err = dict(err)
        loc = tuple(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            return "body: invalid JSON"
        if loc[:1] == ("body",):
            loc = loc[1:]
        err["loc"] = loc
        errors.append(err)
    lines = describe_validation_error(cast(Any, _Errors(errors)))
    return "; ".join(lines) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_failure(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiFailure)
        return error_response(exc.status, exc.message, exc.attributes, exc.headers, exc.error_code)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(400, validation_message(exc))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        message = exc.detail if isinstance(exc.detail, str) else "error"
        return error_response(exc.status_code, message, headers=dict(exc.headers or {}))

    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        return error_response(500, reason(500))

    app.add_exception_handler(ApiFailure, on_api_failure)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
