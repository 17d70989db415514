"""The argument parser of every command: no abbreviations, and a did-you-mean for typos.

argparse would run `--time 5` as `--timeout 5` (a prefix of one flag); here a flag must be spelled
out. An unknown command or flag gets the closest known one in its one-line error.
"""

from __future__ import annotations

import argparse
import re
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

# Patterns, compiled by `re` (and kept in its cache) when an error is first read: a run without one
# compiles none.
_UNRECOGNIZED = r"unrecognized arguments: (.+)"
_CHOICE = r"invalid choice: '([^']*)' \(choose from (.+)\)"


class UsageExit(SystemExit):
    """argparse refused the arguments (exit 2); `message` is the error line it printed."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _command_parser(self) -> argparse.ArgumentParser:
        """The (sub)command parser the arguments chose: its flags are the ones to suggest."""
        parser: argparse.ArgumentParser = self
        for token in getattr(self, "_argv", []):
            found = None
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction) and token in action.choices:
                    found = action.choices[token]
            if found is not None:
                parser = found
        return parser

    def _flags(self) -> list[str]:
        parser = self._command_parser()
        return [flag for action in parser._actions for flag in action.option_strings]

    def error(self, message: str) -> NoReturn:
        # As argparse prints it (usage, then one line), raised as UsageExit so that `run` and `wait`
        # can still write their reports (cli/error_reports.py).
        # The top parser reports a subcommand's unknown flags: show that subcommand's usage.
        full = message + self._suggestion(message)
        parser = self._command_parser()
        with suppress(OSError, ValueError):  # stderr closed or broken: the exit code still says 2
            parser.print_usage(sys.stderr)
            sys.stderr.write(f"{parser.prog}: error: {full}\n")
        raise UsageExit(full)

    def _suggestion(self, message: str) -> str:
        import difflib  # only on an error: not at start-up

        unknown = re.search(_UNRECOGNIZED, message)
        if unknown:
            for word in unknown.group(1).split():
                if word.startswith("-"):
                    flag = word.split("=", 1)[0]
                    close = difflib.get_close_matches(flag, self._flags(), n=1, cutoff=0.6)
                    prefixed = [f for f in self._flags() if f.startswith(flag) and len(flag) > 2]
                    match = close or prefixed[:1]
                    if match:
                        return f"; did you mean {match[0]}?"
            return ""
        choice = re.search(_CHOICE, message)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), options, n=1, cutoff=0.5)
            if close:
                return f"; did you mean '{close[0]}'?"
        return ""
