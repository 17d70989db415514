"""Entry point: builds the parser from every command module and maps errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from typing import TextIO

from runner import __version__
from runner.cli.common import exit_help
from runner.cli.parser import Parser, UsageExit
from runner.core.exitcodes import ExitCode

# Each module defines register(subparsers); handlers import their heavy dependencies lazily.
COMMAND_MODULES = (
    "runner.cli.run_command",
    "runner.cli.spec_commands",
    "runner.cli.report_command",
    "runner.cli.comment_command",
    "runner.cli.api_commands",
    "runner.cli.emulator_command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="testsession",
        description=(
            "Run monitoring checks as a test session against a new build, explain failures with "
            "root cause analyses, write JUnit and markdown reports, and exit with a code a "
            "pipeline can gate on."
        ),
        epilog=exit_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"testsession {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        for stream in (sys.stdout, sys.stderr):
            _settle(stream)


def _settle(stream: TextIO | None) -> None:
    """A stream nobody reads any more (`| head`, a closed pipe) is pointed at /dev/null: Python's
    flush at exit would otherwise fail and turn the exit code into 120, whatever the gate said."""
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        with suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageExit as exc:  # a bad flag of `run` or `wait` still leaves the reports asked for
        from runner.cli.common import new_context
        from runner.cli.error_reports import after_argument_error

        after_argument_error(list(sys.argv[1:] if argv is None else argv), exc.message, new_context())
        raise
    if args.command is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    from runner.cli.common import run_handler

    return run_handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
