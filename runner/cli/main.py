"""Entry point: builds the parser from every command module and maps errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from runner import __version__
from runner.cli.common import exit_help, settle_stdout
from runner.cli.parser import Parser
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
        settle_stdout()  # the exit code stands even when stdout was closed early


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    from runner.cli.common import run_handler

    return run_handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
