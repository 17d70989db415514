"""The /_emulator/ control API for tests and demos. Not part of the service: no rate limit, not in
/openapi.json; open on loopback, behind the control token when one is set (see access.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure
from runner.emulator.core.faults import FaultSpec
from runner.emulator.core.world import WorldError, parse_world_text
from runner.emulator.shell.access import control_guard


class Advance(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(ge=0)


class RevokeKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(min_length=1)


class SettingsPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rateLimit: dict[str, float] | None = None
    analysisDelaySeconds: float | None = Field(default=None, ge=0)
    speed: float | None = Field(default=None, gt=0)


MAX_WORLD_BYTES = 1_000_000  # a world is a few kilobytes


async def _body_text(request: Request) -> str:
    """The request body as text, read at most MAX_WORLD_BYTES far (413 beyond)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_WORLD_BYTES:
            raise ApiFailure(413, f"world larger than {MAX_WORLD_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def build_router(backend: Backend, control_token: str | None = None) -> APIRouter:
    router = APIRouter(prefix="/_emulator", dependencies=[Depends(control_guard(control_token))])

    @router.post("/reset", status_code=204)
    async def reset() -> Response:
        backend.reset()
        return Response(status_code=204)

    @router.post("/world", status_code=204)
    async def load_world(request: Request) -> Response:
        text = await _body_text(request)
        try:
            # Parsing and validating run in a worker thread: the event loop keeps serving meanwhile.
            world = await run_in_threadpool(parse_world_text, text, "world")
        except WorldError as exc:
            raise ApiFailure(400, str(exc)) from None
        backend.load(world)
        return Response(status_code=204)

    @router.post("/clock/advance")
    async def advance(body: Advance) -> dict[str, Any]:
        backend.advance(body.seconds)
        return {"now": backend.clock.iso(backend.clock.now())}

    @router.get("/faults")
    async def list_faults() -> list[dict[str, Any]]:
        return [spec.model_dump(mode="json") for spec in backend.faults.list()]

    @router.post("/faults")
    async def add_faults(specs: list[FaultSpec] = Body(...)) -> list[dict[str, Any]]:
        for spec in specs:
            backend.faults.add(spec)
        return [spec.model_dump(mode="json") for spec in backend.faults.list()]

    @router.delete("/faults", status_code=204)
    async def clear_faults() -> Response:
        backend.faults.clear()
        return Response(status_code=204)

    @router.post("/keys/revoke", status_code=204)
    async def revoke(body: RevokeKey) -> Response:
        if not backend.revoke_key(body.key):
            raise ApiFailure(404, "Unknown key")
        return Response(status_code=204)

    @router.patch("/settings")
    async def settings(body: SettingsPatch) -> dict[str, Any]:
        rate = body.rateLimit or {}
        unknown = set(rate) - {"limit", "windowSeconds"}
        if unknown or any(v <= 0 for v in rate.values()):
            raise ApiFailure(400, "rateLimit: allowed fields are limit and windowSeconds, both > 0")
        return backend.update_settings(
            limit=int(rate["limit"]) if "limit" in rate else None,
            window_seconds=rate.get("windowSeconds"),
            analysis_delay=body.analysisDelaySeconds,
            speed=body.speed,
        )

    @router.get("/settings")
    async def get_settings() -> dict[str, Any]:
        return backend.settings_view()

    @router.get("/stats")
    async def stats() -> dict[str, Any]:
        return backend.stats()

    return router
