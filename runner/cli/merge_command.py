"""`testsession merge RESULTS.json...`: the parts of a sharded run (or, with --combine, different runs)
as one report and one gate: JUnit, markdown and results.json, the CI outputs, annotations and the
pull-request comment, and the exit code a single run of all of them would have had.

Every part is verified before it is judged (runner/job/merge_check.py); a part that cannot be read,
is larger than MAX_PART_BYTES or does not add up is exit 2 naming it, and the reports are written on
every exit: a refused merge's reports say it was refused and why, so the gate never passes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from runner.cli.common import exit_help

if TYPE_CHECKING:
    from runner.cli.common import Context

DEFAULT_DIR = "testsession-reports"
FILES = {"json": "results.json", "junit": "junit.xml", "markdown": "summary.md"}
# A part's results.json is refused above this size before it is read (a part of 100,000 results is
# ~62 MiB; parsing one costs ~10 x its size in memory): a planted huge file cannot exhaust the job.
MAX_PART_MIB = 64
MAX_PART_BYTES = MAX_PART_MIB * 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "merge",
        help="join the results.json of the parts of a sharded run into one report and one gate",
        description=(
            "Judge the results.json files of the parts of a run split with --shard (one per CI job) as "
            "one run, by the same gate as a run that was not split: write junit.xml, summary.md and "
            "results.json to DIR, publish the CI outputs and the pull-request comment once, and exit "
            "with the gate's code. Every part is verified first: a part missing or given twice, parts of "
            "different check sets, splits or commits, a part whose results are not the checks its header "
            f"names (emptied, a result deleted, copied or added), or one over {MAX_PART_MIB} MiB fail "
            "closed (exit 2, naming the part; the reports say the merge was refused)."
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
        "--allow-mixed-commits",
        action="store_true",
        help="join parts of different commits or testsession versions (refused by default); the "
        "report then names only what their commits share",
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


def read_part(path: str) -> str:
    """A part's text, read with a size cap: a regular file of at most MAX_PART_BYTES, else a
    UsageError naming it (a FIFO or device would block or never end; a huge file is refused before
    a byte of it is parsed)."""
    import os
    import stat

    from runner.core.errors import UsageError

    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{path}: is a directory, expected a results.json file")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{path}: not a regular file, expected a results.json file")
        if info.st_size > MAX_PART_BYTES:
            raise UsageError(_too_large(path, info.st_size))
        data = handle.read(MAX_PART_BYTES + 1)  # the file may have grown since fstat
    if len(data) > MAX_PART_BYTES:
        raise UsageError(_too_large(path, len(data)))
    try:
        return data.decode("utf-8-sig")  # a BOM from an editor is fine
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None


def _too_large(path: str, size: int) -> str:
    return (
        f"{path}: {size / 1024 / 1024:.1f} MiB, larger than a part can be ({MAX_PART_MIB} MiB, about "
        "100,000 results): not read"
    )


def handle(args: argparse.Namespace, ctx: Context) -> int:
    import os
    from contextlib import suppress
    from pathlib import Path

    from runner.ci import CiPublisher
    from runner.ci.comment import CommentPublisher, comment_key, comment_tokens
    from runner.ci.console import NORMAL, QUIET, VERBOSE, Console
    from runner.cli.error_reports import write_failed_start
    from runner.core.errors import SpecError, UsageError
    from runner.core.text import for_line
    from runner.job.digest import digest
    from runner.job.events import Finished, Observer, Observers
    from runner.job.merge import Part, merge
    from runner.job.policy import Gate
    from runner.reports import load_outcome, render_json, render_junit, render_markdown, write_atomic

    if args.comment:
        for token in comment_tokens(os.environ, args.gitlab_token_env):
            ctx.redact.add(token)
    directory = Path(args.output)
    parts: list[Part] = []
    refused: list[str] = []
    for path in args.results:  # every part, so that every problem is said at once
        try:
            parts.append(Part(path, load_outcome(read_part(path), path)))
        except UsageError as exc:  # the file name and the parser's words are text from outside
            refused.append(for_line(str(exc), 2000))
    try:
        if refused:
            raise SpecError(refused)
        outcome = merge(parts, combine=args.combine, allow_mixed=args.allow_mixed_commits)
    except SpecError as exc:  # the gate never passes: the reports say the merge was refused and why
        paths = {kind: str(directory / name) for kind, name in FILES.items()}
        with suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
        write_failed_start("merge", exc, paths, ctx, where="merge refused")
        raise
    if args.state:  # a sharded run is recorded once, here, and only once its parts are verified
        import sys

        from runner.cli.history_command import record_history

        def warn(text: str) -> None:
            print(ctx.redact(text), file=sys.stderr)

        outcome = record_history(outcome, args.state, warn, ctx.redact)
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
