"""`testsession merge RESULTS.json...`: the parts of a sharded run (or, with --combine, different runs)
as one report and one gate: JUnit, markdown and results.json, the CI outputs, annotations and the
pull-request comment, and the exit code a single run of all of them would have had."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from runner.cli.common import exit_help

if TYPE_CHECKING:
    from runner.cli.common import Context

DEFAULT_DIR = "testsession-reports"
FILES = {"json": "results.json", "junit": "junit.xml", "markdown": "summary.md"}


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "merge",
        help="join the results.json of the parts of a sharded run into one report and one gate",
        description=(
            "Judge the results.json files of the parts of a run split with --shard (one per CI job) as "
            "one run, by the same gate as a run that was not split: write junit.xml, summary.md and "
            "results.json to DIR, publish the CI outputs and the pull-request comment once, and exit "
            "with the gate's code. A part missing or given twice, or parts of different check sets, "
            "fail closed (exit 2, naming the part)."
        ),
        epilog=exit_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS.json", help="a part's results.json")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default=DEFAULT_DIR,
        help=f"where the reports go (default {DEFAULT_DIR})",
    )
    parser.add_argument(
        "--combine",
        action="store_true",
        help="also join results of different runs (e.g. local checks and a cloud session, each whole or "
        "with all its parts): one report and one gate, each session keeping where it ran",
    )
    parser.add_argument(
        "--comment",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="post the merged summary as the pull-request comment / merge-request note (updated in place)",
    )
    parser.add_argument(
        "--comment-key", metavar="KEY", help="what makes the comment the same one on the next run"
    )
    parser.add_argument(
        "--gitlab-token-env",
        metavar="NAME",
        default="TESTSESSION_GITLAB_TOKEN",
        help="the environment variable holding the GitLab token for the note",
    )
    parser.add_argument(
        "--state",
        metavar="FILE",
        help="add the merged run to each check's history in this state file, as one run (the parts of "
        "a sharded run record nothing themselves)",
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", action="store_true", help="say more, on stderr")
    loudness.add_argument("-q", "--quiet", action="store_true", help="print only failures and the verdict")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, ctx: Context) -> int:
    import os
    from pathlib import Path

    from runner.ci import CiPublisher
    from runner.ci.comment import CommentPublisher, comment_key, comment_tokens
    from runner.ci.console import NORMAL, QUIET, VERBOSE, Console
    from runner.cli.report_command import read_results
    from runner.core.errors import UsageError
    from runner.job.digest import digest
    from runner.job.events import Finished, Observer, Observers
    from runner.job.merge import Part, merge
    from runner.job.policy import Gate
    from runner.reports import load_outcome, render_json, render_junit, render_markdown, write_atomic

    parts = [Part(path, load_outcome(read_results(path), path)) for path in args.results]
    outcome = merge(parts, combine=args.combine)
    if args.state:
        import sys

        from runner.cli.history_command import record_history

        def warn(text: str) -> None:
            print(ctx.redact(text), file=sys.stderr)

        outcome = record_history(outcome, args.state, warn, ctx.redact)
    if args.comment:
        for token in comment_tokens(os.environ, args.gitlab_token_env):
            ctx.redact.add(token)
    directory = Path(args.output)
    renderers = {"json": render_json, "junit": render_junit, "markdown": render_markdown}
    written: dict[str, Path] = {}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for kind, name in FILES.items():
            path = directory / name
            write_atomic(path, ctx.redact(renderers[kind](outcome)))
            written[kind] = path
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write the merged reports: {exc.strerror or exc}") from None
    verbosity = VERBOSE if args.verbose else QUIET if args.quiet else NORMAL
    console = Console(environ=os.environ, redactor=ctx.redact, verbosity=verbosity, gate=Gate.of(outcome))
    observers: list[Observer] = [CiPublisher(console, ctx.redact)]
    if args.comment:
        key = args.comment_key or comment_key(None, os.environ)
        observers.append(CommentPublisher(key, args.gitlab_token_env, console, ctx.redact))
    Observers([*observers, console]).notify(Finished(digest(outcome), written))
    return outcome.exitCode
