"""`testsession validate FILE...` (offline check of spec files and checks files) and `testsession schema`
(JSON Schema)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from runner.core.exitcodes import ExitCode
from runner.core.text import for_line
from runner.core.words import counted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from runner.cli.common import Context
    from runner.models.quarantine import QuarantineEntry
    from runner.spec import RunSpec, SessionSpec


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    validate = subparsers.add_parser(
        "validate",
        help="check spec files and checks files offline: every problem as FILE:LINE: field: what is allowed",
        description=(
            "Check target specs and checks files (run --checks FILE) without contacting the service: "
            "a checks file is read by the loader `run --checks` uses. ${VAR} references are expanded "
            "from the environment. Exit 0 when every file is valid, 2 otherwise."
        ),
    )
    validate.add_argument(
        "specs", nargs="+", metavar="FILE", help="a spec file (YAML), or a checks file (YAML or JSON)"
    )
    validate.add_argument(
        "--allow-unset",
        action="store_true",
        help="do not report ${VAR} references to unset variables (check the shape only)",
    )
    validate.set_defaults(func=handle_validate)

    schema = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of the spec (for editors)",
        description=(
            "Print the JSON Schema (draft 2020-12) of the target spec on stdout. For completion in "
            "editors with yaml-language-server, save it and start the spec with "
            "`# yaml-language-server: $schema=testsession.schema.json`."
        ),
    )
    schema.set_defaults(func=handle_schema)


def _target(session: SessionSpec) -> str:
    target = session.target
    parts = []
    if target and target.matchTags:
        parts.append("tags " + " or ".join("+".join(group) for group in target.matchTags))
    if target and target.checkId:
        count = len(target.checkId)
        parts.append(counted(count, "check id"))
    return " and ".join(parts) or "all eligible checks"


def summary(spec: RunSpec) -> str:
    count = len(spec.sessions)
    sessions = "; ".join(f'"{s.name}" in {s.runLocation}: {_target(s)}' for s in spec.sessions)
    return f"{counted(count, 'session')}: {sessions}"


def handle_validate(args: argparse.Namespace, ctx: Context) -> int:
    from runner.cli.common import problem_line
    from runner.core.errors import SpecError
    from runner.spec import load_spec

    code = ExitCode.OK
    for path in args.specs:
        if _other_kind(path) == CHECKS_FILE:
            if not _validate_checks(path, ctx):
                code = ExitCode.USAGE
            continue
        try:
            spec = load_spec(path, os.environ, allow_unset=args.allow_unset)
            _judge_quarantine(spec.quarantine, None, path)
        except SpecError as exc:
            code = ExitCode.USAGE
            for problem in exc.problems:
                print(problem_line(ctx, problem), file=sys.stderr)
            count = len(exc.problems)
            print(f"{path}: {counted(count, 'problem')}", file=sys.stderr)
            if _other_kind(path) == WORLD_FILE:
                print(f"{path}: {WORLD_HINT.format(path=path)}", file=sys.stderr)
            continue
        for session in spec.sessions:
            for secret in session.secret_values():
                ctx.redact.add(secret)
        print(ctx.redact(f"{path}: ok ({summary(spec)})"))
    return int(code)


CHECKS_FILE, WORLD_FILE = "checks file", "world file"
WORLD_HINT = "this looks like a world file: check it with `testsession emulator --check --world {path}`"


def _other_kind(path: str) -> str | None:
    """CHECKS_FILE or WORLD_FILE when the file is one of those rather than a spec, by its shape: a
    list, or `checks:` a list without a spec's `sessions`/`runLocation`, is a checks file (as `run
    --checks` reads it); `accounts:` a world. None: a spec, or a file that cannot be read as one."""
    from runner.core.files import read_input_text
    from runner.emulator.core.world import read_document

    try:  # read as `run --checks` reads a checks file (16 MiB, its node bound), not as a spec (1 MB)
        data, _ = read_document(read_input_text(path, "file"), path)
    except Exception:
        return None
    if isinstance(data, dict) and "accounts" in data:
        return WORLD_FILE
    session = isinstance(data, dict) and ("sessions" in data or "runLocation" in data)
    if isinstance(data, list) or (
        isinstance(data, dict) and isinstance(data.get("checks"), list) and not session
    ):
        return CHECKS_FILE
    return None


def _validate_checks(path: str, ctx: Context) -> bool:
    """A checks file, read as `run --checks` reads it: True when it can run (a check that cannot run
    on this machine is named: a session that matches it fails closed)."""
    from runner.checks.checksfile import load_checks_file
    from runner.checks.declared import Mode, WorldError
    from runner.cli.common import problem_line
    from runner.core.errors import SpecError

    try:
        checks = load_checks_file(path, os.environ)
    except WorldError as exc:
        for problem in exc.problems:
            print(problem_line(ctx, problem), file=sys.stderr)
        print(f"{path}: {counted(len(exc.problems), 'problem')} (a checks file)", file=sys.stderr)
        return False
    for secret in checks.secrets:
        ctx.redact.add(secret)
    loaded = checks.checks
    try:
        _judge_quarantine(checks.quarantine, [(c.id, c.name) for c in loaded], path)
    except SpecError as exc:
        for problem in exc.problems:
            print(ctx.redact(problem), file=sys.stderr)
        print(f"{path}: {counted(len(exc.problems), 'problem')} (a checks file)", file=sys.stderr)
        return False
    cannot = [c for c in loaded if c.plan.mode is not Mode.REAL]
    for check in cannot:
        print(
            ctx.redact(
                f"{path}: {for_line(check.name, 200)}: cannot run on this machine: {check.plan.reason}"
            ),
            file=sys.stderr,
        )
    for line in checks.warnings():
        print(ctx.redact(f"{path}: {line}"), file=sys.stderr)
    runs = f"{len(loaded) - len(cannot)} run here"
    if cannot:
        runs += f", {len(cannot)} cannot (a session that matches one fails closed)"
    print(ctx.redact(f"{path}: ok (a checks file: {counted(len(loaded), 'check')}, {runs})"))
    return True


def _judge_quarantine(
    entries: Sequence[QuarantineEntry], checks: list[tuple[str | None, str]] | None, path: str
) -> None:
    """The quarantine entries judged as `run` judges them at its start, on the same day (the clock
    seam): SpecError for every entry `run` would refuse. `checks` None: a spec, whose checks the
    service names only after they ran (then only `until` and duplicates can be judged)."""
    if not entries:
        return
    from runner.core import clock
    from runner.job.quarantine import resolve

    resolve(entries, checks, clock.today(), path)


def handle_schema(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from runner.spec import spec_json_schema

    print(json.dumps(spec_json_schema(), indent=2))
    return int(ExitCode.OK)
