"""Fault injection, what and when: make operations of the emulator fail the ways a real service and
its proxies do.

A `FaultSpec` names an operation, a kind of failure and how often it fires; a `FaultInjector` holds the
active specs (thread-safe, deterministic with a seed) and picks the one that fires for a request. The
shell's middleware (shell/middleware.py) applies it. Phase "before" answers without running the
handler (the service did nothing); phase "after" runs the handler first (its side effects happened)
and then loses or breaks the answer, which is the case a client's retry logic must not turn into a
duplicate.
"""

from __future__ import annotations

import builtins
import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runner.models.operations import NAMES

ALL_ROUTES = "*"
# Older names a fault spec may still use: one name for several operations.
ROUTE_ALIASES: dict[str, tuple[str, ...]] = {
    "create_analysis": ("create_test_session_error_group_analysis", "create_error_group_analysis"),
}

Kind = Literal["status", "reset", "slow", "non_json", "truncated", "rate_limit"]
Phase = Literal["before", "after"]


def targets(spec_route: str, route: str) -> bool:
    """Whether a spec's `route` (a name, an alias or "*") covers the operation named `route`."""
    return spec_route in (ALL_ROUTES, route) or route in ROUTE_ALIASES.get(spec_route, ())


class FaultSpec(BaseModel):
    """One fault. Unset fields get their per-kind defaults during validation, so a dump shows them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    route: str = Field(
        description='an operation name of runner.models.operations, an alias of ROUTE_ALIASES, or "*"'
    )
    kind: Kind
    status: Literal[200, 500, 502, 503] | None = Field(
        default=None, description="kind status: 500, 502 or 503 (default 503); kind non_json: default 200"
    )
    rate: float | None = Field(default=None, ge=0, le=1, description="fraction of matching requests")
    count: int | None = Field(default=None, ge=1, description="the next N matching requests")
    delaySeconds: float | None = Field(default=None, gt=0, le=600, description="kind slow")
    retryAfterSeconds: int | None = Field(default=None, ge=0, le=3600, description="kind rate_limit")
    phase: Phase | None = Field(default=None, description="default by kind")

    @model_validator(mode="after")
    def _defaults_by_kind(self) -> FaultSpec:
        if self.route != ALL_ROUTES and self.route not in NAMES and self.route not in ROUTE_ALIASES:
            raise ValueError(f'route must be "*" or one of {", ".join((*NAMES, *ROUTE_ALIASES))}')
        if self.rate is not None and self.count is not None:
            raise ValueError("give rate or count, not both")
        if self.kind == "status":
            self.status = self.status or 503
            if self.status == 200:
                raise ValueError("kind status needs status 500, 502 or 503")
        elif self.kind == "non_json":
            self.status = self.status or 200
        elif self.status is not None:
            raise ValueError("status is only for kinds status and non_json")
        if self.kind == "slow":
            if self.delaySeconds is None:
                raise ValueError("kind slow needs delaySeconds")
        elif self.delaySeconds is not None:
            raise ValueError("delaySeconds is only for kind slow")
        if self.kind == "rate_limit":
            self.retryAfterSeconds = 1 if self.retryAfterSeconds is None else self.retryAfterSeconds
        elif self.retryAfterSeconds is not None:
            raise ValueError("retryAfterSeconds is only for kind rate_limit")
        if self.phase is None:
            self.phase = _default_phase(self.kind, self.status)
        if self.kind == "truncated" and self.phase == "before":
            raise ValueError("kind truncated needs phase after (there is no answer to truncate before)")
        return self


def _default_phase(kind: str, status: int | None) -> Phase:
    # A 503 or a 429 is the service refusing work; a 500/502, a lost or broken answer comes after it.
    if kind in ("slow", "rate_limit") or (kind == "status" and status == 503):
        return "before"
    return "after"


@dataclass
class _Active:
    spec: FaultSpec
    remaining: int | None  # count still to fire; None when the spec has no count


class FaultInjector:
    """The active faults. Thread-safe; with a seed, `rate` decisions repeat run after run."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._active: list[_Active] = []
        self._stats: dict[str, dict[str, int]] = {}

    def add(self, spec: FaultSpec) -> FaultSpec:
        with self._lock:
            self._active.append(_Active(spec.model_copy(), spec.count))
        return spec

    def set(self, specs: Iterable[FaultSpec]) -> None:
        with self._lock:
            self._active = [_Active(spec.model_copy(), spec.count) for spec in specs]

    def clear(self) -> None:
        with self._lock:
            self._active = []

    def list(self) -> builtins.list[FaultSpec]:
        """The active faults in order; `count` shows what is left to fire."""
        with self._lock:
            return [item.spec.model_copy(update={"count": item.remaining}) for item in self._active]

    @property
    def stats(self) -> dict[str, dict[str, int]]:
        """Faults fired so far: {route name: {kind: n}}."""
        with self._lock:
            return {route: dict(kinds) for route, kinds in self._stats.items()}

    def pick(self, route: str) -> FaultSpec | None:
        """The fault that fires for a request to the operation `route`, if any (the first active one
        that fires)."""
        with self._lock:
            for item in self._active:
                if not targets(item.spec.route, route) or not self._fires(item):
                    continue
                if item.remaining == 0:
                    self._active.remove(item)
                kinds = self._stats.setdefault(route, {})
                kinds[item.spec.kind] = kinds.get(item.spec.kind, 0) + 1
                return item.spec
        return None

    def _fires(self, item: _Active) -> bool:
        if item.remaining is not None:
            item.remaining -= 1
            return True
        if item.spec.rate is not None:
            return self._random.random() < item.spec.rate
        return True
