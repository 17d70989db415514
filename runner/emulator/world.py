"""The world file: accounts, keys, checks and their behaviour, plus settings; validated with clear errors."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.core.errors import UsageError
from runner.core.yamlguard import TooLarge, safe_load_bounded
from runner.models import describe_validation_error
from runner.models.resources import CHECK_LOCATIONS

DEFAULT_WORLD = Path(__file__).with_name("world.yml")
Behaviour = Literal["pass", "fail", "degrade", "flaky", "error", "hang"]
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class WorldError(UsageError):
    """A world file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    # Typos in a world file should fail loudly, not be ignored.
    model_config = ConfigDict(extra="forbid")


class RateLimit(_Strict):
    limit: int = Field(default=600, ge=1)
    windowSeconds: float = Field(default=60, gt=0)


class Settings(_Strict):
    speed: float = Field(default=1.0, gt=0)
    rateLimit: RateLimit = Field(default_factory=RateLimit)
    analysisDelaySeconds: float = Field(default=2.0, ge=0)
    locations: list[str] = Field(default_factory=lambda: list(CHECK_LOCATIONS), min_length=1)
    seed: int = 0
    faults: list[dict[str, Any]] = Field(default_factory=list)


class Plan(_Strict):
    testSessions: bool = True
    analyses: bool = True


class Key(_Strict):
    key: str = Field(min_length=8)
    role: Literal["read-write", "read-only"] = "read-write"


class Rule(_Strict):
    """Overrides a check's behaviour when every listed environment variable arrived with that value."""

    env: dict[str, str] = Field(min_length=1)
    behaviour: Behaviour | None = None
    errorMessage: str | None = None


class WorldCheck(_Strict):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    checkType: str = "API"
    tags: list[str] = Field(default_factory=list)
    activated: bool = True
    locations: list[str] = Field(default_factory=list)
    frequency: int = 10
    frequencyOffset: int | None = None
    behaviour: Behaviour = "pass"
    durationSeconds: float = Field(default=1.0, ge=0)
    errorMessage: str | None = None
    when: list[Rule] = Field(default_factory=list)


class Incident(_Strict):
    id: str = Field(min_length=1)
    name: str = ""


class MaintenanceWindow(_Strict):
    id: str = Field(min_length=1)
    maintenances: list[str] = Field(default_factory=list)


class ClientCertificate(_Strict):
    id: str = Field(min_length=1)


class ExistingAnalysis(_Strict):
    id: str = Field(min_length=1)
    userContext: str | None = None


class WorldErrorGroup(_Strict):
    """A check error group that already exists, optionally with completed analyses."""

    id: str = Field(min_length=1)
    checkId: str = Field(min_length=1)
    rawErrorMessage: str = Field(min_length=1)
    analyses: list[ExistingAnalysis] = Field(default_factory=list)


class WorldDashboard(_Strict):
    header: str = "Status"
    customUrl: str | None = None
    customDomain: str | None = None


class Account(_Strict):
    id: str = Field(min_length=1)
    name: str = ""
    plan: Plan = Field(default_factory=Plan)
    keys: list[Key] = Field(min_length=1)
    checks: list[WorldCheck] = Field(default_factory=list)
    incidents: list[Incident] = Field(default_factory=list)
    maintenanceWindows: list[MaintenanceWindow] = Field(default_factory=list)
    clientCertificates: list[ClientCertificate] = Field(default_factory=list)
    errorGroups: list[WorldErrorGroup] = Field(default_factory=list)
    dashboards: list[WorldDashboard] = Field(default_factory=list)


class World(_Strict):
    settings: Settings = Field(default_factory=Settings)
    accounts: list[Account] = Field(min_length=1)

    def first_key(self) -> tuple[str, str]:
        """(api key, account id) of the first read-write key of the first account."""
        account = self.accounts[0]
        for key in account.keys:
            if key.role == "read-write":
                return key.key, account.id
        return account.keys[0].key, account.id


def _expand(value: Any, source: str) -> Any:
    if isinstance(value, str):

        def repl(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = os.environ.get(name)
            if found:
                return found
            if default is not None:
                return default
            raise WorldError(f"{source}: environment variable {name} is not set and has no default")

        return _VAR.sub(repl, value)
    if isinstance(value, list):
        return [_expand(item, source) for item in value]
    if isinstance(value, dict):
        return {key: _expand(item, source) for key, item in value.items()}
    return value


def _consistency_problems(world: World) -> list[str]:
    problems: list[str] = []
    keys: set[str] = set()
    ids: set[str] = set()
    for a, account in enumerate(world.accounts):
        if account.id in ids:
            problems.append(f"accounts[{a}].id: duplicate account id")
        ids.add(account.id)
        for k, key in enumerate(account.keys):
            if key.key in keys:
                problems.append(f"accounts[{a}].keys[{k}].key: the same key is listed twice")
            keys.add(key.key)
        check_ids = {check.id for check in account.checks}
        if len(check_ids) != len(account.checks):
            problems.append(f"accounts[{a}].checks: check ids must be unique")
        for g, group in enumerate(account.errorGroups):
            if group.checkId not in check_ids:
                problems.append(f"accounts[{a}].errorGroups[{g}].checkId: no check of this account has it")
        for c, check in enumerate(account.checks):
            for location in check.locations:
                if location not in world.settings.locations:
                    problems.append(
                        f"accounts[{a}].checks[{c}].locations: {location!r} is not in settings.locations"
                    )
    return problems


def _fault_problems(world: World) -> list[str]:
    from runner.emulator.faults import FaultSpec

    problems: list[str] = []
    for index, spec in enumerate(world.settings.faults):
        try:
            FaultSpec.model_validate(spec)
        except ValidationError as exc:
            problems += describe_validation_error(exc, f"settings.faults[{index}]")
    return problems


def parse_world(data: Any, source: str = "world") -> World:
    """Validates a parsed world document (after ${VAR} expansion)."""
    if not isinstance(data, dict):
        raise WorldError(f"{source}: the world must be a mapping with `settings` and `accounts`")
    data = _expand(data, source)
    try:
        world = World.model_validate(data)
    except ValidationError as exc:
        raise WorldError(f"{source}: " + "; ".join(describe_validation_error(exc))) from None
    problems = _consistency_problems(world)
    problems += _fault_problems(world)
    if problems:
        raise WorldError(f"{source}: " + "; ".join(problems))
    return world


def parse_world_text(text: str, source: str = "world") -> World:
    """YAML or JSON text (JSON is YAML, but json gives better errors for it)."""
    import yaml

    try:
        data = json.loads(text) if text.lstrip().startswith("{") else safe_load_bounded(text)
    except TooLarge as exc:
        raise WorldError(f"{source}: too large: {exc}") from None
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorldError(f"{source}: not valid YAML or JSON ({first})") from None
    return parse_world(data, source)


def load_world(world: World | str | Path | dict[str, Any] | None = None) -> World:
    """A World from a model, a dict, a file path, or None for the packaged default world."""
    if isinstance(world, World):
        return world
    if isinstance(world, dict):
        return parse_world(world)
    path = Path(world) if world is not None else DEFAULT_WORLD
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorldError(f"{path}: cannot read the world file ({exc.strerror or exc})") from None
    return parse_world_text(text, str(path))
