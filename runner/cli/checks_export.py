"""`testsession checks export`: an account's checks as a checks file (`run --checks FILE`; or, with
--format world, a world file) that runs them on this machine.

Reads every check (GET /v1/checks, page by page) and the account's environment variables (GET
/v1/variables, page by page), keeps the checks with at least one of the --tag values,
writes the world (runner/emulator/core/export.py decides its content), loads it back as the emulator
would (`emulator --check`), and says per check whether it runs here or is kept but not runnable.
The world goes to -o FILE (written atomically) or stdout; what the command says goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

from runner.cli.common import Context
from runner.core.exitcodes import ExitCode
from runner.core.words import counted


def _say(ctx: Context, line: str) -> None:
    print(ctx.redact(line), file=sys.stderr)


def checks_export(args: argparse.Namespace, ctx: Context) -> int:
    from runner.checks.checksfile import parse_checks
    from runner.checks.declared import WorldError, read_document
    from runner.cli.common import ENV_API_KEY, Connection, error_line
    from runner.core.errors import TestSessionError, UsageError
    from runner.core.text import for_line
    from runner.emulator.core.export import export_world
    from runner.emulator.core.world import parse_world_text
    from runner.reports.files import write_atomic

    if args.verbose:
        import logging

        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="testsession: %(message)s")
    tags = [tag for tag in args.tag or [] if tag.strip()]
    if args.tag and not tags:
        raise UsageError("--tag: must not be empty")
    with Connection.from_args(args).client(ctx.redact) as client:
        checks = client.list_checks(tags=tags)
        variables = client.list_variables()  # the account's own: what {{NAME}} falls back to
        account_id = client.account_id
    result = export_world(
        (check.as_sent() for check in checks),
        account_id=account_id,
        key_variable=ENV_API_KEY,
        tags=tags,
        variables=[variable.model_dump(mode="json") for variable in variables],
        form=args.format,
    )
    for line in result.left_out:
        _say(ctx, f"testsession: warning: {line}")
    if not result.checks:
        wanted = f" has any of the tags {', '.join(tags)}" if tags else " exists"
        error_line(ctx, f"no check of account {account_id}{wanted}: nothing written")
        return int(ExitCode.NO_MATCH)
    target = args.output or "stdout"
    try:
        # The file must load as `run` loads it: a file that does not is never written.
        if args.format == "checks":
            parse_checks(read_document(result.text, target)[0], target, {}, None)
        else:
            parse_world_text(result.text, target)
    except WorldError as exc:
        raise TestSessionError(
            f"the exported {args.format} file does not load, nothing written: {exc}"
        ) from None
    if args.output:
        try:
            write_atomic(args.output, result.text)
        except OSError as exc:
            raise UsageError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
    else:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    for check in result.checks:
        if check.reason is None and args.quiet:
            continue
        verdict = "runs locally" if check.reason is None else f"kept, not runnable: {check.reason}"
        _say(ctx, for_line(f"{check.name} ({check.check_type}): {verdict}"))
    kept = len(result.checks) - result.runnable
    exported = counted(len(result.checks), "check")
    total = f"{exported} exported to {target}: {result.runnable} run locally, {kept} kept"
    if kept:
        total += " but not runnable (a session that matches one fails closed"
        total += "; settings.notRunnable: skip)" if args.format == "world" else ")"
    _say(ctx, total)
    for name, owners in result.secrets.items():
        _say(
            ctx,
            for_line(
                f"testsession: set {name} in the environment before using the file: secret variable of "
                f"{', '.join(owners)}; the service never reveals secret values, the file reads ${{{name}:-}} "
                "(unset, the checks that use it fail naming it)"
            ),
        )
    if result.account_variables:
        _say(
            ctx,
            for_line(
                "testsession: the checks use variables that neither a check nor the account defines: "
                f"{', '.join(result.account_variables)}; give them in the world's account "
                "environmentVariables or with the session's environment variables"
            ),
        )
    return int(ExitCode.OK)
