"""`testsession comment [RESULTS.json]`: post or update the pull-request comment / merge-request note."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.cli.common import Context

import argparse
import os

from runner.core.exitcodes import ExitCode

DEFAULT_RESULTS = "testsession-reports/results.json"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "comment",
        help="post the summary of a saved results.json as a sticky PR comment / MR note",
        description=(
            "Post the markdown summary of an earlier run as a pull-request comment (GitHub Actions) "
            "or merge-request note (GitLab CI), and update that same comment on the next run instead "
            "of adding another. GitHub: GITHUB_TOKEN with pull-requests: write. GitLab: a token with "
            "the api scope in the variable --gitlab-token-env names. A comment that cannot be posted "
            "is one warning line and exit code 0: it never fails the pipeline."
        ),
    )
    parser.add_argument(
        "results",
        metavar="RESULTS.json",
        nargs="?",
        default=DEFAULT_RESULTS,
        help=f"a results.json written by `testsession run` (default {DEFAULT_RESULTS})",
    )
    parser.add_argument(
        "--spec",
        metavar="PATH",
        help="the spec the run used: with the branch it names the comment to update "
        "(default testsession.yml, as `run` without a spec)",
    )
    parser.add_argument("--key", help="name the comment to update yourself (instead of spec and branch)")
    parser.add_argument(
        "--gitlab-token-env",
        metavar="NAME",
        default=None,
        help="the environment variable holding the GitLab token (default TESTSESSION_GITLAB_TOKEN)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="say more on stderr")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, ctx: Context) -> int:
    import re

    from runner.ci.comment import (
        DEFAULT_GITLAB_TOKEN_VARIABLE,
        CommentError,
        comment_key,
        post_comment,
        warn,
    )
    from runner.ci.platform import platform_for
    from runner.cli.report_command import read_results
    from runner.core.errors import UsageError
    from runner.reports import load_outcome
    from runner.spec.model import COMMENT_KEY_PATTERN, ENV_NAME_PATTERN

    variable = args.gitlab_token_env or DEFAULT_GITLAB_TOKEN_VARIABLE
    if not re.fullmatch(ENV_NAME_PATTERN, variable):
        raise UsageError("--gitlab-token-env: expected a variable name (letters, digits, _)")
    if args.key is not None and not re.fullmatch(COMMENT_KEY_PATTERN, args.key):
        raise UsageError("--key: allowed are letters, digits and . _ / @ : + = -")
    outcome = load_outcome(read_results(args.results), args.results)
    key = args.key or comment_key(args.spec, os.environ)
    redact = ctx.redact
    try:
        posted = post_comment(
            outcome,
            platform_for(os.environ),
            key=key,
            redact=redact,
            gitlab_token_variable=variable,
            on_retry=print,
        )
    except CommentError as exc:
        warn(str(exc), redact)
        return int(ExitCode.OK)
    print(redact(posted.line()))
    return int(ExitCode.OK)
