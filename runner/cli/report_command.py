"""`testsession report RESULTS.json`: render junit.xml and summary.md again from a saved results.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.cli.common import Context

import argparse
import os

from runner.core.exitcodes import ExitCode


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "report",
        help="render the JUnit and markdown reports again from a saved results.json",
        description=(
            "Render junit.xml and summary.md again from the results.json of an earlier run, "
            "for example with a newer testsession or after the files were lost. "
            "Writes beside RESULTS.json unless --junit/--markdown say otherwise."
        ),
    )
    parser.add_argument("results", metavar="RESULTS.json", help="a results.json written by `testsession run`")
    parser.add_argument(
        "--junit", metavar="PATH", help="where to write the JUnit XML (default: junit.xml beside it)"
    )
    parser.add_argument(
        "--markdown",
        metavar="PATH",
        help="where to write the markdown summary (default: summary.md beside it)",
    )
    parser.set_defaults(func=handle)


def read_results(path: str) -> str:
    from runner.core.errors import UsageError
    from runner.core.files import InputFileError, read_input_text

    try:
        return read_input_text(path, "results.json file")  # a BOM from an editor is fine
    except InputFileError as exc:
        raise UsageError(str(exc)) from None


def handle(args: argparse.Namespace, ctx: Context) -> int:
    from runner.core.errors import UsageError
    from runner.reports import load_outcome, render_junit, render_markdown, write_atomic

    source: str = args.results
    outcome = load_outcome(read_results(source), source)
    directory = os.path.dirname(source)
    targets = (
        (args.junit or os.path.join(directory, "junit.xml"), render_junit),
        (args.markdown or os.path.join(directory, "summary.md"), render_markdown),
    )
    for path, render in targets:
        text = render(outcome)
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
        print(f"wrote {path}")
    return int(ExitCode.OK)
