"""Entry point: builds the parser from the command modules and maps errors to exit codes.

Start-up is part of the interface (`--version` in a pipeline's first step, shell completion): a
command's module is imported, and its parser built, only when that command or the full help needs it.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

from runner import __version__
from runner.core.exitcodes import ExitCode

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import TextIO

# Each module defines register(subparsers); handlers import their heavy dependencies lazily. The
# most used first: a named command is found after importing the modules up to its own.
COMMAND_MODULES = (
    "runner.cli.run_command",
    "runner.cli.spec_commands",
    "runner.cli.report_command",
    "runner.cli.merge_command",
    "runner.cli.history_command",
    "runner.cli.comment_command",
    "runner.cli.api_commands",
    "runner.cli.emulator_command",
)
DESCRIPTION = (
    "Run monitoring checks as a test session against a new build, explain failures with root cause "
    "analyses, write JUnit and markdown reports, and exit with a code a pipeline can gate on."
)
VERSION = f"testsession {__version__}"


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for `argv`: the command modules up to the one that defines the command `argv`
    names; every command when it names none (the help, a typo's did-you-mean)."""
    import argparse

    from runner.cli.parser import Parser

    parser = Parser(
        prog="testsession", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=VERSION)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
        if command in subparsers.choices:
            return parser
    from runner.cli.common import exit_help

    parser.epilog = exit_help()  # shown under the full help only
    return parser


def settle(stream: TextIO | None) -> None:
    """A reader that closed stdout or stderr early (`| head -c 1`) must not change the exit code.

    Python flushes the streams once more at exit; a broken pipe there prints "Exception ignored ...
    BrokenPipeError" and turns the gate's code into 120 (only with a buffered stream, which is how
    CI runners start Python). What is left in the buffer goes to /dev/null instead, as the Python
    docs advise for SIGPIPE.
    """
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # no file descriptor to replace: nothing left to flush at exit
            pass


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    finally:
        for stream in (sys.stdout, sys.stderr):  # the exit code stands even when one was closed early
            settle(stream)


def entry() -> None:
    """The `testsession` command (the console script and `python -m runner`): main(), then the
    interpreter's normal exit (atexit handlers, then it waits for any thread that is not a daemon;
    every thread a run starts is a daemon or joined before main() returns). Before it, what the
    command made is frozen out of the collector's way (core/memory.py); main() called in a process
    that lives on leaves the collector as it was."""
    code = main()
    from runner.core import memory

    memory.before_exit()
    sys.exit(code)


def _main(argv: list[str]) -> int:
    if argv == ["--version"]:  # needs nothing: answered before argparse and the commands load
        print(VERSION)
        return int(ExitCode.OK)
    from runner.cli.parser import UsageExit

    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except UsageExit as exc:  # a bad flag of `run` or `wait` still leaves the reports asked for
        from runner.cli.common import new_context
        from runner.cli.error_reports import after_argument_error

        after_argument_error(argv, exc.message, new_context())
        raise
    if args.command is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    from runner.cli.common import run_handler

    return run_handler(args)


if __name__ == "__main__":
    entry()
