"""Reports on every exit: a `run` or `wait` that ends before any session ran (a bad spec or flag,
missing credentials, a wrong base URL, an unknown session id) still writes the JUnit, markdown and
JSON it was asked for, and its CI outputs, each naming the problem and the fix.

The report paths are the ones the run would have used, as far as they are known: the loaded spec's
(flags applied); else the flags, over what can still be read of the spec file's `reports:`, over the
defaults. A report that cannot be written is skipped without a word: the error line says what
matters, and the exit code stands.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from runner.core.errors import Interrupted, SpecError, TestSessionError, exit_code_for, internal_error

if TYPE_CHECKING:
    from runner.cli.common import Context
    from runner.spec import RunSpec

KINDS = ("junit", "markdown", "json")
STDOUT = "-"
DEFAULT_SPEC = "testsession.yml"


def problem_text(exc: BaseException) -> str:
    if isinstance(exc, SpecError):
        return "\n".join(exc.problems)
    if isinstance(exc, (TestSessionError, Interrupted)):
        return str(exc)
    return internal_error(exc)


def planned_paths(
    spec: RunSpec | None,
    spec_path: str | None,
    flags: Mapping[str, str | None],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """kind -> path ('-' for stdout) of every report the run was asked for."""
    if spec is not None:
        wanted: dict[str, str | None] = {kind: getattr(spec.reports, kind) for kind in KINDS}
    else:
        from runner.spec import ReportSettings
        from runner.spec.loader import readable_report_paths

        defaults = ReportSettings()
        wanted = {kind: getattr(defaults, kind) for kind in KINDS}
        source = spec_path or (DEFAULT_SPEC if Path(DEFAULT_SPEC).is_file() else None)
        if source:
            wanted.update(readable_report_paths(source, environ))
        for kind in KINDS:
            if flags.get(kind) is not None:
                wanted[kind] = flags[kind] or None
    # Never over the spec, nor two reports in one file (the run refuses that: its error's reports
    # go only where nothing else would be lost).
    source = spec_path or (DEFAULT_SPEC if Path(DEFAULT_SPEC).is_file() else None)
    taken = {os.path.realpath(source)} if source else set()
    paths: dict[str, str] = {}
    for kind, path in wanted.items():
        if path and path != STDOUT:
            real = os.path.realpath(path)
            if real in taken:
                continue
            taken.add(real)
        if path:
            paths[kind] = path
    return paths


def write_failed_start(
    command: str,
    exc: BaseException,
    paths: Mapping[str, str],
    ctx: Context,
    environ: Mapping[str, str] | None = None,
    where: str | None = None,
) -> list[str]:
    """Writes the reports and CI outputs of a run that ended with `exc`; the paths written."""
    from runner.ci import CiPublisher
    from runner.ci.console import QUIET, Console
    from runner.core.redact import redact_data
    from runner.job.digest import digest
    from runner.job.events import Finished
    from runner.job.failed_start import NOT_STARTED, failed_start_outcome
    from runner.job.outcome import Outcome
    from runner.reports import render_json, render_junit, render_markdown, write_atomic

    env = os.environ if environ is None else environ
    code = exit_code_for(exc)
    outcome = failed_start_outcome(command, code, problem_text(exc), where or NOT_STARTED)
    outcome = Outcome.model_validate(redact_data(outcome.model_dump(), ctx.redact))
    renderers = {"json": render_json, "junit": render_junit, "markdown": render_markdown}
    written: dict[str, Path] = {}
    for kind, path in paths.items():
        with suppress(OSError, ValueError):
            text = ctx.redact(renderers[kind](outcome))
            if path == STDOUT:
                print(text.rstrip("\n"), flush=True)
                continue
            written[kind] = write_atomic(path, text)
    # GitHub outputs (status=usage-error, exit-code, ...), step summary; GitLab dotenv: on every exit.
    console = Console(stream=sys.stderr, environ=env, redactor=ctx.redact, verbosity=QUIET)
    CiPublisher(console, ctx.redact, sys.stderr).notify(Finished(digest(outcome), written))
    return [str(path) for path in written.values()]


class ReportsOnError:
    """Around a `run` or `wait` handler: an expected error leaves its reports, then goes on up to
    run_handler, which prints it (one line, as always)."""

    def __init__(self, command: str, args: argparse.Namespace, ctx: Context) -> None:
        self.command = command
        self.args = args
        self.ctx = ctx
        self.spec: RunSpec | None = None  # set once the spec is loaded (flags applied)
        self.where: str | None = None

    def __enter__(self) -> ReportsOnError:
        from runner.cli.common import handle_signals, stop_at_once

        # From the first step (loading the spec, before the Job takes the signals over): SIGINT or
        # SIGTERM ends the command with exit 130 or 143 and these reports, not a bare traceback.
        self._signals = handle_signals(stop_at_once)
        self._signals.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._signals.__exit__(None, None, None)
        if not isinstance(exc, (Exception, Interrupted)):  # KeyboardInterrupt, SystemExit: nothing to say
            return
        flags = {kind: getattr(self.args, kind, None) for kind in KINDS}
        spec_path = getattr(self.args, "spec", None)
        paths = planned_paths(self.spec, spec_path, flags, os.environ)
        if getattr(self.args, "detach", False):
            paths = {}  # --detach writes no reports; its CI outputs still say why it failed
        with suppress(Exception):  # the reports of an error must never hide the error itself
            write_failed_start(self.command, exc, paths, self.ctx, where=self.where)


def after_argument_error(argv: Sequence[str], message: str, ctx: Context) -> None:
    """A bad flag of `run` or `wait` (argparse refused it): reports from the flags that can be read."""
    if not argv or argv[0] not in ("run", "wait"):
        return
    from runner.core.errors import UsageError

    flags, spec_path = scan_argv(argv)
    paths = planned_paths(None, spec_path, flags, os.environ)
    with suppress(Exception):
        write_failed_start(argv[0], UsageError(message), paths, ctx)


# Flags of run and wait that take a value (to tell the spec argument from a flag's value).
_VALUED = {
    "--location", "--tag", "--check-id", "--env", "--env-file", "--secret-env", "--name", "--environment",
    "--rerun-failed", "--world", "--timeout", "--junit", "--markdown", "--json", "--fail-on",
    "--baseline", "--gitlab-token-env", "--base-url", "--account-id", "--account-header",
    "--request-timeout", "--spec",
}  # fmt: skip


def scan_argv(argv: Sequence[str]) -> tuple[dict[str, str | None], str | None]:
    """The report flags and the spec of an argument list argparse refused, read leniently."""
    flags: dict[str, str | None] = {}
    spec: str | None = None
    command = argv[0] if argv else ""
    index = 1
    while index < len(argv):
        token = argv[index]
        name, eq, value = token.partition("=")
        if name in _VALUED:
            if not eq:
                index += 1
                value = argv[index] if index < len(argv) else ""
            if name.lstrip("-") in KINDS:
                flags[name.lstrip("-")] = value
            elif name == "--spec" and command == "wait":
                spec = value
        elif not token.startswith("-") and command == "run" and spec is None:
            spec = token
        index += 1
    return flags, spec
