"""`testsession validate SPEC...` (offline check of spec files) and `testsession schema` (JSON Schema)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from runner.core.exitcodes import ExitCode
from runner.core.words import counted

if TYPE_CHECKING:
    from runner.cli.common import Context
    from runner.spec import RunSpec, SessionSpec


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    validate = subparsers.add_parser(
        "validate",
        help="check spec files offline: every problem as FILE:LINE: field: what is allowed",
        description=(
            "Check target specs without contacting the service. ${VAR} references are expanded from "
            "the environment. Exit 0 when every spec is valid, 2 otherwise."
        ),
    )
    validate.add_argument("specs", nargs="+", metavar="SPEC", help="a spec file (YAML)")
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
    from runner.core.errors import SpecError
    from runner.spec import load_spec

    code = ExitCode.OK
    for path in args.specs:
        try:
            spec = load_spec(path, os.environ, allow_unset=args.allow_unset)
        except SpecError as exc:
            code = ExitCode.USAGE
            for problem in exc.problems:
                print(ctx.redact(problem), file=sys.stderr)
            count = len(exc.problems)
            print(f"{path}: {counted(count, 'problem')}", file=sys.stderr)
            other = _other_kind(path)
            if other:
                print(f"{path}: {other}", file=sys.stderr)
            continue
        for session in spec.sessions:
            for secret in session.secret_values():
                ctx.redact.add(secret)
        print(ctx.redact(f"{path}: ok ({summary(spec)})"))
    return int(code)


def _other_kind(path: str) -> str | None:
    """What to use when the file is not a spec but a world or a checks file (a hint, never a verdict)."""
    from runner.spec.yamlfile import parse_yaml, read_text

    try:
        data = parse_yaml(read_text(path), path).data
    except Exception:
        return None
    if isinstance(data, dict) and "accounts" in data:
        return f"this looks like a world file: check it with `testsession emulator --check --world {path}`"
    session = isinstance(data, dict) and ("sessions" in data or "runLocation" in data)
    if isinstance(data, list) or (
        isinstance(data, dict) and isinstance(data.get("checks"), list) and not session
    ):
        return f"this looks like a checks file: run it with `testsession run --checks {path}`"
    return None


def handle_schema(args: argparse.Namespace, ctx: Context) -> int:
    import json

    from runner.spec import spec_json_schema

    print(json.dumps(spec_json_schema(), indent=2))
    return int(ExitCode.OK)
