"""A check as a file declares it, and reading such a file: what a world file (the emulator's) and a
checks file (`run --checks`, checksfile.py) share, below both.

`WorldCheck` is production's check (its properties kept as given) plus what only a world may script
(`behaviour`, `when`, ...). Whether it is scripted, run for real or cannot run here is decided once,
when it loads (`CheckPlan`). `read_document` reads YAML or JSON text with the line of each field;
`problem_lines` says every problem as `FILE:LINE: field: what is allowed`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from runner.core.errors import SpecError
from runner.core.expand import Expansion, expand
from runner.core.yamlguard import Loc, TooLarge, lines_later, load_plain_or_bounded
from runner.models.base import empty_dict, empty_list
from runner.models.check_definitions import (
    CheckDefinition,
    Runs,
    hand_written_problems,
    kind_of,
    parse_check_definition,
    unknown_request_fields,
)
from runner.models.problems import format_loc, unknown_key_message
from runner.models.sessions import NOT_FOR_SINGLE_RETRY, RetryStrategy

Behaviour = Literal["pass", "fail", "degrade", "flaky", "error", "hang"]
# Worlds exported from an account hold hundreds of checks of ~80 nodes each: a larger budget than a
# spec's, still a bound on what an alias bomb can cost.
WORLD_MAX_NODES = 500_000

# Maximum run time of one check run, in seconds, by check type (real seconds for a check the engine
# runs, in a local run or a world; simulated for a world's scripted ones). Production-like values:
# browser and multi-step checks are capped at 240 s (checklyhq.com/docs/browser-checks/timeouts/),
# Playwright check suites at 30 minutes (checklyhq.com/docs/platform/runtimes/runtime-specification),
# API and the other request-level checks at 30 s (the API check's maximum response time).
# See docs/production-contract.md.
DEFAULT_MAX_RUN_SECONDS: dict[str, float] = {
    "API": 30,
    "BROWSER": 240,
    "MULTI_STEP": 240,
    "PLAYWRIGHT": 1800,
    "AGENTIC": 240,
    "default": 30,
}
NEVER = "never"


class WorldError(SpecError):
    """A world file that cannot be used: one `FILE:LINE: field: what is allowed` line per problem
    (the line where the file is YAML or JSON text), as spec files say it."""

    def __init__(self, problems: str | list[str]) -> None:
        super().__init__([problems] if isinstance(problems, str) else problems)

    def __str__(self) -> str:  # one line (the control API answers it as one message)
        return "; ".join(self.problems)


class Strict(BaseModel):
    # Typos in a world file should fail loudly, not be ignored.
    model_config = ConfigDict(extra="forbid")


class Rule(Strict):
    """Overrides a check's behaviour when every listed environment variable arrived with that value."""

    env: dict[str, str] = Field(min_length=1)
    behaviour: Behaviour | None = None
    errorMessage: str | None = None


class WorldVariable(Strict):
    """An environment variable of an account or a check, in production's shape."""

    key: str = Field(min_length=1)
    value: str | None = None
    secret: bool = False
    locked: bool = False

    @model_validator(mode="after")
    def _empty_secret_is_unset(self) -> WorldVariable:
        # An exported world reads a secret as `${NAME:-}`: unset in the environment, it is a secret
        # without a value (the check then fails naming it), never an empty password sent as one.
        if self.secret and self.value == "":
            self.value = None
        return self


# Production's definition fields: a world check that carries `request` runs for real (see
# docs/checks.md); the script fields only serve to mark a check that cannot run on this machine.
SCRIPT_FIELDS = ("script", "localSetupScript", "localTearDownScript", "setupSnippetId", "tearDownSnippetId")
# Code: never ${VAR}-expanded when a file loads (`${...}` is JavaScript's), never escaped by an export.
SCRIPT_TEXT_FIELDS = frozenset(SCRIPT_FIELDS)
# What a Checkly project's scripts need besides their text (runner/checkly): ours.
PROJECT_FIELDS = (
    "setupScriptPath", "tearDownScriptPath", "scriptPath", "sharedFiles", "projectDir", "playwrightConfig",
)  # fmt: skip
DEFINITION_FIELDS = (
    "request",
    "degradedResponseTime",
    "maxResponseTime",
    "degradedPacketLossThreshold",
    "maxPacketLossThreshold",
    "shouldFail",
    "environmentVariables",
    "runtimeId",
    *SCRIPT_FIELDS,
    *PROJECT_FIELDS,
)
SCRIPTED_FIELDS = ("behaviour", "durationSeconds", "errorMessage", "when")
# A Playwright check suite's own fields (ChecksV1PlaywrightCheck): kept as production's, and read by
# its definition (check_definitions.PlaywrightCheckDefinition).
SUITE_FIELDS = ("testCommand", "workingDir", "installCommand", "browsers", "playwrightVersion")
# The other properties production's OpenAPI gives a check of some type (ChecksV1ApiCheck,
# ChecksV1TcpCheck, ChecksV1BrowserCheck, ChecksV1MultiStepCheck, ChecksV1PlaywrightCheck,
# ChecksV1HeartbeatCheck, ChecksV1GenericCheck): a check as production returns it loads unchanged.
# Nothing here uses them; they are kept as given (`kept`) and written back by `checks export`.
PRODUCTION_ONLY_FIELDS = frozenset({
    "aiAutoRepairEnabled", "alertChannelSubscriptions", "alertChannels", "alertSettings", "browsers",
    "cacheHash", "codeBundlePath", "created_at", "dependencies", "description", "doubleCheck", "engine",
    "engineVersion", "groupId", "groupOrder", "heartbeat", "installCommand", "intent", "logicalId",
    "member", "muted", "pending", "playwrightVersion", "privateLocations", "project", "projectBindings",
    "runParallel", "setupScriptDependencies", "sslCheckDomain",
    "tearDownScriptDependencies", "testCommand", "triggerIncident", "updated_at",
    "useGlobalAlertSettings", "workingDir",
})  # fmt: skip


class Mode(Enum):
    """How a session runs a world check: decided once, when the check loads (CheckPlan)."""

    SCRIPTED = "scripted"  # its result is played from `behaviour`
    REAL = "real"  # its request is performed by the engine (runner/checks/)
    NOT_RUNNABLE = "not runnable"  # it cannot run on this machine: a session that matches it fails closed


# How a check that cannot run here is left out of a local run, by the file it came from.
WORLD_LEAVE_OUT = "leave it out with settings.notRunnable: skip in the world, or target other tags"
CHECKS_FILE_LEAVE_OUT = "leave it out of the checks file, or run other tags (--tag)"


Problem = tuple[Loc, str]


class DefinitionSource(Protocol):
    """A check that makes its definition's data (WorldCheck, checksfile.FileCheck)."""

    def definition_data(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)  # one a check: 120 B with a __dict__, 56 B without
class CheckPlan:
    mode: Mode
    # The check whose definition parsed (REAL; NOT_RUNNABLE when it parsed), else None: a WorldCheck,
    # or the checks file's FileCheck. Its definition is parsed again when asked for, not kept: a run
    # holds its checks, not a second model of each.
    parsed: DefinitionSource | None = field(default=None, repr=False, compare=False)
    reason: str | None = None  # NOT_RUNNABLE: why, one sentence
    # NOT_RUNNABLE: how to leave it out, in the terms of the file it came from.
    leave_out: str = WORLD_LEAVE_OUT
    # REAL: what its definition's fields would keep it from running (definition_problems), found
    # when it was parsed to decide this plan (check_problems names them: not parsed a second time).
    problems: tuple[Problem, ...] = field(default=(), repr=False)

    @property
    def definition(self) -> CheckDefinition | None:
        """Production's definition of the check, made now (a new value each time); None when it did
        not parse. The one who runs the check holds it while it runs. Its problems were found when
        the check loaded (`problems`, of a REAL plan): none there, none asked again at each attempt."""
        given = self.definition_input()
        return None if given is None else parse_check_definition(given[0], checked=given[1])

    def definition_input(self) -> tuple[dict[str, Any], bool] | None:
        """What `definition` parses: the check's data in production's shape, and whether its problems
        were found none when it loaded (parse_check_definition's `checked`). A worker process is sent
        this, not the check (job/workers.py): it parses it without this module or the checks file's."""
        if self.parsed is None:
            return None
        return self.parsed.definition_data(), self.mode is Mode.REAL and not self.problems


def cannot_run_message(reason: str, leave_out: str) -> str:
    """The one failed result of a matched check that cannot run on this machine."""
    return f"cannot run on this machine: {reason}; {leave_out}"


class WorldCheck(Strict):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    checkType: str = "API"
    tags: list[str] = Field(default_factory=empty_list)
    activated: bool = True
    locations: list[str] = Field(default_factory=empty_list)
    frequency: int = 10
    frequencyOffset: int | None = None
    behaviour: Behaviour = "pass"
    durationSeconds: float = Field(default=1.0, ge=0)
    errorMessage: str | None = None
    when: list[Rule] = Field(default_factory=empty_list)
    # Overrides settings.maxRunSeconds for this check. `never` (for tests only): a hanging run
    # never ends on its own, so its session runs until it is cancelled.
    maxRunSeconds: Annotated[float, Field(gt=0)] | Literal["never"] | None = None
    # --- a check that runs for real: production's definition (docs/checks.md) ---
    request: dict[str, Any] | None = None
    degradedResponseTime: float | None = Field(default=None, ge=0)  # ms
    maxResponseTime: float | None = Field(default=None, gt=0)  # ms
    # ICMP (ChecksV1IcmpMonitor): packet loss in percent at which a run is degraded / failed.
    degradedPacketLossThreshold: float | None = Field(default=None, gt=0, le=100)
    maxPacketLossThreshold: float | None = Field(default=None, gt=0, le=100)
    shouldFail: bool = False
    environmentVariables: list[WorldVariable] = Field(default_factory=empty_list)
    script: str | None = None  # BROWSER and MULTI_STEP: the Playwright Test code, run for real
    runtimeId: str | None = None  # production's runtime of a script (its Playwright version)
    localSetupScript: str | None = None
    localTearDownScript: str | None = None
    setupSnippetId: int | str | None = None
    tearDownSnippetId: int | str | None = None
    setupScriptPath: str | None = None
    tearDownScriptPath: str | None = None
    scriptPath: str | None = None  # a browser check's: its sharedFiles are imported relative to it
    sharedFiles: list[dict[str, str]] = Field(default_factory=empty_list)
    projectDir: str | None = None
    playwrightConfig: dict[str, Any] | None = None  # a browser check's timeout and `use` (the CLI's)
    # The check's own retry strategy, as production applies it: a session without one of its own
    # retries this check by it.
    retryStrategy: RetryStrategy | None = None
    # false: kept from a real account (`checks export`) but cannot run here; a session that matches
    # it fails closed unless settings.notRunnable is `skip`.
    runsLocally: bool | None = None
    # Production's other properties (PRODUCTION_ONLY_FIELDS), as given.
    kept: dict[str, Any] = Field(default_factory=empty_dict)

    # The plan (set once, when the check is validated) is in a slot, not a pydantic private
    # attribute: that is a dict of its own per check (184 B). A copy carries it (__copy__).
    __slots__ = ("_plan",)
    if TYPE_CHECKING:
        _plan: CheckPlan

    @model_validator(mode="before")
    @classmethod
    def _production_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kept = {key: data[key] for key in data if key in PRODUCTION_ONLY_FIELDS}
        out = {key: value for key, value in data.items() if key not in PRODUCTION_ONLY_FIELDS}
        if kept:
            out["kept"] = {**(out.get("kept") or {}), **kept}
        for name in ("shouldFail", "retryStrategy", "frequencyOffset", "locations"):
            if out.get(name, 0) is None:  # production's null: the default
                out.pop(name)
        retry = out.get("retryStrategy")
        if isinstance(retry, dict) and retry.get("type") == "SINGLE_RETRY":
            # Production lists SINGLE_RETRY with the fields it ignores; this model refuses them.
            out["retryStrategy"] = {k: v for k, v in retry.items() if k not in NOT_FOR_SINGLE_RETRY}
        return out

    @model_validator(mode="after")
    def _scripted_or_real(self, info: ValidationInfo) -> WorldCheck:
        if self.request is not None:
            scripted = [name for name in SCRIPTED_FIELDS if name in self.model_fields_set]
            if scripted:
                raise ValueError(
                    f"{scripted[0]}: a check with a request runs for real; leave out " + ", ".join(scripted)
                )
        # A checks file (checksfile.py) has no behaviour: and no settings: its advice differs.
        context = info.context or {}
        # project: a Checkly project's checks (runner/checkly): one check's fields fail it alone.
        plan = _decide(
            self, checks_file=bool(context.get("checks_file")), project=bool(context.get("project"))
        )
        object.__setattr__(self, "_plan", plan)
        return self

    @property
    def plan(self) -> CheckPlan:
        """Scripted, real, or not runnable here: decided once, when the check loaded."""
        return self._plan

    def __copy__(self) -> WorldCheck:
        copied = super().__copy__()
        object.__setattr__(copied, "_plan", self._plan)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> WorldCheck:
        copied = super().__deepcopy__(memo)
        object.__setattr__(copied, "_plan", self._plan)
        return copied

    def definition_data(self) -> dict[str, Any]:
        """The check in production's shape, as its definition reads it. Only what is given: a null or
        an empty list (each field's default but `activated`) is left out, so the definition records
        fewer fields as given (a set of 24 names is 2.2 KiB a check) and carries no null extra for a
        field its type lacks (an API check's `script`). The values are this check's own, not copies:
        the definition's validation copies the containers it keeps, and reading is all it does
        (a dump copied each request, ~0.7 KiB a check)."""
        data: dict[str, Any] = {}
        fields = self.__dict__
        for name in _DEFINITION_KEYS:
            value = fields[name]
            if value is not None and value != []:
                data[name] = value
        if kind_of(self.checkType).runs is Runs.SUITE:  # a suite's own fields are kept as given (`kept`)
            for name in SUITE_FIELDS:
                value = self.kept.get(name)
                if value is not None and value != []:
                    data[name] = value
        if self.environmentVariables:
            data["environmentVariables"] = [variable.model_dump() for variable in self.environmentVariables]
        return data

    def has_script(self) -> bool:
        return any(getattr(self, name) not in (None, "") for name in SCRIPT_FIELDS)


# What a check's definition is made of (WorldCheck.definition_data).
_DEFINITION_KEYS = ("id", "name", "checkType", "tags", "activated", *DEFINITION_FIELDS)
# What a world check's key may be: for the did-you-mean of one that is none of them.
CHECK_KEYS = sorted({*WorldCheck.model_fields, *PRODUCTION_ONLY_FIELDS} - {"kept"})


def _decide(check: WorldCheck, checks_file: bool = False, project: bool = False) -> CheckPlan:
    """Its result is played from `behaviour` when given, or (only a type that could run here, without
    a request) left at `pass`. A BROWSER check written by hand without one is not scripted: it cannot
    run here, and it fails closed like a check `checks export` marked `runsLocally: false`."""
    by_hand = check.request is None and check.runsLocally is not False and not check.has_script()
    runs = kind_of(check.checkType).runs  # how the type runs here: CHECK_KINDS, the one table
    if by_hand and ("behaviour" in check.model_fields_set or runs is Runs.REQUEST):
        return CheckPlan(Mode.SCRIPTED)
    try:
        definition = parse_check_definition(check.definition_data())
    except ValidationError:  # parse_world names each problem; never run what cannot be read
        return CheckPlan(Mode.NOT_RUNNABLE, None, "its definition does not fit production's shape")
    from runner.checks.scripts import runner_for  # Node, found once, for a check with scripts

    reason = definition.local_support(scripts=runner_for(definition) is not None)
    if reason is not None and by_hand and not checks_file:  # a behaviour is all it lacks to be scripted
        reason += " (give it a behaviour: to script it here)"
    browser = runs is Runs.SCRIPT
    if reason is None and browser and not check.script and check.runsLocally is not False:
        give = "give it a script: to run it" + ("" if checks_file else ", or a behaviour: to script it here")
        reason = f"{check.checkType} check without a script ({give})"
    if reason is None and check.script and not browser:
        reason = "checks with a script cannot run locally"
    if reason is None and check.runsLocally is False:
        reason = "marked runsLocally: false"
    suite = runs is Runs.SUITE  # its project is what runs: testCommand has a default
    if reason is None and check.request is None and not browser and not suite:
        reason = f"{check.checkType} check without a request"
    if reason is None and project:  # a Checkly project: one check's definition never refuses the rest
        problems = definition.problems()
        if problems:
            what = "; ".join(problems)
            reason = f"{check.checkType} check that cannot run as the project defines it: {what}"
    leave_out = CHECKS_FILE_LEAVE_OUT if checks_file else WORLD_LEAVE_OUT
    if reason is not None:
        return CheckPlan(Mode.NOT_RUNNABLE, check, reason, leave_out)
    return CheckPlan(Mode.REAL, check, problems=tuple(definition.definition_problems()))


def escape_references(text: str) -> str:
    """`text` as a world file must hold it to load back unchanged: every `${` written `$${`."""
    return text.replace("${", "$${")


def escape_document(value: Any) -> Any:
    """A copy of a document's data that loads back unchanged: every text escaped (`escape_references`)
    but a script's, which loading leaves as written (SCRIPT_TEXT_FIELDS)."""
    if isinstance(value, str):
        return escape_references(value)
    if isinstance(value, list):
        return [escape_document(item) for item in value]
    if isinstance(value, dict):
        return {k: item if k in SCRIPT_TEXT_FIELDS else escape_document(item) for k, item in value.items()}
    return value


def expanded_document(data: Any, environ: Mapping[str, str]) -> tuple[Any, list[Problem]]:
    """A parsed checks file or world after ${VAR} expansion from `environ`, and its expansion's
    problems by field path (a variable that is not set among them). Scripts are JavaScript: `${...}`
    there is a template literal, and variables reach them as process.env."""
    expansion = Expansion()
    data = expand(data, environ, (), expansion, verbatim=SCRIPT_TEXT_FIELDS)
    problems: list[Problem] = list(expansion.problems)
    problems += [
        (at, f"${{{name}}} is not set: set {name}, or write ${{{name}:-default}}")
        for at, name in expansion.unset
    ]
    return data, problems


def check_problems(check: WorldCheck, world_runs_real_checks: bool) -> list[Problem]:
    """A check's definition problems, by path from the check: it must say what it is. A request that
    is null or empty (its lines commented out), a value of the wrong type, a key production does not
    know, and, in a world that runs checks for real, a check of a runnable type that says neither how
    to run (request) nor what to play (behaviour) would otherwise become a scripted `pass`."""
    if "request" in check.model_fields_set and not check.request:
        got = "null" if check.request is None else "an empty mapping"
        return [(("request",), f"expected the check's request (url:, assertions: ...), got {got}; "
                 "to script the check instead, leave request out and give behaviour:")]  # fmt: skip
    plan = check.plan
    if plan.mode is Mode.SCRIPTED:
        if world_runs_real_checks and "behaviour" not in check.model_fields_set:
            return [((), f"{check.checkType} check with neither request nor behaviour, in a world that runs "
                         "checks for real: give request: to run it, or behaviour: to script it")]  # fmt: skip
        return []
    # The plan was decided from the definition parsed once (`_decide`): parsed is whether it parsed.
    parsed = plan.parsed is not None
    # Parsed: only the request's keys are left to look at (no dump of the whole check, 10,000 times).
    data = {"checkType": check.checkType, "request": check.request} if parsed else check.definition_data()
    problems: list[Problem] = list(hand_written_problems(data, parsed=parsed))
    if problems or plan.mode is not Mode.REAL or not parsed:
        return problems
    return list(plan.problems)


# The line of each field, or how to find them (a large file is read once, without its node graph;
# only a message needs the lines).
Lines = dict[Loc, int] | Callable[[], dict[Loc, int]] | None


def problem_lines(source: str, problems: list[Problem], found: Lines) -> list[str]:
    """`FILE:LINE: field: message`, by line (the line of the field, or of its nearest parent)."""
    lines = found() if callable(found) else found

    def line_of(loc: Loc) -> int | None:
        if not lines:
            return None
        while loc and loc not in lines:
            loc = loc[:-1]
        return lines.get(loc)

    out = []
    for loc, message in sorted(problems, key=lambda p: line_of(p[0]) or 0):
        line = line_of(loc)
        where = f"{source}:{line}" if line else source
        path = format_loc(loc)
        text = f"{where}: {path}: {message}" if path else f"{where}: {message}"
        if text not in out:
            out.append(text)
    return out


def short_problems(problems: list[Problem]) -> list[Problem]:
    """An unknown key's line without the list of allowed ones (a check allows about 60): the
    did-you-mean is what helps; for a check's own keys, production's properties are candidates too."""
    out: list[Problem] = []
    for at, message in problems:
        if message.startswith("unknown field") and len(at) >= 2 and at[-3:-1][:1] == ("checks",):
            message = unknown_key_message(str(at[-1]), CHECK_KEYS)
        short, _, allowed = message.partition(" allowed: ")
        # Without a did-you-mean, a short list of what is allowed (a URL request's 6 keys) helps.
        keep = "did you mean" not in short and allowed.count(",") < 12
        out.append((at, message if keep else short.rstrip()))
    return out


def request_problems(checks: Any, at: Loc) -> list[Problem]:
    """Unknown keys in the requests of checks that did not validate (`at`: where the list is): with
    the check-level problems, every problem of the file in one run (a `chekType` typo must not hide
    three `asertions`)."""
    out: list[Problem] = []
    for c, check in enumerate(checks if isinstance(checks, list) else []):
        if isinstance(check, dict) and isinstance(check.get("request"), dict):
            typed = {"checkType": "API", **check}
            found = short_problems(unknown_request_fields(typed))
            out += [((*at, c, *loc), message) for loc, message in found]
    return out


def read_document(text: str, source: str) -> tuple[Any, Lines]:
    """The data of YAML or JSON text and how to find the line of each field (JSON is YAML, but json
    gives better errors for it; JSON that YAML 1.1 cannot read just has no lines); WorldError when
    it cannot be read."""
    import yaml

    try:
        if text.lstrip().startswith("{"):
            data = json.loads(text)
        else:
            data = load_plain_or_bounded(text, WORLD_MAX_NODES)
    except TooLarge as exc:
        raise WorldError(f"{source}: too large: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f"{source}:{mark.line + 1}" if mark else source
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "syntax error"
        raise WorldError(f"{at}: not valid YAML or JSON ({what})") from None
    except json.JSONDecodeError as exc:
        raise WorldError(f"{source}:{exc.lineno}: not valid YAML or JSON ({exc.msg})") from None
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorldError(f"{source}: not valid YAML or JSON ({first})") from None
    return data, lines_later(text, WORLD_MAX_NODES)
