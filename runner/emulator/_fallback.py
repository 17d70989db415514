"""TEMPORARY stand-ins until faults.py and analyser.py land (deleted then)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="allow")


class FaultInjector:
    def __init__(self, seed: int = 0) -> None:
        self._specs: list[FaultSpec] = []

    def set(self, specs: list[FaultSpec]) -> None:
        self._specs = list(specs)

    def add(self, spec: FaultSpec) -> None:
        self._specs.append(spec)

    def clear(self) -> None:
        self._specs = []

    def list(self) -> list[FaultSpec]:
        return list(self._specs)


class FaultMiddleware:
    def __init__(self, app: Any, injector: FaultInjector) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)
