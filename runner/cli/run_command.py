"""`testsession run` (the main job) and `testsession wait` (gate on a session triggered earlier)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from runner.cli.common import STATE_HELP, add_connection_options, build_seconds, exit_help, test_session_id

if TYPE_CHECKING:
    from runner.cli.common import Context
    from runner.spec import Overrides, RunSpec

DEFAULT_SPEC = "testsession.yml"
LOCAL = "local"  # as runner.checks.checksfile.LOCAL (not imported here: start-up time)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = subparsers.add_parser(
        "run",
        help="trigger a test session from a spec, wait, analyse failures, write reports, gate",
        description=(
            "Trigger the test sessions of SPEC, wait for them, fetch root cause analyses of their "
            "failures, write JUnit, markdown and JSON reports, and exit with a gate code. "
            "Flags override the spec."
        ),
        epilog=exit_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "spec",
        nargs="?",
        help=f"the target spec (YAML; default {DEFAULT_SPEC}, none with --checks)",
    )
    run.add_argument(
        "--checks",
        metavar="FILE",
        help="run the checks of FILE (YAML or JSON, production's shape: a list of checks, or "
        "{checks: [...], variables: [...]}) against your build on this machine, with the embedded "
        "engine: no account, key or spec needed; results at location local",
    )
    target = run.add_argument_group("target (override the spec)")
    target.add_argument("--location", help="runLocation of every session")
    target.add_argument(
        "--tag",
        action="append",
        metavar="TAG[,TAG...]",
        help="a tag group: a check must carry every tag of the group; repeat for more groups",
    )
    target.add_argument("--check-id", action="append", metavar="ID", help="a check id; repeatable")
    target.add_argument("--env", action="append", metavar="KEY=VALUE", help="an environment variable")
    target.add_argument(
        "--env-file",
        metavar="FILE",
        help="environment variables from a dotenv file (KEY=VALUE lines, read as `checkly test "
        "--env-file` reads it); an --env of the same key wins",
    )
    target.add_argument(
        "--secret-env",
        action="append",
        metavar="KEY",
        help="a secret environment variable whose value is read from this process's variable KEY "
        "(never from the command line); masked everywhere and sent with secret: true",
    )
    target.add_argument("--name", help="the test session's name")
    target.add_argument("--environment", help="metadata.environment, e.g. preview or staging")
    target.add_argument(
        "--rerun-failed",
        metavar="RESULTS.json",
        help="run again exactly the checks that failed, errored, were cancelled or did not finish in "
        "that earlier run (by check id, one session per location); nothing to rerun exits 0",
    )
    build = run.add_argument_group(
        "the build under test (override the spec's build:)",
        "Start the build, wait until its URL answers, run the checks, stop the build (its whole process "
        "group) however the run ends. When the URL already answers, nothing is started or stopped.",
    )
    build.add_argument(
        "--build-command",
        metavar="COMMAND",
        help="shell command that starts the build and keeps running, e.g. 'npm start' (build.command)",
    )
    build.add_argument(
        "--build-url",
        metavar="URL",
        help="http(s) URL that answers (status 200-403) once the build is up (build.url)",
    )
    build.add_argument(
        "--build-timeout",
        type=build_seconds,
        metavar="SECONDS",
        help="how long to wait for the URL before exit 6, the build did not start (build.timeoutSeconds; "
        "default 60)",
    )
    build.add_argument(
        "--build-reuse",
        action="store_true",
        default=None,
        help="a URL that already answers is the build, in CI too (build.reuseExisting; default: "
        "reuse outside CI; in CI (CI=true) an answering URL is exit 2: a killed run's build may hold it)",
    )
    shard = run.add_argument_group("a run split over CI jobs (testsession merge joins them)")
    shard.add_argument(
        "--shard",
        metavar="I/N",
        help="run part I of N of the matched checks (the same split in every job for the same checks); "
        "auto: GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (parallel: N) (shard.part)",
    )
    shard.add_argument(
        "--shard-durations",
        metavar="PATH",
        help="a results.json of an earlier run, or an emulator state file, whose durations balance the "
        "parts; every part must read the same file (shard.durations; '' for none)",
    )
    _add_gate_options(run)
    service = run.add_argument_group("service")
    service.add_argument(
        "--emulator",
        action="store_true",
        help="start the embedded emulator in-process and run against it (demo credentials unless set)",
    )
    service.add_argument(
        "--world", metavar="FILE", help="the emulator's world file, for scripted worlds (with --emulator)"
    )
    service.add_argument(
        "--demo",
        action="store_true",
        help="run the shipped demo world (scripted results, never your build's); every output says "
        "DEMO. In CI, --emulator without --checks or --world is refused unless --demo is given",
    )
    service.add_argument("--state", metavar="PATH", help=f"with --checks (or --emulator): {STATE_HELP}")
    service.add_argument(
        "--detach", action="store_true", help="trigger, print the session ids and links, and exit"
    )
    add_connection_options(run)
    run.set_defaults(func=handle_run)

    wait = subparsers.add_parser(
        "wait",
        help="wait for a session triggered earlier (run --detach), analyse, report, gate",
        epilog=exit_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    wait.add_argument("session_id", metavar="ID", type=test_session_id, help="the test session id (a UUID)")
    wait.add_argument("--spec", help="a spec whose wait, rca, reports and gate settings apply")
    _add_gate_options(wait)
    add_connection_options(wait)
    wait.set_defaults(func=handle_wait)


def _add_gate_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("wait, reports and gate")
    group.add_argument("--timeout", type=float, metavar="SECONDS", help="wait.timeoutSeconds (default 900)")
    group.add_argument("--junit", metavar="PATH", help="JUnit XML report path ('' to skip)")
    group.add_argument("--markdown", metavar="PATH", help="markdown summary path ('' to skip)")
    group.add_argument("--json", metavar="PATH", help="JSON results path ('' to skip)")
    group.add_argument(
        "--fail-on-degraded",
        action="store_true",
        default=None,
        help="degraded checks fail the gate (gate.failOnDegraded)",
    )
    group.add_argument(
        "--fail-on",
        choices=("any", "new"),
        help="any: every failed check fails the gate; new: failed checks already failing before this "
        "run are forgiven, errors and unfinished checks still fail (gate.failOn; default any)",
    )
    group.add_argument(
        "--baseline",
        metavar="PATH",
        help="results.json of an earlier run to compare with: newly failing, fixed, slower "
        "(baseline; '' for none)",
    )
    group.add_argument("--no-rca", action="store_true", help="do not fetch root cause analyses")
    group.add_argument(
        "--comment",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="post the summary as a pull-request comment / merge-request note, updated in place on "
        "the next run (comment.enabled); a comment that cannot be posted is a warning, never the gate",
    )
    group.add_argument(
        "--gitlab-token-env",
        metavar="NAME",
        help="the environment variable holding the GitLab token for the note "
        "(comment.gitlabTokenVariable; default TESTSESSION_GITLAB_TOKEN)",
    )


def _overrides(args: argparse.Namespace) -> Overrides:
    from runner.core.errors import UsageError
    from runner.core.redact import check_secret
    from runner.spec import Overrides

    env: list[tuple[str, str]] = list(_env_file(getattr(args, "env_file", None)).items())
    for item in getattr(args, "env", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env {key or item!r}: expected KEY=VALUE")
        env.append((key, value))
    secret_env: list[tuple[str, str]] = []
    for key in getattr(args, "secret_env", None) or []:
        if key not in os.environ:
            raise UsageError(f"--secret-env {key}: the environment variable {key} is not set")
        check_secret(os.environ[key], f"--secret-env {key}")
        secret_env.append((key, os.environ[key]))
    tags = None
    if getattr(args, "tag", None):
        tags = [[t.strip() for t in group.split(",") if t.strip()] for group in args.tag]
        if any(not group for group in tags):
            raise UsageError("--tag: a tag group needs at least one tag")
    return Overrides(
        location=getattr(args, "location", None),
        tags=tags,
        check_ids=getattr(args, "check_id", None),
        env=env or None,
        secret_env=secret_env or None,
        name=getattr(args, "name", None),
        environment=getattr(args, "environment", None),
        timeout=args.timeout,
        junit=args.junit,
        markdown=args.markdown,
        json=args.json,
        fail_on_degraded=args.fail_on_degraded,
        fail_on=args.fail_on,
        baseline=args.baseline,
        no_rca=args.no_rca,
        comment=args.comment,
        gitlab_token_env=args.gitlab_token_env,
        build_command=getattr(args, "build_command", None),
        build_url=getattr(args, "build_url", None),
        build_timeout=getattr(args, "build_timeout", None),
        build_reuse=getattr(args, "build_reuse", None),
        shard=getattr(args, "shard", None),
        shard_durations=getattr(args, "shard_durations", None),
    )


def _env_file(path: str | None) -> dict[str, str]:
    """--env-file: the file's variables as dotenv parses them (checkly's `--env-file`); exit 2 when
    it cannot be read."""
    if not path:
        return {}
    from runner.core.dotenv import parse_dotenv
    from runner.core.errors import UsageError

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(1024 * 1024 + 1)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"--env-file {path}: cannot be read ({why})") from None
    if len(text) > 1024 * 1024:
        raise UsageError(f"--env-file {path}: larger than 1 MiB; a dotenv file of variables is expected")
    return parse_dotenv(text)


def _load(
    path: str | None, overrides: Overrides, required: bool, ctx: Context, local: bool = False
) -> RunSpec:
    """The spec; `local` (--checks): none unless named, and its sessions at location `local`."""
    from pathlib import Path

    from runner.spec import apply_overrides, default_spec, load_spec

    if local and path is None:
        spec = default_spec(overrides, location=LOCAL)
    elif path is None and not Path(DEFAULT_SPEC).exists() and (overrides.location or not required):
        spec = default_spec(overrides)
    else:
        spec = load_spec(path or DEFAULT_SPEC, os.environ, local=local)
    spec = apply_overrides(spec, overrides)
    if spec.comment.enabled:
        from runner.ci.comment import comment_tokens

        for token in comment_tokens(os.environ, spec.comment.gitlabTokenVariable):
            ctx.redact.add(token)
    return spec


def handle_run(args: argparse.Namespace, ctx: Context) -> int:
    from runner.core import memory

    with memory.for_a_run():  # the collector's pace (core/memory.py)
        return _handle_run(args, ctx)


def _handle_run(args: argparse.Namespace, ctx: Context) -> int:
    from runner.cli.error_reports import ReportsOnError
    from runner.cli.job import Job, JobSettings

    with ReportsOnError("run", args, ctx) as reports:  # every exit leaves the reports asked for
        overrides = _overrides(args)
        if args.rerun_failed is not None:
            loaded = _load(args.spec, overrides, required=False, ctx=ctx, local=_local(args, overrides))
            reports.spec = loaded
            spec = _rerun_failed_spec(args.rerun_failed, loaded, overrides, ctx)
            if spec is None:
                return 0
        else:
            spec = _load(args.spec, overrides, required=True, ctx=ctx, local=_local(args, overrides))
        reports.spec = spec
        settings = JobSettings.build(args, spec)
        if settings.checks is not None:
            for value in settings.checks.secrets:
                ctx.redact.add(value)
        return Job(settings, ctx.redact).run()


def _local(args: argparse.Namespace, overrides: Overrides) -> bool:
    """True for a run of a checks file (--checks): its results are at location `local`."""
    from runner.core.errors import UsageError

    if args.checks is None:
        return False
    if not args.checks:
        raise UsageError("--checks: give the checks file's path")
    if overrides.location is not None:
        raise UsageError(f"--location with --checks: the checks run on this machine, at location {LOCAL}")
    return True


def _rerun_failed_spec(source: str, spec: RunSpec, overrides: Overrides, ctx: Context) -> RunSpec | None:
    """The spec narrowed to the checks that failed in `source`; None (after saying so) when none did."""
    from runner.cli.report_command import read_results
    from runner.core.errors import UsageError
    from runner.core.words import counted, first_of
    from runner.job.rerun import cannot_rerun, rerun_spec, select_rerun
    from runner.reports import load_outcome
    from runner.reports.text import one_line
    from runner.spec import apply_overrides

    if overrides.location is not None or overrides.tags is not None or overrides.check_ids is not None:
        raise UsageError(
            "--rerun-failed picks the checks and locations itself: drop --location, --tag, --check-id"
        )
    earlier = load_outcome(read_results(source), source)
    refused = cannot_rerun(earlier)
    if refused:
        raise UsageError(
            f"--rerun-failed {source}: {refused}; a rerun of only the failed checks cannot clear that "
            "run: run the spec again without --rerun-failed"
        )
    selection = select_rerun(earlier)
    skipped = (
        f" ({selection.without_id} failing results name no check id and cannot be rerun)"
        if selection.without_id
        else ""
    )
    if not selection.count:
        _say(ctx.redact(f"nothing to rerun: no check failed, errored or was cut short in {source}{skipped}"))
        return None
    shown = first_of([one_line(label, 120) for label in selection.labels], 10)
    checks = counted(selection.count, "check")
    _say(ctx.redact(f"rerunning {checks} that failed in {source}: {shown}{skipped}"))
    # Again over the new sessions: without a spec file they come from the results, not the spec.
    return apply_overrides(rerun_spec(spec, selection), overrides)


def _say(line: str) -> None:
    """A line on stdout; a closed or broken stdout never ends the run (an error escaping from here
    would be read as a broken pipe, exit 0, before the gate ran)."""
    from contextlib import suppress

    with suppress(OSError, ValueError):
        print(line, flush=True)


def handle_wait(args: argparse.Namespace, ctx: Context) -> int:
    from runner.cli.error_reports import ReportsOnError
    from runner.cli.job import Job, JobSettings

    with ReportsOnError(f"wait {args.session_id}", args, ctx) as reports:
        spec = _load(args.spec, _overrides(args), required=False, ctx=ctx)
        reports.spec = spec
        return Job(JobSettings.build(args, spec), ctx.redact).wait(args.session_id)
