"""A checks file: the user's own checks in production's shape, run against a build on this machine.

`testsession run --checks FILE` (or a spec's `checks: FILE`) reads FILE, YAML or JSON, in one of
three shapes, and needs no account, key or world:
- a list of checks as production returns them (GET /v1/checks, its answer as it is);
- `{checks: [...], variables: [...]}`: the variables as production's account variables
  ({key, value, secret, locked}); a secret one's value is masked in every output;
- what `testsession checks export` writes (the second shape; `runsLocally: false` marks a check
  that cannot run here, as in a world file).
Each check is read as a file declares it (declared.py, as a world file's checks: production's
properties load and are kept; a key production does not know is an error with a did-you-mean); a
local run (runner/job/local.py) runs them at location `local`, with no emulator between.
Problems are named by their place in FILE, all of them at once.
An emulator-only key (behaviour, runsLocally, ...) is not production's: here it is unknown, and a
check of a type that runs here (API, URL, TCP, DNS) must carry its request: never a scripted pass.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from runner.checks.declared import (
    CHECK_KEYS,
    SCRIPTED_FIELDS,
    CheckPlan,
    Lines,
    Mode,
    Problem,
    Strict,
    WorldCheck,
    WorldError,
    WorldVariable,
    check_problems,
    expanded_document,
    problem_lines,
    read_document,
    request_problems,
    short_problems,
)
from runner.core.files import InputFileError, read_input_text
from runner.core.text import for_line
from runner.models.base import empty_list
from runner.models.check_definitions import Runs, kind_of, plain_api_request
from runner.models.problems import Loc, described_with_hints, unknown_key_message
from runner.models.quarantine import QuarantineEntry
from runner.models.sessions import CHECK_TYPES, RetryStrategy

LOCAL = "local"  # the location of every result of a local run
ACCOUNT_ID = "local"  # the account a local run's state is kept under (the state file's rows)
# Keys of a world check that production's shape does not have: not accepted in a checks file.
# `runsLocally: false` is allowed: `checks export` marks a check that cannot run here with it.
EMULATOR_KEYS = frozenset({*SCRIPTED_FIELDS, "maxRunSeconds", "kept"})
PRODUCTION_KEYS = sorted(set(CHECK_KEYS) - EMULATOR_KEYS)
TOP_KEYS = ("checks", "variables", "quarantine")
_SLUG = re.compile(r"[^a-z0-9]+")
# The namespace of the ids made for checks without one: uuid5(NAMESPACE_URL, this address), fixed forever.
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/testsession-runner/checks-file")


class CheckSet(Strict):
    """The checks of a file and their variables, validated as a world validates an account's."""

    checks: list[WorldCheck] = Field(default_factory=empty_list)
    environmentVariables: list[WorldVariable] = Field(default_factory=empty_list)
    quarantine: list[QuarantineEntry] = Field(default_factory=empty_list)


class FileCheck:
    """A check of a checks file as a run holds it: what the run reads of it, and its plan, whose
    definition is made from the check's fields when the check runs (CheckPlan.definition, through
    `definition_data`). A __slots__ value, ~0.3 KiB a check with its plan, where a WorldCheck model
    held ~1.7 KiB (its field dict of ~40 names and its set of given ones) and the same data; a run
    of 10,000 checks holds them all."""

    __slots__ = (
        "activated", "checkType", "id", "kept", "locations", "more", "name", "plan", "request",
        "retryStrategy", "runtimeId", "tags",
    )  # fmt: skip

    def __init__(
        self,
        id: str,
        name: str,
        checkType: str,
        tags: list[str] | None = None,
        activated: bool = True,
        request: dict[str, Any] | None = None,
        *,
        plan: CheckPlan | None = None,
        locations: list[str] | None = None,
        retryStrategy: RetryStrategy | None = None,
        runtimeId: str | None = None,
        kept: dict[str, Any] | None = None,
        more: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.checkType = checkType
        self.tags: list[str] = [] if tags is None else tags
        self.activated = activated
        self.request = request  # as given: a REAL check's definition is parsed from it
        # Its plan: REAL (its definition made from this check, as _decide plans it) unless said otherwise.
        self.plan = CheckPlan(Mode.REAL, self) if plan is None else plan
        self.locations: list[str] = [] if locations is None else locations
        self.retryStrategy = retryStrategy
        self.runtimeId = runtimeId
        self.kept: dict[str, Any] = {} if kept is None else kept  # production's other properties
        self.more = more  # its definition's other fields (WorldCheck.definition_data), if any

    @classmethod
    def of(cls, check: WorldCheck) -> FileCheck:
        """A validated check (one that was not plain, `_plain_check`) as a run holds it: its plan makes
        the definition from the held check, not from the model."""
        data = check.definition_data()
        more = {key: value for key, value in data.items() if key not in _HELD} or None
        made = cls(
            check.id, check.name, check.checkType, check.tags, check.activated, check.request,
            plan=check.plan, locations=check.locations, retryStrategy=check.retryStrategy,
            runtimeId=check.runtimeId, kept=check.kept, more=more,
        )  # fmt: skip
        if check.plan.parsed is not None:
            made.plan = replace(check.plan, parsed=made)
        return made

    def definition_data(self) -> dict[str, Any]:
        """The check in production's shape, as WorldCheck.definition_data() gives it: what is given
        (an empty list left out), the values the check's own."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "checkType": self.checkType}
        if self.tags:
            data["tags"] = self.tags
        data["activated"] = self.activated
        if self.request is not None:
            data["request"] = self.request
        if self.more:
            data.update(self.more)
        return data

    def __repr__(self) -> str:
        return f"FileCheck(id={self.id!r}, name={self.name!r}, {self.checkType}, {self.plan.mode.value})"


# The fields of a definition that a FileCheck holds as its own (the rest are in `more`).
_HELD = frozenset({"id", "name", "checkType", "tags", "activated", "request"})
# What a plain check (`_plain_check`) may carry, and the exact type of each.
_PLAIN_CHECK_TYPES: dict[str, type] = {
    "id": str, "name": str, "checkType": str, "tags": list, "activated": bool, "request": dict,
}  # fmt: skip


def _plain_check(check: dict[str, Any]) -> FileCheck | None:
    """The check, when it is a plain API check (production's fields id, name, checkType, tags,
    activated and a plain request, `plain_api_request`): validating it as a WorldCheck would accept
    it, find no problem and plan it REAL, so it is held as that without the model (~5 µs a check, not
    the ~80 µs of the model, its definition's parse and its problems). None: read it the full way."""
    for key, value in check.items():
        if _PLAIN_CHECK_TYPES.get(key) is not type(value):
            return None
    check_id, name, request = check.get("id"), check.get("name"), check.get("request")
    if not check_id or not name or check.get("checkType", "API") != "API" or not plain_api_request(request):
        return None
    tags = check.get("tags")
    for tag in tags or ():
        if type(tag) is not str:
            return None
    return FileCheck(check_id, name, "API", tags, check.get("activated", True), request)


@dataclass(frozen=True)
class ChecksFile:
    path: str
    checks: tuple[FileCheck, ...]
    variables: tuple[WorldVariable, ...]  # production's account variables: what {{KEY}} falls back to
    secrets: tuple[str, ...]  # the values of secret variables: masked in every output
    # Checks whose failure does not fail the gate until a day (runner/job/quarantine.py decides).
    quarantine: tuple[QuarantineEntry, ...] = ()

    @property
    def name(self) -> str:
        return Path(self.path).name

    def warnings(self) -> list[str]:
        """What the user may not expect of their checks: one line each."""
        out = []
        for check in self.checks:
            http = check.plan.mode is Mode.REAL and check.checkType in ("API", "URL")
            # The request as given: a REAL check's definition parsed it, and kept its assertions.
            if http and not (check.request or {}).get("assertions"):
                out.append(
                    f"{for_line(check.name, 200)} has no assertions: it passes on any 2xx answer, as in "
                    "production; add e.g. {source: STATUS_CODE, comparison: EQUALS, target: '200'}"
                )
        return out


def load_checks_file(path: str | Path, environ: Mapping[str, str]) -> ChecksFile:
    """The checks of FILE; WorldError with every problem, one line each."""
    try:
        text = read_input_text(path, "checks file")
    except InputFileError as exc:
        raise WorldError(str(exc)) from None
    data, lines = read_document(text, str(path))
    return parse_checks(data, str(path), environ, lines)


def parse_checks(
    data: Any, source: str, environ: Mapping[str, str], lines: Lines = None, project: bool = False
) -> ChecksFile:
    """`project`: the checks of a Checkly project (runner/checkly), which checkly itself validated: a
    check whose fields cannot run here fails alone, with its reason, instead of refusing the file."""
    problems: list[Problem] = []
    prefix: Loc = ()
    variables: Any = []
    quarantine: Any = []
    if isinstance(data, dict):
        for key in data:
            if key not in TOP_KEYS:
                problems.append(
                    ((str(key),), unknown_key_message(str(key), list(TOP_KEYS)).split(" allowed:")[0])
                )
        checks, variables, prefix = data.get("checks"), data.get("variables") or [], ("checks",)
        quarantine = data.get("quarantine") or []
        if checks is None:
            problems.append(((), "expected checks: (a list of checks in production's shape)"))
    else:
        checks = data
    if not isinstance(quarantine, list):
        problems.append((("quarantine",), "expected a list of {check, owner, reason, until}"))
        quarantine = []
    if not isinstance(checks, list) or not isinstance(variables, list):
        what = "checks" if not isinstance(checks, list) else "variables"
        problems.append(((what,) if prefix else (), f"expected a list of {what}"))
        raise WorldError(problem_lines(source, problems, lines))
    if not checks:
        problems.append((prefix, "no checks: give at least one check (name, checkType, request)"))
    world_checks: list[Any] = []
    taken: set[str] = set()
    folder = Path(source).parent
    for index, check in enumerate(checks):
        at: Loc = (*prefix, index)
        if not isinstance(check, dict):
            problems.append((at, "expected a check (a mapping with name, checkType, request)"))
            continue
        for key in () if EMULATOR_KEYS.isdisjoint(check) else check:
            if key in EMULATOR_KEYS:
                message = (
                    f"unknown field {key!r}: not production's; scripted results need a world file (--world)"
                )
                problems.append(((*at, str(key)), message))
        kind = check.get("checkType")
        if isinstance(kind, str) and kind not in CHECK_TYPES:
            # A type production may add later is kept (and fails closed when it runs); one a letter
            # or two from a known type is a typo, refused here with the type it means.
            import difflib  # only for a type that is wrong

            close = difflib.get_close_matches(kind.upper(), CHECK_TYPES, n=1, cutoff=0.75)
            if close:
                problems.append(
                    ((*at, "checkType"), f"unknown check type {kind!r}: did you mean {close[0]!r}?")
                )
        world_checks.append(_as_world_check(check, index, taken, folder))
        if check.get("request") is None and kind_of(str(check.get("checkType", "API"))).runs is Runs.REQUEST:
            problems.append(((*at, "request"), "required: what to send (url:, assertions: ... for API)"))
    declared = {"checks": world_checks, "environmentVariables": variables, "quarantine": quarantine}
    found = _problems(declared, environ, project)
    # Every problem at once: a typo found above (a check type, an emulator key) hides none of these;
    # a missing request said above is not said again as the check's "neither request nor behaviour".
    said = {loc[:-1] for loc, _ in problems if loc[-1:] == ("request",)}
    for loc, message in found[1]:
        at = _in_file(loc, prefix)
        if at not in said:
            problems.append((at, message))
    if found[0] is None or problems:
        raise WorldError(problem_lines(source, problems, lines))
    loaded, checks_set = found[0]
    masked = tuple(v.value for v in checks_set.environmentVariables if v.secret and v.value)
    return ChecksFile(
        source,
        tuple(loaded),
        tuple(checks_set.environmentVariables),
        masked,
        tuple(checks_set.quarantine),
    )


def _problems(
    data: dict[str, Any], environ: Mapping[str, str], project: bool = False
) -> tuple[tuple[list[FileCheck], CheckSet] | None, list[Problem]]:
    """The checks after ${VAR} expansion from `environ` (with the file's variables and quarantine), or
    every problem by field path (as a world says its account's: world.py `world_problems`). A plain
    check (`_plain_check`) is held as it is; each other one is validated as a WorldCheck and held as
    a FileCheck (one model at a time, not a list of them beside the checks held); a file that does
    not validate is read again in one CheckSet, for every problem named by its place in the file."""
    data, problems = expanded_document(data, environ)
    if problems:
        return None, problems
    checks: list[Any] = data["checks"]
    loaded = [_plain_check(check) for check in checks]
    others = [c for c, check in enumerate(loaded) if check is None]  # where each other check is
    real = any(isinstance(check, dict) and check.get("request") is not None for check in checks)
    context = {"checks_file": True, "project": project}
    try:
        validated = CheckSet.model_validate({**data, "checks": []}, context=context)  # the rest of the file
        for c in others:
            check = WorldCheck.model_validate(checks[c], context=context)
            problems += [(("checks", c, *at), message) for at, message in check_problems(check, real)]
            loaded[c] = FileCheck.of(check)
    except ValidationError:
        return None, _validation_problems(data, others, context, real)
    if len({check.id for check in loaded if check is not None}) != len(checks):
        problems.insert(0, (("checks",), "check ids must be unique"))
    problems = short_problems(problems)
    if problems:
        return None, problems
    return ([check for check in loaded if check is not None], validated), []


def _validation_problems(data: dict[str, Any], others: list[int], context: Any, real: bool) -> list[Problem]:
    """Every problem of a file whose checks (those that were not plain) or variables do not validate:
    pydantic's, the requests' unknown keys, the definitions' problems."""
    checks = data["checks"]
    try:
        CheckSet.model_validate({**data, "checks": [checks[c] for c in others]}, context=context)
    except ValidationError as exc:
        found = short_problems([(_placed(loc, others), m) for loc, m in described_with_hints(exc, CheckSet)])
        found += request_problems(checks, ("checks",))
        return found + _definition_problems(checks, others, exc, context["project"], real)
    raise AssertionError("a check did not validate alone but validates in the file")  # never


def _placed(loc: Loc, others: list[int]) -> Loc:
    """A path in the CheckSet of the checks that were not plain, as a path in the whole list."""
    if len(loc) >= 2 and loc[0] == "checks" and isinstance(loc[1], int):
        return ("checks", others[loc[1]], *loc[2:])
    return loc


def _definition_problems(
    checks: list[Any], others: list[int], exc: ValidationError, project: bool, real: bool
) -> list[Problem]:
    """The definition problems (a bad comparison, ...) of each check that was not plain (a plain one
    has none), when the file did not validate: a misspelt field of one check must hide neither its
    own nor another check's. A check whose own fields were refused is read without them (each error
    is already named). `real`: a check of the file has a request."""
    refused: dict[int, set[str]] = {}
    for error in exc.errors():
        loc = error["loc"]
        if len(loc) >= 3 and loc[0] == "checks" and isinstance(loc[1], int):
            refused.setdefault(others[loc[1]], set()).add(str(loc[2]))
    context = {"checks_file": True, "project": project}
    out: list[Problem] = []
    for c in others:
        check = checks[c]
        if not isinstance(check, dict):
            continue
        kept = {key: value for key, value in check.items() if key not in refused.get(c, set())}
        try:
            valid = WorldCheck.model_validate(kept, context=context)
        except ValidationError:  # a problem of its own, named above
            continue
        out += [(("checks", c, *at), message) for at, message in check_problems(valid, real)]
    return short_problems(out)


def _as_world_check(check: dict[str, Any], index: int, taken: set[str], folder: Path) -> dict[str, Any]:
    """The check as a world holds it: an id made from its name when it has none (a check written by
    hand; `made_id`), a type that cannot run here marked so (it fails closed, never scripted), and a
    Playwright check suite's project folder the checks file's own (its workingDir is relative to it)."""
    if EMULATOR_KEYS.isdisjoint(check):
        out = dict(check)
    else:
        out = {key: value for key, value in check.items() if key not in EMULATOR_KEYS}
    if not out.get("id"):
        base = _SLUG.sub("-", str(out.get("name") or "").lower()).strip("-") or f"check-{index + 1}"
        made, n = base, 1
        while made_id(made) in taken:
            n += 1
            made = f"{base}-{n}"
        out["id"] = made_id(made)
    taken.add(str(out["id"]))
    runs = kind_of(str(out.get("checkType", "API"))).runs  # CHECK_KINDS, the one table
    if runs is None:
        out["runsLocally"] = False  # its reason is the type's own, without a world's behaviour hint
    if runs is Runs.SUITE and not out.get("projectDir"):
        out["projectDir"] = str(folder.resolve())
    return out


def made_id(slug: str) -> str:
    """The id of a check written without one: a uuid, as production's ids (a trigger's `checkId`,
    `--check-id`, a shard's part, a merge and the state file all take it), the same in every run of
    the same file: uuid5 of the slug of its name (`Products API` -> `products-api`; a second check of
    the same name `products-api-2`)."""
    return str(uuid.uuid5(ID_NAMESPACE, slug))


def _in_file(loc: Loc, prefix: Loc) -> Loc:
    """A CheckSet's path as the checks file writes it."""
    if loc[:1] == ("checks",):
        return (*prefix, *loc[1:])
    if loc[:1] == ("environmentVariables",):
        return ("variables", *loc[1:])
    return loc


__all__ = [
    "LOCAL", "PRODUCTION_KEYS", "ChecksFile", "FileCheck", "load_checks_file", "made_id", "parse_checks",
]  # fmt: skip
