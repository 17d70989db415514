"""A world file from an account's checks as production lists them (`testsession checks export`).

Each check is written in the agreed world shape (docs/checks.md): production's fields as it sent
them, nothing the emulator invents. What the file holds, and why:
- Every check is kept. One that cannot run on this machine (BROWSER, MULTI_STEP, PLAYWRIGHT, AGENTIC,
  HEARTBEAT, ..., a setup or teardown script, a request this machine cannot send) is marked
  `runsLocally: false` under a comment that says why: a session that matches it then fails closed
  (settings.notRunnable: fail, written out), unless the user switches to `skip`.
- No secret is ever written. Production never reveals a secret variable's value; the file reads it
  from the environment as `${NAME:-}` (unset: the secret has no value, and the check fails naming
  it). The account's API key is `${TESTSESSION_API_KEY}`, read when the world is loaded.
- The account's own variables (GET /v1/variables) become the world account's `environmentVariables`,
  by the same rule: a plain one with its value, a secret one (or one whose value the key may not
  read) as `${NAME:-}`, marked secret so that whatever fills it is masked.
- The check's own text is kept as is: every `${` in it is written `$${` so that loading the world
  does not take it for an environment variable (world.py `escape_references`); a script is written
  as it is (loading never expands a script: `${...}` there is JavaScript).
- The output is deterministic (no date, the service's order): exporting again shows in a diff only
  what changed in the account.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from runner.checks.variables import template_names
from runner.core.text import for_line
from runner.emulator.core.world import (
    DEFINITION_FIELDS,
    Executor,
    WorldCheck,
    escape_document,
    escape_references,
)
from runner.models.check_definitions import (
    ApiRequest,
    CheckDefinition,
    DnsRequest,
    Runs,
    TcpRequest,
    UrlRequest,
    kind_of,
    parse_check_definition,
    unknown_request_fields,
)
from runner.models.problems import describe_validation_error, format_loc
from runner.models.resources import CHECK_LOCATIONS

# In the order a reader wants them: what the check is, whether it runs here, then its definition.
FIELD_ORDER = (
    "id", "name", "checkType", "runsLocally", "activated", "tags", "locations", "frequency",
    "frequencyOffset", "shouldFail", "degradedResponseTime", "maxResponseTime", "degradedPacketLossThreshold",
    "maxPacketLossThreshold", "request",
    "environmentVariables", "runtimeId", "script", "localSetupScript", "localTearDownScript",
    "setupSnippetId", "tearDownSnippetId", "setupScriptPath", "tearDownScriptPath", "scriptPath",
    "sharedFiles", "projectDir", "playwrightConfig",
)  # fmt: skip
WORLD_FIELDS = frozenset(FIELD_ORDER) - {"runsLocally"}
assert set(DEFINITION_FIELDS) <= WORLD_FIELDS
# Variables a run provides itself (runner/checks/variables.py): never asked of the user.
BUILT_INS = frozenset({"CHECK_NAME", "CHECK_ID", "CHECK_TYPE", "ACCOUNT_ID", "REGION", "REQUEST_URL"})
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INDENT = " " * 6  # a check's lines under `    checks:`


@dataclass(frozen=True)
class ExportedCheck:
    id: str
    name: str
    check_type: str
    reason: str | None  # None: runs locally; else why it cannot
    secrets: tuple[str, ...] = ()  # environment variables its secrets are read from


@dataclass(frozen=True)
class Export:
    text: str
    checks: tuple[ExportedCheck, ...]
    secrets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # variable -> check names
    # {{NAME}} a runnable check uses that neither a check nor the account defines.
    account_variables: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # checks that cannot be written at all (no id), as one line each

    @property
    def runnable(self) -> int:
        return sum(1 for check in self.checks if check.reason is None)


def env_name(key: str) -> str:
    """The environment variable a secret variable is read from: its key, made a valid name."""
    if _ENV_NAME.match(key):
        return key
    name = re.sub(r"[^A-Za-z0-9_]", "_", key)
    return name if _ENV_NAME.match(name) else "_" + name


def matches_tags(check: dict[str, Any], tags: Sequence[str]) -> bool:
    """Production's tag filter: at least one of `tags` (every check when none is given)."""
    own = check.get("tags") or []
    return not tags or any(tag in own for tag in tags)


def _definition_problem(exc: ValidationError) -> str:
    return describe_validation_error(exc)[0]


def _world_fields(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields of `data` a world check holds, and what had to be left out (`field: why`).
    pydantic.ValidationError only when its id, name or type cannot be written at all."""
    out = {name: data[name] for name in FIELD_ORDER if name in WORLD_FIELDS and data.get(name) is not None}
    if not isinstance(out.get("name"), str) or not out["name"]:
        out["name"] = str(out["id"])
    if "checkType" in out:
        out["checkType"] = str(out["checkType"])
    if isinstance(out.get("environmentVariables"), list):
        out["environmentVariables"] = [
            {k: v for k, v in variable.items() if k in ("key", "value", "secret", "locked")}
            if isinstance(variable, dict)
            else variable
            for variable in out["environmentVariables"]
        ]
    dropped: list[str] = []
    # A field of an impossible shape is left out (named in the comment), never the whole check: each
    # round removes one field or ends.
    while True:
        try:
            WorldCheck.model_validate(_without_secret_values(out))
            return out, dropped
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            name = str(loc[0]) if loc else ""
            if name in ("id", "name", "checkType") or name not in out:
                raise
            dropped.append(_definition_problem(exc))
            del out[name]


def _drop_unknown_request_fields(check: dict[str, Any]) -> list[str]:
    """Leaves out of `check` what a world file may not hold in a request (the world reads requests
    strictly, models/check_definitions.hand_written_problems): keys production's schema does not
    have, and the nulls its lenient reading takes as absent (`assertions: null`, an empty request).
    Returns the paths of the unknown keys left out."""
    request = check.get("request")
    if not isinstance(request, dict):
        return []
    request = check["request"] = copy.deepcopy(request)  # the caller's stays as production sent it
    unknown = [loc for loc, _ in unknown_request_fields(check)]
    for loc in unknown:  # only mapping keys go: the list indices of the others stay right
        parent: Any = request
        for part in loc[1:-1]:
            parent = parent[part]
        parent.pop(loc[-1], None)
    if "assertions" in request and request["assertions"] is None:
        del request["assertions"]
    if not request:
        del check["request"]
    return [format_loc(loc) for loc in unknown]


def _without_secret_values(data: dict[str, Any]) -> dict[str, Any]:
    """As the world loads it with the secrets' variables unset."""
    variables = data.get("environmentVariables")
    if not isinstance(variables, list):
        return data
    return {
        **data,
        "environmentVariables": [
            {**v, "value": None} if isinstance(v, dict) and v.get("secret") else v for v in variables
        ],
    }


def _not_runnable(check: dict[str, Any]) -> tuple[str | None, CheckDefinition | None]:
    """Why `check` (world fields) cannot run here, and its definition when it parses."""
    try:
        definition = parse_check_definition(_without_secret_values(check))
    except ValidationError as exc:
        return f"its definition does not fit production's shape ({_definition_problem(exc)})", None
    reason = definition.local_support()
    runs = kind_of(definition.checkType).runs  # CHECK_KINDS, the one table
    browser = runs is Runs.SCRIPT  # BROWSER, MULTI_STEP: the script is what runs
    if reason is None and check.get("script") and not browser:
        reason = "checks with a script cannot run locally"
    if reason is None and runs is Runs.SUITE:
        reason = (
            "a Playwright check suite runs its project's own files (production keeps them as a code bundle, "
            "not in the check): write it in a checks file beside the project (docs/checks.md)"
        )
    if reason is None and check.get("request") is None and not browser:
        reason = f"{definition.checkType} check without a request: nothing to run here"
    if reason is None:
        problems = definition.problems()
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            reason = f"its request cannot run here: {problems[0]}{more}"
    return reason, definition


def _used_variables(definition: CheckDefinition) -> set[str]:
    """{{NAME}} in the fields a run fills in (variables.py: URL, query and header values, body,
    basic auth; socket_fields.py: TCP's hostname, port and data, DNS's query, nameServer, port)."""
    request = definition.request
    texts: list[str] = []
    if isinstance(request, (ApiRequest, UrlRequest)):
        texts.append(request.url)
    if isinstance(request, ApiRequest):
        texts += [request.body, *(p.value for p in request.queryParameters)]
        texts += [h.value for h in request.headers]
        if request.basicAuth is not None:
            texts += [request.basicAuth.username, request.basicAuth.password]
    if isinstance(request, TcpRequest):
        texts += [request.hostname, request.data or "", request.body or ""]
    if isinstance(request, DnsRequest):
        texts += [request.query, request.nameServer or ""]
    if isinstance(request, (TcpRequest, DnsRequest)) and isinstance(request.port, str):
        texts.append(request.port)
    return {
        name
        for text in texts
        for name in template_names(text)
        if _ENV_NAME.match(name) and name not in BUILT_INS
    }


def _convert(data: dict[str, Any]) -> tuple[dict[str, Any], ExportedCheck, set[str]]:
    """One check of production's list as a world check (written form), its summary, the variables it
    uses that it does not define."""
    check, dropped = _world_fields(data)
    unknown = _drop_unknown_request_fields(check)
    reason, definition = _not_runnable(check)
    if unknown and reason is None:
        # Run without them, it could pass where production, which reads them, fails.
        reason = "its request has fields this version does not know (left out): " + ", ".join(unknown)
    if definition is None:  # the request cannot even be read: kept out, the check stays
        dropped.append("request: left out, it does not fit production's shape")
        check.pop("request", None)
    if dropped and reason is None:
        reason = "fields of an impossible shape were left out: " + "; ".join(dropped)
    used: set[str] = set()
    if reason is None and definition is not None:
        own = {v.key for v in definition.environmentVariables}
        used = _used_variables(definition) - own
    written = escape_document(check)
    secrets: list[str] = []
    for variable in written.get("environmentVariables") or []:
        if isinstance(variable, dict) and variable.get("secret"):
            name = env_name(str(variable.get("key", "")))
            variable["value"] = f"${{{name}:-}}"  # the only `${` written unescaped: it is ours
            secrets.append(name)
    if reason is not None:
        written["runsLocally"] = False
    ordered = {name: written[name] for name in FIELD_ORDER if name in written}
    summary = ExportedCheck(
        id=str(check["id"]),
        name=str(check["name"]),
        check_type=str(check.get("checkType") or "API"),
        reason=reason,
        secrets=tuple(dict.fromkeys(secrets)),
    )
    return ordered, summary, used


def _account_variables(variables: Iterable[dict[str, Any]]) -> tuple[list[str], list[str], set[str]]:
    """The account's variables (GET /v1/variables) as world lines, the environment variables its
    secrets are read from, and every key."""
    lines: list[str] = []
    secrets: list[str] = []
    keys: set[str] = set()
    for variable in variables:
        key = variable.get("key")
        if not isinstance(key, str) or not key or key in keys:
            continue  # production's keys are unique and required: nothing to write for another
        keys.add(key)
        value = variable.get("value")
        fields = [f"key: {_scalar(escape_references(key))}"]
        comment = ""
        if variable.get("secret") or not isinstance(value, str):
            name = env_name(key)
            fields += [f'value: "${{{name}:-}}"', "secret: true"]  # the only `${` written unescaped
            secrets.append(name)
            why = "secret" if variable.get("secret") else "its value is not readable with this key"
            comment = f"  # {why}: set {name} in the environment"
        else:
            fields.append(f"value: {_scalar(escape_references(value))}")
        if variable.get("locked"):
            fields.append("locked: true")
        lines.append(f"      - {{{', '.join(fields)}}}{comment}")
    return lines, secrets, keys


def _scalar(value: Any) -> str:
    """One YAML scalar (a JSON string is a YAML double-quoted one)."""
    return json.dumps(value, ensure_ascii=False)


def _comment(text: str) -> str:
    return "# " + for_line(text, limit=400)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Multi-line text (a script, a body) as a literal block where YAML allows one (libyaml's
    emitter when PyYAML has it)."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def _check_block(check: dict[str, Any], summary: ExportedCheck, indent: str = _INDENT) -> list[str]:
    title = f"{summary.name} ({summary.check_type})"
    verdict = "runs locally" if summary.reason is None else f"kept, not runnable here: {summary.reason}"
    dumped = yaml.dump(
        [check], Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
    return [indent + _comment(f"{title}: {verdict}")] + [indent + line for line in dumped.splitlines()]


def _checks_file_head(
    tags: Sequence[str], account_variables: tuple[str, ...], variable_lines: list[str], any_check: bool
) -> list[str]:
    """A checks file's lines before its checks: what it is, its variables."""
    lines = [
        "# Checks file written by `testsession checks export`: the checks of one account, in production's",
        "# shape (docs/checks.md). Run them against your build: testsession run --checks THIS_FILE",
        "# No secret is written: ${NAME:-} below is read from the environment on load. A check marked",
        "# runsLocally: false cannot run on this machine: a session that matches it fails closed.",
    ]
    if tags:
        lines.append(_comment("Checks with at least one of the tags: " + ", ".join(tags)))
    if account_variables:
        lines += [
            "# Variables the checks use ({{NAME}}) that neither a check nor the account defines: give",
            "# them under variables: ({key: NAME, value: ...}) or with --env NAME=VALUE:",
            "# " + for_line(", ".join(account_variables), limit=300),
        ]
    lines.append("# The account's own variables (GET /v1/variables), in production's shape.")
    lines.append("variables:" + ("" if variable_lines else " []"))
    lines += [line.replace("      - ", "  - ", 1) for line in variable_lines]
    lines.append("checks:" + ("" if any_check else " []"))
    return lines


def export_world(
    checks: Iterable[dict[str, Any]],
    *,
    account_id: str,
    key_variable: str = "TESTSESSION_API_KEY",
    tags: Sequence[str] = (),
    variables: Iterable[dict[str, Any]] = (),
    form: Literal["checks", "world"] = "world",
) -> Export:
    """The world file of `checks` (production's JSON, as GET /v1/checks lists them), the ones
    matching `tags` (at least one) kept, and the account's `variables` (as GET /v1/variables lists
    them); form `checks`: the same as a checks file (`run --checks FILE`, checksfile.py)."""
    blocks: list[str] = []
    summaries: list[ExportedCheck] = []
    secrets: dict[str, list[str]] = {}
    used: set[str] = set()
    locations: list[str] = list(CHECK_LOCATIONS)
    left_out: list[str] = []
    for data in checks:
        if not matches_tags(data, tags):
            continue
        if not isinstance(data.get("id"), str) or not data["id"]:
            left_out.append(f"a check without an id ({for_line(data.get('name'), 80)}): left out")
            continue
        try:
            check, summary, names = _convert(data)
        except ValidationError as exc:
            left_out.append(f"check {for_line(data['id'], 80)}: left out ({_definition_problem(exc)})")
            continue
        summaries.append(summary)
        blocks += _check_block(check, summary, "  " if form == "checks" else _INDENT)
        used |= names
        for name in summary.secrets:
            secrets.setdefault(name, []).append(summary.name)
        locations += [loc for loc in check.get("locations") or [] if loc not in locations]
    variable_lines, account_secrets, defined = _account_variables(variables)
    for name in account_secrets:
        secrets.setdefault(name, []).insert(0, "the account")
    account_variables = tuple(sorted(used - defined))
    if form == "checks":
        lines = _checks_file_head(tags, account_variables, variable_lines, bool(summaries))
        return Export(
            text="\n".join(lines + blocks) + "\n",
            checks=tuple(summaries),
            secrets={name: tuple(dict.fromkeys(owners)) for name, owners in secrets.items()},
            account_variables=account_variables,
            left_out=tuple(left_out),
        )
    lines = [
        "# World file written by `testsession checks export`: the checks of one account, in production's",
        "# shape (docs/checks.md). Check it: testsession emulator --check --world THIS_FILE",
        "# Run them here: testsession run --emulator --world THIS_FILE (with your spec or flags).",
        "# No secret is written: ${NAME} and ${NAME:-} below are read from the environment on load.",
    ]
    if tags:
        lines.append(_comment("Checks with at least one of the tags: " + ", ".join(tags)))
    executor = Executor()
    lines += [
        "settings:",
        "  # A session that matches a check marked runsLocally: false fails closed; `skip` leaves such",
        "  # checks out of every session instead.",
        "  notRunnable: fail",
        "  # Real checks: how many run at once, and how much of each response is read.",
        f"  executor: {{concurrency: {executor.concurrency}, bodyBytes: {executor.bodyBytes}}}",
    ]
    if len(locations) > len(CHECK_LOCATIONS):
        lines.append("  locations: " + _scalar([escape_references(loc) for loc in locations]))
    lines += [
        "accounts:",
        f"  - id: {_scalar(escape_references(account_id))}",
        '    name: "Exported checks"',
        "    # The API key is read from the environment when the world is loaded; it is never written.",
        "    keys:",
        f'      - {{key: "${{{key_variable}}}", role: read-write}}',
    ]
    if account_variables:
        lines += [
            "    # Variables the checks use ({{NAME}}) that neither a check nor the account defines. Give",
            "    # them here ({key: NAME, value: ...}) or with the session's environment variables:",
            "    # " + for_line(", ".join(account_variables), limit=300),
        ]
    if variable_lines:
        lines += [
            "    # The account's own variables (GET /v1/variables); a secret is read from the environment.",
            "    environmentVariables:",
        ]
        lines += variable_lines
    else:
        lines.append("    environmentVariables: []")
    lines.append("    checks:" + ("" if summaries else " []"))
    text = "\n".join(lines + blocks) + "\n"
    return Export(
        text=text,
        checks=tuple(summaries),
        secrets={name: tuple(dict.fromkeys(owners)) for name, owners in secrets.items()},
        account_variables=account_variables,
        left_out=tuple(left_out),
    )
