"""What every command shares: connection options, the client factory, error reporting."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runner.core.exitcodes import ExitCode

if TYPE_CHECKING:
    from runner.client import ApiClient
    from runner.core.redact import Redactor

ENV_API_KEY = "TESTSESSION_API_KEY"
ENV_ACCOUNT_ID = "TESTSESSION_ACCOUNT_ID"
ENV_BASE_URL = "TESTSESSION_BASE_URL"
ENV_ACCOUNT_HEADER = "TESTSESSION_ACCOUNT_HEADER"

Handler = Callable[[argparse.Namespace], int]

_redactor: Redactor | None = None


def redactor() -> Redactor:
    """The process's redactor: the API key and every secret value of a run are added to it."""
    global _redactor
    if _redactor is None:
        from runner.core.redact import Redactor

        _redactor = Redactor()
        _redactor.add(os.environ.get(ENV_API_KEY))
    return _redactor


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--base-url",
        default=os.environ.get(ENV_BASE_URL),
        help=f"the service's base URL (env: {ENV_BASE_URL})",
    )
    group.add_argument(
        "--account-id",
        default=os.environ.get(ENV_ACCOUNT_ID),
        help=f"account id, sent in the account header (env: {ENV_ACCOUNT_ID}); "
        f"the API key is read from {ENV_API_KEY} only, never from a flag",
    )
    group.add_argument(
        "--account-header",
        default=os.environ.get(ENV_ACCOUNT_HEADER),
        metavar="NAME",
        help=f"name of the header that carries the account id (env: {ENV_ACCOUNT_HEADER}; default "
        "X-Service-Account; the production service of this API family reads x-checkly-account)",
    )
    group.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="read timeout of one HTTP request (default 30)",
    )
    group.add_argument("-v", "--verbose", action="store_true", help="say more on stderr")


def make_client(args: argparse.Namespace, **overrides: Any) -> ApiClient:
    from runner.client import ApiClient
    from runner.core.errors import UsageError

    api_key: str = overrides.pop("api_key", None) or os.environ.get(ENV_API_KEY) or ""
    base_url = overrides.pop("base_url", None) or args.base_url
    account_id = overrides.pop("account_id", None) or args.account_id
    missing = [
        name
        for name, value in (
            (f"{ENV_BASE_URL} (or --base-url)", base_url),
            (ENV_API_KEY, api_key),
            (f"{ENV_ACCOUNT_ID} (or --account-id)", account_id),
        )
        if not value
    ]
    if missing:
        raise UsageError("missing credentials: set " + ", ".join(missing) + " (or use `run --emulator`)")
    from runner.models import DEFAULT_ACCOUNT_HEADER, account_header_problem

    header = overrides.pop("account_header", None) or getattr(args, "account_header", None)
    header = header or DEFAULT_ACCOUNT_HEADER
    problem = account_header_problem(header)
    if problem:
        raise UsageError(f"--account-header ({ENV_ACCOUNT_HEADER}): {problem}")
    redactor().add(api_key)
    return ApiClient(
        account_header=header,
        base_url=base_url,
        api_key=api_key,
        account_id=account_id,
        read_timeout=args.request_timeout,
        **overrides,
    )


def error_line(message: str) -> None:
    text = redactor()(message).replace("\n", " ")
    print(f"testsession: error: {text}", file=sys.stderr)


def run_handler(args: argparse.Namespace) -> int:
    """Runs a command's handler; expected errors become one line on stderr and an exit code."""
    from runner.core.errors import SpecError, TestSessionError, exit_code_for

    handler: Handler = args.func
    try:
        return int(handler(args))
    except SpecError as exc:
        for problem in exc.problems:
            print(redactor()(problem), file=sys.stderr)
        return int(exit_code_for(exc))
    except TestSessionError as exc:
        error_line(str(exc))
        return int(exit_code_for(exc))
    except KeyboardInterrupt:
        error_line("interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        return int(ExitCode.OK)
