"""The world file: accounts, keys, checks and their behaviour, plus settings; validated with clear errors."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

# What a world shares with a checks file lives below both (runner/checks/declared.py); its names
# are this module's too, as the emulator and its tests have always imported them.
from runner.checks.declared import (
    CHECK_KEYS,
    CHECKS_FILE_LEAVE_OUT,
    DEFAULT_MAX_RUN_SECONDS,
    DEFINITION_FIELDS,
    NEVER,
    PRODUCTION_ONLY_FIELDS,
    PROJECT_FIELDS,
    SCRIPT_FIELDS,
    SCRIPT_TEXT_FIELDS,
    SCRIPTED_FIELDS,
    SUITE_FIELDS,
    WORLD_LEAVE_OUT,
    WORLD_MAX_NODES,
    Behaviour,
    CheckPlan,
    Lines,
    Mode,
    Problem,
    Rule,
    Strict,
    WorldCheck,
    WorldError,
    WorldVariable,
    check_problems,
    escape_document,
    escape_references,
    expanded_document,
    problem_lines,
    read_document,
    request_problems,
    short_problems,
)
from runner.core.files import InputFileError, read_input_text
from runner.core.messages import clean_message
from runner.core.yamlguard import Loc
from runner.emulator.core.faults import FaultSpec
from runner.models import DEFAULT_ACCOUNT_HEADER, account_header_problem
from runner.models.base import empty_list
from runner.models.operations import RATE_LIMIT
from runner.models.problems import described_with_hints
from runner.models.resources import CHECK_LOCATIONS

DEFAULT_WORLD = Path(__file__).parent.parent / "world.yml"
_AGO = re.compile(r"^-([0-9]+(?:\.[0-9]+)?)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class RateLimit(Strict):
    # The service's limit unless the world says otherwise.
    limit: int = Field(default=RATE_LIMIT.limit, ge=1)
    windowSeconds: float = Field(default=RATE_LIMIT.window_seconds, gt=0)


class Executor(Strict):
    """How the emulator runs real checks: how many at once, and how much of a response it reads."""

    concurrency: int = Field(default=16, ge=1, le=256)
    bodyBytes: int = Field(default=5 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)


class Settings(Strict):
    speed: float = Field(default=1.0, gt=0)
    rateLimit: RateLimit = Field(default_factory=RateLimit)
    analysisDelaySeconds: float = Field(default=2.0, ge=0)
    locations: list[str] = Field(default_factory=lambda: list(CHECK_LOCATIONS), min_length=1)
    seed: int = 0
    faults: list[FaultSpec] = Field(default_factory=empty_list)  # active from the start (and after a reset)
    # Header that carries the account id; production of this API family reads x-checkly-account.
    accountHeader: str = DEFAULT_ACCOUNT_HEADER
    # By check type (`default` for the rest); what is given here is merged over the defaults.
    maxRunSeconds: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_MAX_RUN_SECONDS))
    executor: Executor = Field(default_factory=Executor)
    # A matched check that cannot run on this machine (BROWSER, a script, ...): `fail` gives it a
    # failed result that says so (the gate fails closed); `skip` leaves it out of every session.
    notRunnable: Literal["fail", "skip"] = "fail"

    @field_validator("accountHeader")
    @classmethod
    def _header_name(cls, value: str) -> str:
        problem = account_header_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("maxRunSeconds")
    @classmethod
    def _merge_defaults(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [key for key, seconds in value.items() if not seconds > 0]
        if bad:
            raise ValueError(f"must be more than 0 seconds ({', '.join(bad)})")
        return {**DEFAULT_MAX_RUN_SECONDS, **value}

    def max_run_seconds(self, check: WorldCheck) -> float | None:
        """When a run of `check` is cut off; None only when the world says the check never ends."""
        if check.maxRunSeconds == NEVER:
            return None
        if check.maxRunSeconds is not None:
            return float(check.maxRunSeconds)
        return self.maxRunSeconds.get(check.checkType, self.maxRunSeconds["default"])


class Plan(Strict):
    testSessions: bool = True
    analyses: bool = True


class Key(Strict):
    key: str = Field(min_length=8)
    role: Literal["read-write", "read-only"] = "read-write"


class Incident(Strict):
    id: str = Field(min_length=1)
    name: str = ""


class MaintenanceWindow(Strict):
    id: int = Field(ge=1)  # production: a positive integer
    maintenances: list[str] = Field(default_factory=empty_list)


class ClientCertificate(Strict):
    id: str = Field(min_length=1)


class ExistingAnalysis(Strict):
    id: str = Field(min_length=1)
    userContext: str | None = None


def seen_at(value: str) -> timedelta | datetime:
    """ "-3d" (also s, m, h; before the emulator started) or an ISO 8601 time (UTC when no zone)."""
    ago = _AGO.match(value.strip())
    if ago:
        return -timedelta(seconds=float(ago.group(1)) * _UNIT_SECONDS[ago.group(2)])
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"expected a time ago like -3d, -12h, -30m, -45s or an ISO 8601 time, got {value!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _as_datetime(value: timedelta | datetime) -> datetime:
    return datetime.now(timezone.utc) + value if isinstance(value, timedelta) else value


class WorldErrorGroup(Strict):
    """An error group that already exists, optionally with completed analyses.

    kind "check": a check error group (GET /v1/error-groups/{id}). kind "test-session": a group that
    earlier test sessions hit; a session failing the same check with the same cleaned message lands in
    it, so that failure is "known" (first seen before the session).
    """

    id: str = Field(min_length=1)
    kind: Literal["check", "test-session"] = "check"
    checkId: str = Field(min_length=1)
    rawErrorMessage: str = Field(min_length=1)
    firstSeen: str | None = None  # default: a day ago
    lastSeen: str | None = None  # default: firstSeen when given, else an hour ago
    analyses: list[ExistingAnalysis] = Field(default_factory=empty_list)

    @field_validator("firstSeen", "lastSeen")
    @classmethod
    def _a_time(cls, value: str | None) -> str | None:
        if value is not None:
            moment = _as_datetime(seen_at(value))
            if moment > datetime.now(timezone.utc):
                raise ValueError(f"must not be in the future, got {value!r}")
        return value


class WorldDashboard(Strict):
    header: str = "Status"
    customUrl: str | None = None
    customDomain: str | None = None


class Account(Strict):
    id: str = Field(min_length=1)
    name: str = ""
    plan: Plan = Field(default_factory=Plan)
    keys: list[Key] = Field(min_length=1)
    checks: list[WorldCheck] = Field(default_factory=empty_list)
    incidents: list[Incident] = Field(default_factory=empty_list)
    maintenanceWindows: list[MaintenanceWindow] = Field(default_factory=empty_list)
    clientCertificates: list[ClientCertificate] = Field(default_factory=empty_list)
    errorGroups: list[WorldErrorGroup] = Field(default_factory=empty_list)
    dashboards: list[WorldDashboard] = Field(default_factory=empty_list)
    # The account's own variables (production's /v1/variables): {{KEY}} in a real check's request.
    environmentVariables: list[WorldVariable] = Field(default_factory=empty_list)


class World(Strict):
    settings: Settings = Field(default_factory=Settings)
    accounts: list[Account] = Field(min_length=1)

    def first_key(self) -> tuple[str, str]:
        """(api key, account id) of the first read-write key of the first account."""
        account = self.accounts[0]
        for key in account.keys:
            if key.role == "read-write":
                return key.key, account.id
        return account.keys[0].key, account.id


def _consistency_problems(world: World) -> list[Problem]:
    problems: list[Problem] = []
    keys: set[str] = set()
    ids: set[str] = set()
    real = any(check.request is not None for account in world.accounts for check in account.checks)
    for a, account in enumerate(world.accounts):
        if account.id in ids:
            problems.append((("accounts", a, "id"), "duplicate account id"))
        ids.add(account.id)
        for k, key in enumerate(account.keys):
            if key.key in keys:
                problems.append((("accounts", a, "keys", k, "key"), "the same key is listed twice"))
            keys.add(key.key)
        check_ids = {check.id for check in account.checks}
        if len(check_ids) != len(account.checks):
            problems.append((("accounts", a, "checks"), "check ids must be unique"))
        problems += _group_problems(a, account, check_ids)
        for c, check in enumerate(account.checks):
            at_check: Loc = ("accounts", a, "checks", c)
            problems += [((*at_check, *at), message) for at, message in check_problems(check, real)]
            for location in check.locations:
                if location not in world.settings.locations:
                    at: Loc = ("accounts", a, "checks", c, "locations")
                    problems.append((at, f"{location!r} is not in settings.locations"))
    return problems


def _group_problems(a: int, account: Account, check_ids: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[tuple[str, str], int] = {}
    for g, group in enumerate(account.errorGroups):
        at: Loc = ("accounts", a, "errorGroups", g)
        if group.checkId not in check_ids:
            problems.append(((*at, "checkId"), "no check of this account has it"))
        if group.firstSeen and group.lastSeen:
            first, last = _as_datetime(seen_at(group.firstSeen)), _as_datetime(seen_at(group.lastSeen))
            if last < first:
                problems.append(((*at, "lastSeen"), "before firstSeen"))
        if group.kind == "test-session":
            key = (group.checkId, clean_message(group.rawErrorMessage))
            if key in seen:
                same = f"the same check and cleaned message as errorGroups[{seen[key]}]: one group"
                problems.append((at, same))
            seen.setdefault(key, g)
    return problems


def world_problems(
    data: Any, environ: Mapping[str, str], checks_file: bool = False
) -> tuple[World | None, list[Problem]]:
    """The world of a parsed document (after ${VAR} expansion from `environ`), or every problem of it
    by field path: those of each check too, when another part of the file has problems of its own."""
    data, problems = expanded_document(data, environ)
    if problems:
        return None, problems
    try:
        world = World.model_validate(data, context={"checks_file": checks_file})
    except ValidationError as exc:
        return None, short_problems(described_with_hints(exc, World)) + _request_problems(data)
    problems = short_problems(_consistency_problems(world))
    return (None, problems) if problems else (world, [])


def _request_problems(data: Any) -> list[Problem]:
    """Unknown keys in the requests of every account's checks of a world that did not validate."""
    out: list[Problem] = []
    accounts = data.get("accounts") if isinstance(data, dict) else None
    for a, account in enumerate(accounts if isinstance(accounts, list) else []):
        checks = account.get("checks") if isinstance(account, dict) else None
        out += request_problems(checks, ("accounts", a, "checks"))
    return out


def parse_world(
    data: Any,
    source: str = "world",
    lines: Lines = None,
    environ: Mapping[str, str] | None = None,
) -> World:
    """Validates a parsed world document; `lines`: the line of each field; `environ`: what ${VAR}
    reads (this process's environment when not given)."""
    if not isinstance(data, dict):
        raise WorldError(f"{source}: the world must be a mapping with `settings` and `accounts`")
    world, problems = world_problems(data, os.environ if environ is None else environ)
    if world is None:
        raise WorldError(problem_lines(source, problems, lines))
    return world


def parse_world_text(text: str, source: str = "world", environ: Mapping[str, str] | None = None) -> World:
    """A world from YAML or JSON text."""
    data, lines = read_document(text, source)
    return parse_world(data, source, lines, environ)


def load_world(
    world: World | str | Path | dict[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> World:
    """A World from a model, a dict, a file path, or None for the packaged default world; `environ`:
    what ${VAR} reads (this process's environment when not given)."""
    if isinstance(world, World):
        return world
    if isinstance(world, dict):
        return parse_world(world, environ=environ)
    path = Path(world) if world is not None else DEFAULT_WORLD
    try:
        text = read_input_text(path, "world file")
    except InputFileError as exc:
        raise WorldError(str(exc)) from None
    return parse_world_text(text, str(path), environ)


__all__ = [
    "CHECKS_FILE_LEAVE_OUT",
    "CHECK_KEYS",
    "DEFAULT_MAX_RUN_SECONDS",
    "DEFINITION_FIELDS",
    "NEVER",
    "PRODUCTION_ONLY_FIELDS",
    "PROJECT_FIELDS",
    "SCRIPTED_FIELDS",
    "SCRIPT_FIELDS",
    "SCRIPT_TEXT_FIELDS",
    "SUITE_FIELDS",
    "WORLD_LEAVE_OUT",
    "WORLD_MAX_NODES",
    "Account",
    "Behaviour",
    "CheckPlan",
    "Lines",
    "Mode",
    "Problem",
    "Rule",
    "Settings",
    "World",
    "WorldCheck",
    "WorldError",
    "WorldErrorGroup",
    "WorldVariable",
    "escape_document",
    "escape_references",
    "load_world",
    "parse_world",
    "parse_world_text",
    "problem_lines",
    "read_document",
    "seen_at",
    "world_problems",
]  # fmt: skip
