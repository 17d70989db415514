"""What every command shares: connection options, the client factory, error reporting."""

from __future__ import annotations

import argparse
import math
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


MAX_REQUEST_TIMEOUT = 3600.0


def request_timeout(text: str) -> float:
    """--request-timeout: seconds, finite, > 0 and at most an hour (argparse: a usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, e.g. 30 (got {text!r})") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_REQUEST_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds greater than 0 and at most {MAX_REQUEST_TIMEOUT:g} (got {text!r})"
        )
    return value


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
        help=f"account id sent as X-Service-Account (env: {ENV_ACCOUNT_ID}); "
        f"the API key is read from {ENV_API_KEY} only, never from a flag",
    )
    group.add_argument(
        "--request-timeout",
        type=request_timeout,
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
    redactor().add(api_key)
    return ApiClient(
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
