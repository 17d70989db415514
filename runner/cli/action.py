"""The GitHub Action's entry point: `python -m runner.cli.action`.

action.yml hands every input over as an environment variable (INPUT_SPEC, INPUT_TAGS, ...), never
interpolated into a script. This module turns them into the argument list of `testsession run`,
runs it in this process and exits with its exit code.

Input formats:
- tags: one tag group per line; the tags of a group are separated by commas and must all match.
- check-ids: ids separated by newlines, commas or spaces.
- env, secret-env: KEY=VALUE lines (blank lines and lines starting with # are skipped).
  secret-env values are masked (::add-mask::) before anything else is printed, masked in every
  output and report, and sent to the service with `secret: true`.
- fail-on-degraded, rca, comment, emulator: true or false; empty leaves the spec's setting.
- fail-on: any or new; empty leaves the spec's gate.failOn.
- baseline: path of an earlier run's results.json; empty leaves the spec's baseline.
- rerun-failed: path of an earlier run's results.json: run exactly the checks that failed there
  (`run --rerun-failed`; not with location, tags, check-ids).
- checks: path of a checks file (`run --checks`): the user's own checks, run from the runner against
  the build on it with the embedded engine; no account or key.
- build-command, build-url, build-timeout: start the build and wait until build-url answers
  (`run --build-command/--build-url/--build-timeout`); it is stopped when the step ends.
- build-reuse: true takes a build-url that already answers as the build (`run --build-reuse`); false
  (the default) leaves it to the spec's build.reuseExisting, and in CI (CI=true, as on every runner)
  an answering URL is then exit 2, as Playwright's reuseExistingServer: !process.env.CI.
- state: path of the local run's state file (`run --state`), kept with actions/cache. Only with
  checks, world or demo.
- world: path of a world file (`run --emulator --world`): a scripted world of the embedded emulator.
- demo: true runs the shipped demo world (`run --emulator --demo`), whose results are scripted.
- emulator: true without checks, world or demo is refused: it would run the demo world, whose
  scripted results must never pass a build's gate. With world or demo it is not needed.
- emulator-world, emulator-state: the old names of world and state (deprecated, still read).
- verbose: true says more (`run --verbose`, `merge --verbose`).
- merge: the parts' results.json (paths or globs, one a line): the step is `testsession merge`;
  allow-mixed-commits: true joins parts of different commits or versions (`--allow-mixed-commits`).
- comment: true posts the summary as a sticky pull-request comment with GITHUB_TOKEN (the
  github-token input; the job needs `permissions: pull-requests: write`).
- browsers: auto, true or false: whether the action sets up Node, Playwright and a browser before
  the run (`python -m runner.cli.action --browsers`, below); auto: when the checks file (the checks
  input, else the spec's `checks:`) holds a BROWSER, MULTI_STEP or PLAYWRIGHT check that runs here.

`python -m runner.cli.action --browsers` prints `browsers=true|false` and `playwright=<versions>`
(the @playwright/test versions the browser checks' runtimes use, joined by `-`: a part of the cache's
key): the lines the Action writes to its step outputs and the GitLab template reads
(TESTSESSION_BROWSERS, _CHECKS, _SPEC as INPUT_BROWSERS, _CHECKS, _SPEC). A checks file that cannot be
read says false: the run itself names its problems.
`python -m runner.cli.action --setup-browsers` installs those versions (PLAYWRIGHT_VERSIONS) where the
engine looks for them, and Playwright's Chromium when the machine has no Chrome or Chromium; what
cannot be set up is a warning, and the run reports its browser checks as not runnable here.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TextIO

from runner.core.exitcodes import ExitCode

# Inputs that become the environment variables the CLI reads itself (when not empty).
CREDENTIALS = {
    "INPUT_API_KEY": "TESTSESSION_API_KEY",
    "INPUT_ACCOUNT_ID": "TESTSESSION_ACCOUNT_ID",
    "INPUT_BASE_URL": "TESTSESSION_BASE_URL",
}
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Old input names still read: (new name, old name).
DEPRECATED_INPUTS = (("world", "emulator-world"), ("state", "emulator-state"))
DEMO_REFUSED = (
    'input emulator: "true" without checks or world would run the shipped demo world, whose results '
    "are scripted, not your build's: give checks: FILE (your checks, run against your build), or "
    'demo: "true" when the demo is meant'
)


class InputError(ValueError):
    """An input the action cannot use: one line naming the input and what is allowed."""


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def parse_bool(name: str, text: str) -> bool | None:
    value = text.strip().lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f"input {name}: expected true or false, got {text.strip()!r}")


def parse_tags(text: str) -> list[str]:
    """One `--tag` group per line: `a, b` -> `a,b` (a check needs both)."""
    groups = []
    for line in _lines(text):
        tags = [tag.strip() for tag in line.split(",") if tag.strip()]
        if tags:
            groups.append(",".join(tags))
    return groups


def parse_ids(text: str) -> list[str]:
    return [item for item in re.split(r"[\s,]+", text) if item]


def parse_env(name: str, text: str) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            # Never echo the line: it may hold a secret value.
            raise InputError(f"input {name}, line {number}: expected KEY=VALUE, KEY of letters, digits, _")
        pairs.append((key, value))
    return pairs


def build_argv(environ: Mapping[str, str]) -> list[str]:
    """The `testsession run` arguments for the action's inputs."""

    def get(name: str) -> str:
        return environ.get(f"INPUT_{name}", "").strip()

    if get("MERGE"):
        return merge_argv(environ)
    if parse_bool("allow-mixed-commits", get("ALLOW_MIXED_COMMITS")):
        raise InputError("input allow-mixed-commits: only with merge (it is how the parts are joined)")
    argv = ["run"]
    if get("SPEC"):
        argv.append(get("SPEC"))
    if get("SHARD"):
        argv += ["--shard", get("SHARD")]
    if get("SHARD_DURATIONS"):
        argv += ["--shard-durations", get("SHARD_DURATIONS")]
    if get("LOCATION"):
        argv += ["--location", get("LOCATION")]
    for group in parse_tags(environ.get("INPUT_TAGS", "")):
        argv += ["--tag", group]
    for check_id in parse_ids(get("CHECK_IDS")):
        argv += ["--check-id", check_id]
    if get("ENVIRONMENT"):
        argv += ["--environment", get("ENVIRONMENT")]
    for key, value in parse_env("env", environ.get("INPUT_ENV", "")):
        argv += ["--env", f"{key}={value}"]
    if get("TIMEOUT"):
        try:
            timeout = float(get("TIMEOUT"))
        except ValueError:
            raise InputError(f"input timeout: expected seconds, got {get('TIMEOUT')!r}") from None
        argv += ["--timeout", f"{timeout:g}"]
    if parse_bool("fail-on-degraded", get("FAIL_ON_DEGRADED")):
        argv.append("--fail-on-degraded")
    fail_on = get("FAIL_ON").lower()
    if fail_on:
        if fail_on not in ("any", "new"):
            raise InputError(f"input fail-on: expected any or new, got {get('FAIL_ON')!r}")
        argv += ["--fail-on", fail_on]
    if get("BASELINE"):
        argv += ["--baseline", get("BASELINE")]
    if get("RERUN_FAILED"):
        argv += ["--rerun-failed", get("RERUN_FAILED")]
    if parse_bool("rca", get("RCA")) is False:
        argv.append("--no-rca")
    for kind in ("junit", "markdown", "json"):
        path = get(f"{kind.upper()}_PATH")
        if path:
            argv += [f"--{kind}", path]
    comment = parse_bool("comment", get("COMMENT"))
    if comment is not None:
        argv.append("--comment" if comment else "--no-comment")
    argv += _local_run(get)
    if parse_bool("verbose", get("VERBOSE")):
        argv.append("--verbose")
    return argv


def _input(get: Callable[[str], str], name: str) -> str:
    """An input by its name, or by its old name (DEPRECATED_INPUTS); both given: an error."""
    old = next((o for n, o in DEPRECATED_INPUTS if n == name), None)
    value = get(_variable(name))
    if old is None or not get(_variable(old)):
        return value
    if value and value != get(_variable(old)):
        raise InputError(f"input {name}: give {name} or {old} (its old name), not both")
    return get(_variable(old))


def _variable(name: str) -> str:
    return name.upper().replace("-", "_")


def _local_run(get: Callable[[str], str]) -> list[str]:
    """The arguments of a run on this runner: the user's checks (or a world, or the demo) against the
    build, which may be started and awaited here."""
    argv: list[str] = []
    checks, world, state = get("CHECKS"), _input(get, "world"), _input(get, "state")
    demo = parse_bool("demo", get("DEMO"))
    emulator = parse_bool("emulator", get("EMULATOR"))
    given = [name for name, value in (("checks", checks), ("world", world), ("demo", demo)) if value]
    if len(given) > 1:
        raise InputError(f"inputs {' and '.join(given)}: give one of them (each is what the run checks)")
    if checks:
        argv += ["--checks", checks]  # the embedded engine: no account, key or world
    if world or demo:
        argv.append("--emulator")
        argv += ["--world", world] if world else ["--demo"]
    elif emulator and not checks:
        raise InputError(DEMO_REFUSED)
    if state:
        if not (checks or world or demo):
            raise InputError(
                "input state: only with checks, world or demo (it is the local run's state file)"
            )
        argv += ["--state", state]
    if get("BUILD_COMMAND"):
        argv += ["--build-command", get("BUILD_COMMAND")]
    if get("BUILD_URL"):
        argv += ["--build-url", get("BUILD_URL")]
    elif get("BUILD_COMMAND"):
        raise InputError("input build-command: needs build-url, the URL that answers once the build is up")
    if parse_bool("build-reuse", get("BUILD_REUSE")):
        argv.append("--build-reuse")  # its URL: build-url or the spec's build.url (run says if neither)
    if get("BUILD_TIMEOUT"):
        try:
            seconds = float(get("BUILD_TIMEOUT"))
        except ValueError:
            raise InputError(f"input build-timeout: expected seconds, got {get('BUILD_TIMEOUT')!r}") from None
        argv += ["--build-timeout", f"{seconds:g}"]
    return argv


def merge_argv(environ: Mapping[str, str]) -> list[str]:
    """The action's merge mode: `testsession merge` of the parts' results.json (input `merge`: paths
    or globs, one a line); the comment and annotations come from here, once for the whole run."""
    import glob

    if environ.get("INPUT_SHARD", "").strip():
        raise InputError("inputs merge and shard: a step runs a part (shard) or merges the parts (merge)")
    files: list[str] = []
    for line in environ.get("INPUT_MERGE", "").splitlines():
        for pattern in line.split():
            found = sorted(glob.glob(pattern, recursive=True))
            if not found:
                raise InputError(f"input merge: {pattern!r} matches no file (were the parts' reports saved?)")
            files += found
    argv = ["merge", *files]
    json_path = environ.get("INPUT_JSON_PATH", "").strip()
    if json_path:
        argv += ["-o", os.path.dirname(json_path) or "."]
    if parse_bool("allow-mixed-commits", environ.get("INPUT_ALLOW_MIXED_COMMITS", "")):
        argv.append("--allow-mixed-commits")
    if parse_bool("comment", environ.get("INPUT_COMMENT", "").strip()):
        argv.append("--comment")
    if parse_bool("verbose", environ.get("INPUT_VERBOSE", "")):
        argv.append("--verbose")
    return argv


def mask(values: Sequence[str], stream: TextIO | None = None) -> None:
    """GitHub hides a value only once told, so this runs before anything else is printed."""
    out = stream or sys.stdout
    for value in values:
        for part in value.splitlines():
            if len(part.strip()) >= 3:
                out.write(f"::add-mask::{part}\n")
    out.flush()


MAX_OUTPUT_FILE = 16 * 1024 * 1024  # the step outputs file read back; GitHub caps it at 1 MiB per step


def fallback_outputs(code: int, environ: Mapping[str, str], before: int = 0) -> None:
    """When the run ended before publishing (bad input or spec): still set status and exit-code.

    `before`: the size of $GITHUB_OUTPUT when the run started; outputs written since then are the
    run's own, and nothing is added.
    """
    path = environ.get("GITHUB_OUTPUT")
    if not path:
        return
    from runner.core.files import append_text, read_regular
    from runner.job.policy import RUN_VERDICTS

    try:
        if b"exit-code=" in read_regular(path, MAX_OUTPUT_FILE)[before:]:
            return
    except OSError:
        pass
    status = RUN_VERDICTS.get(ExitCode(code), "usage-error") if code in set(ExitCode) else "usage-error"
    try:
        append_text(path, f"status={status}\nexit-code={code}\n")
    except OSError as exc:
        print(f"testsession: error: could not write step outputs to {path}: {exc.strerror}", file=sys.stderr)


def _report_inputs(environ: Mapping[str, str]) -> list[str]:
    """`run` arguments naming only the spec and the report paths of the inputs (for the reports of
    inputs that could not be turned into arguments)."""
    argv = ["run"]
    spec = environ.get("INPUT_SPEC", "").strip()
    if spec:
        argv.append(spec)
    for kind in ("junit", "markdown", "json"):
        path = environ.get(f"INPUT_{kind.upper()}_PATH", "").strip()
        if path:
            argv += [f"--{kind}", path]
    return argv


def _size(path: str | None) -> int:
    try:
        return os.path.getsize(path) if path else 0
    except OSError:
        return 0


def main(environ: MutableMapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    for source, target in CREDENTIALS.items():
        if env.get(source, "").strip():
            env[target] = env[source].strip()
    try:
        secrets = parse_env("secret-env", env.get("INPUT_SECRET_ENV", ""))
    except InputError as exc:
        print(f"testsession: error: {exc}", file=sys.stderr)
        fallback_outputs(int(ExitCode.USAGE), env)
        return int(ExitCode.USAGE)
    mask([env.get("TESTSESSION_API_KEY", "")] + [value for _, value in secrets])

    from runner.cli.common import new_context, run_handler
    from runner.cli.error_reports import after_argument_error
    from runner.cli.main import build_parser
    from runner.cli.parser import UsageExit

    ctx = new_context(env)
    for key, value in secrets:
        ctx.redact.add(value)
        env[key] = value  # `run --secret-env KEY` reads the value from the environment, not argv
    try:
        argv = build_argv(env) + [arg for key, _ in secrets for arg in ("--secret-env", key)]
    except InputError as exc:
        print(f"testsession: error: {ctx.redact(str(exc))}", file=sys.stderr)
        after_argument_error(_report_inputs(env), str(exc), ctx)  # the reports asked for, naming it
        fallback_outputs(int(ExitCode.USAGE), env)
        return int(ExitCode.USAGE)
    print(ctx.redact("testsession " + " ".join(argv)), flush=True)
    before = _size(env.get("GITHUB_OUTPUT"))
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed its one-line error
        if isinstance(exc, UsageExit):
            after_argument_error(argv, exc.message, ctx)
        code = exc.code if isinstance(exc.code, int) else int(ExitCode.USAGE)
        fallback_outputs(code, env)
        return code
    code = run_handler(args, ctx)
    fallback_outputs(code, env, before)
    return code


BROWSER_MODES = ("auto", "true", "false")


def browser_needs(environ: Mapping[str, str]) -> tuple[bool, tuple[str, ...]]:
    """Whether the run needs Node and a browser, and the @playwright/test versions its browser checks'
    runtimes use (a PLAYWRIGHT suite brings its own). The browsers input: auto, true or false."""
    mode = environ.get("INPUT_BROWSERS", "").strip().lower() or "auto"
    if mode not in BROWSER_MODES:
        raise InputError(f"input browsers: expected auto, true or false, got {mode!r}")
    # The engine's browser checks run on Linux and macOS (browser/setup.py locks its cache with fcntl).
    if mode == "false" or os.name == "nt":
        return False, ()
    from runner.checks.protocols.browser.setup import DEFAULT_RUNTIME, RUNTIMES
    from runner.models.check_definitions import SCRIPT_CHECK_TYPES, SUITE_CHECK_TYPES

    types, runtimes = _check_types(environ)

    needed = mode == "true" or bool(types & {*SCRIPT_CHECK_TYPES, *SUITE_CHECK_TYPES})
    default = RUNTIMES[DEFAULT_RUNTIME]
    versions = tuple(sorted({RUNTIMES.get(r or DEFAULT_RUNTIME, default) for r in runtimes})) or (default,)
    return needed, versions if needed else ()


def _checks_path(environ: Mapping[str, str]) -> str | None:
    """The checks file the run reads: the checks input, else the spec's `checks:` (relative to the
    spec's folder; the spec: the spec input, else testsession.yml when it exists)."""
    checks = environ.get("INPUT_CHECKS", "").strip()
    if checks:
        return checks
    spec = environ.get("INPUT_SPEC", "").strip() or "testsession.yml"
    try:
        import yaml

        with open(spec, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    named = data.get("checks") if isinstance(data, dict) else None
    return os.path.join(os.path.dirname(spec), named) if isinstance(named, str) and named else None


def _check_types(environ: Mapping[str, str]) -> tuple[set[str], list[str | None]]:
    """The types of the checks that run here, and the runtimeIds of the BROWSER and MULTI_STEP ones."""
    path = _checks_path(environ)
    if path is None:
        return set(), []
    from runner.checkly import is_project

    if is_project(path):  # a Checkly project: its checks are known once Node has read it
        return {"PLAYWRIGHT"}, []
    from runner.checks.checksfile import load_checks_file
    from runner.checks.declared import Mode, WorldError
    from runner.models.check_definitions import SCRIPT_CHECK_TYPES

    try:
        checks = load_checks_file(path, environ).checks
    except (WorldError, OSError, ValueError):
        return set(), []
    real = [check for check in checks if check.plan.mode is Mode.REAL]
    runtimes = [check.runtimeId for check in real if check.checkType in SCRIPT_CHECK_TYPES]
    return {check.checkType for check in real}, runtimes


def browsers_main(environ: Mapping[str, str]) -> int:
    try:
        needed, versions = browser_needs(environ)
    except InputError as exc:
        print(f"testsession: error: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    print(f"browsers={'true' if needed else 'false'}")
    print(f"playwright={'-'.join(versions)}")
    return 0


def setup_browsers_main(environ: Mapping[str, str]) -> int:
    """The Playwright of each version in PLAYWRIGHT_VERSIONS (installed once into the engine's cache)
    and a browser for it; a warning, never a failed step, when one cannot be had."""
    import subprocess

    from runner.checks.protocols.browser import setup

    by_version = {version: runtime for runtime, version in setup.RUNTIMES.items()}
    versions = [v for v in environ.get("PLAYWRIGHT_VERSIONS", "").split("-") if v in by_version]
    for version in versions or [setup.RUNTIMES[setup.DEFAULT_RUNTIME]]:
        try:
            found = _set_up(by_version[version])
        except (setup.SetupError, OSError, subprocess.TimeoutExpired) as exc:
            print(f"::warning::testsession: browser checks cannot run on this runner: {exc}", flush=True)
            continue
        print(f"browser checks: {found}", flush=True)
    return 0


def _set_up(runtime: str) -> str:
    import subprocess
    import time
    from pathlib import Path

    from runner.checks.protocols.browser import setup

    deadline = time.monotonic() + setup.INSTALL_SECONDS
    playwright = setup.find_playwright(
        Path("/nonexistent"), runtime, progress=print, deadline=deadline, stop=None
    )
    try:
        browser = setup.find_browser(playwright)
    except setup.SetupError:
        print("no Chrome or Chromium on this runner: installing Playwright's Chromium ...", flush=True)
        command = [str(setup.node_tools().node), str(playwright.cli), "install", "chromium"]
        subprocess.run(command, check=False, timeout=setup.INSTALL_SECONDS)
        setup._BUILDS.pop((playwright.root, "chromium"), None)  # asked once per folder: ask again now
        browser = setup.find_browser(playwright)
    return f"Playwright {playwright.version} ({playwright.root}), browser {browser}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--browsers"]:
        raise SystemExit(browsers_main(os.environ))
    if sys.argv[1:] == ["--setup-browsers"]:
        raise SystemExit(setup_browsers_main(os.environ))
    raise SystemExit(main())
