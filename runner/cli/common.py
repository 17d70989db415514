"""What every command shares: connection options, the client factory, error reporting."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from types import FrameType

from runner.core.exitcodes import ExitCode

# Not `from typing import TYPE_CHECKING`, no dataclasses: typing, and dataclasses' inspect, would cost
# every start of the command 4 and 8 ms. mypy reads this name as typing.TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from runner.client import ApiClient
    from runner.client.transport import Transport
    from runner.core.redact import Redactor

ENV_API_KEY = "TESTSESSION_API_KEY"
ENV_ACCOUNT_ID = "TESTSESSION_ACCOUNT_ID"
ENV_BASE_URL = "TESTSESSION_BASE_URL"
ENV_ACCOUNT_HEADER = "TESTSESSION_ACCOUNT_HEADER"
# The emulator's state file (`emulator --state`, `run --emulator --state`): set once for a whole
# pipeline, it applies wherever the emulator runs and is ignored where it does not.
ENV_EMULATOR_STATE = "TESTSESSION_EMULATOR_STATE"
STATE_HELP = (
    "keep the emulator's error groups (first and last seen), analyses and sessions in this SQLite file, "
    "so a failure seen by an earlier run is known (created when missing; locked while in use; env: "
    f"{ENV_EMULATOR_STATE}). Without it, the emulator's state lasts as long as the process"
)


class Context:
    """What a command gets beside its arguments: the process's redactor (the API key and every
    secret of the run are added to it, and every line printed passes through it)."""

    __slots__ = ("redact",)

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact


Handler = Callable[[argparse.Namespace, Context], int]


def new_context(environ: Mapping[str, str] | None = None) -> Context:
    from runner.core.redact import Redactor

    env = os.environ if environ is None else environ
    return Context(Redactor([env.get(ENV_API_KEY) or ""]))


class Connection:
    """Where and how to reach the service; the API key only ever from the environment (and never
    in the repr)."""

    __slots__ = ("account_header", "account_id", "api_key", "base_url", "hint", "request_timeout")

    def __init__(
        self,
        base_url: str | None,
        account_id: str | None,
        api_key: str | None = None,
        request_timeout: float = 30.0,
        account_header: str | None = None,  # None: the document's X-Service-Account
        # Where credentials for a try-out come from, in the missing-credentials message: only `run`
        # has --emulator; every other command reads what `testsession emulator` prints.
        hint: str = "or start `testsession emulator` and export the variables it prints",
    ) -> None:
        self.base_url = base_url
        self.account_id = account_id
        self.api_key = api_key
        self.request_timeout = request_timeout
        self.account_header = account_header
        self.hint = hint

    def __repr__(self) -> str:
        return (
            f"Connection(base_url={self.base_url!r}, account_id={self.account_id!r}, "
            f"request_timeout={self.request_timeout!r}, account_header={self.account_header!r})"
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Connection:
        env = os.environ if environ is None else environ
        return cls(
            base_url=args.base_url,
            account_id=args.account_id,
            api_key=env.get(ENV_API_KEY),
            request_timeout=args.request_timeout,
            account_header=getattr(args, "account_header", None),
        )

    def client(
        self,
        redact: Redactor,
        retry_budget: float | None = None,
        on_retry: Callable[[str, str, str, int, float], None] | None = None,
        transport: Transport | None = None,
    ) -> ApiClient:
        """A client; UsageError naming what is missing. No retry starts after `retry_budget` s.
        `transport`: how its requests travel (over HTTP when not given)."""
        from runner.client import ApiClient
        from runner.core.errors import UsageError

        missing = [
            name
            for name, value in (
                (f"{ENV_BASE_URL} (or --base-url)", self.base_url),
                (ENV_API_KEY, self.api_key),
                (f"{ENV_ACCOUNT_ID} (or --account-id)", self.account_id),
            )
            if not value
        ]
        if missing:
            raise UsageError("missing credentials: set " + ", ".join(missing) + f" ({self.hint})")
        assert self.base_url and self.api_key and self.account_id
        from runner.core.redact import check_secret

        check_secret(self.api_key, ENV_API_KEY)  # a 1-2 character key could not be masked
        from runner.models import DEFAULT_ACCOUNT_HEADER, account_header_problem

        header = self.account_header or DEFAULT_ACCOUNT_HEADER
        problem = account_header_problem(header)
        if problem:
            raise UsageError(f"--account-header ({ENV_ACCOUNT_HEADER}): {problem}")
        redact.add(self.api_key)
        deadline = time.monotonic() + retry_budget if retry_budget is not None else None
        return ApiClient(
            account_header=header,
            base_url=self.base_url,
            api_key=self.api_key,
            account_id=self.account_id,
            read_timeout=self.request_timeout,
            deadline=deadline,
            on_retry=on_retry,
            transport=transport,
        )


MAX_REQUEST_TIMEOUT = 3600.0


def test_session_id(text: str) -> str:
    """A test session id argument: the service's ids are UUIDs, so anything else is refused before
    any request (argparse: a usage error, exit 2) instead of costing a 404 from the service."""
    import uuid

    try:
        uuid.UUID(text.strip())
    except ValueError:
        shown = text if len(text) <= 60 else text[:59] + "…"
        raise argparse.ArgumentTypeError(
            f"not a test session id: {shown!r}; expected a UUID such as "
            "5b0e6c3a-7d7e-4b3c-9a53-2f0f6f1f0a11 (`run --detach` prints the id)"
        ) from None
    return text.strip()


test_session_id.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported


def request_timeout(text: str) -> float:
    """--request-timeout: seconds, finite, > 0 and at most an hour (argparse: a usage error, exit 2)."""
    import math  # only when the flag is given

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, e.g. 30 (got {text!r})") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_REQUEST_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds greater than 0 and at most {MAX_REQUEST_TIMEOUT:g} (got {text!r})"
        )
    return value


def build_seconds(text: str) -> float:
    """--build-timeout: seconds, finite, > 0 and at most an hour (argparse: a usage error, exit 2)."""
    import math

    from runner.spec.model import MAX_BUILD_SECONDS

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, e.g. 60 (got {text!r})") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_BUILD_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds greater than 0 and at most {MAX_BUILD_SECONDS:g} (got {text!r})"
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
        type=request_timeout,
        default=30.0,
        metavar="SECONDS",
        help="read timeout of one HTTP request (default 30)",
    )
    loudness = group.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", action="store_true", help="say more, on stderr")
    loudness.add_argument(
        "-q", "--quiet", action="store_true", help="print only failures, problems and the verdict"
    )


def exit_help() -> str:
    """The exit codes, with the gate rule read from the verdict policy."""
    from runner.core.exitcodes import describe
    from runner.job.policy import describe_gate

    return describe() + "\n\n" + "gate: " + describe_gate()


MAX_PROBLEM_CHARS = 8000  # a problem names a file, a field and what is allowed; a build's, its last lines


def problem_line(ctx: Context, text: str) -> str:
    """One line of an expected failure: masked, then through the terminal's sanitiser. A file's name
    and its field names are text from outside (a checks file of a pull request): a key holding a line
    break must not start a line of the CI log (`::warning::`, a workflow command), nor an escape
    reach the terminal."""
    from runner.core.text import for_line

    return for_line(ctx.redact(text), MAX_PROBLEM_CHARS)


def error_line(ctx: Context, message: str) -> None:
    _to_stderr(f"testsession: error: {problem_line(ctx, message)}")


def _to_stderr(line: str) -> None:
    """stderr closed or broken: the line is lost, the exit code it goes with still stands."""
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr)


@contextmanager
def handle_signals(on_signal: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """SIGINT and SIGTERM go to `on_signal` inside the block, and back to what they were after.
    Outside the main thread no handler can be set: the block runs without."""
    import signal

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(ValueError):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop_at_once(signum: int, _frame: FrameType | None) -> None:
    """Before anything was triggered: a signal ends the command; its reports say it was interrupted."""
    import signal

    from runner.core.errors import Interrupted

    name = signal.Signals(signum).name
    raise Interrupted(name, ExitCode.INTERRUPTED if signum == signal.SIGINT else ExitCode.TERMINATED)


def run_handler(args: argparse.Namespace, ctx: Context | None = None) -> int:
    """Runs a command's handler; expected errors become one line on stderr and an exit code."""
    from runner.core.errors import Interrupted, SpecError, TestSessionError, exit_code_for

    ctx = ctx or new_context()
    handler: Handler = args.func
    try:
        return int(handler(args, ctx))
    except SpecError as exc:
        for problem in exc.problems:
            _to_stderr(problem_line(ctx, problem))
        return int(exit_code_for(exc))
    except TestSessionError as exc:
        error_line(ctx, str(exc))
        return int(exit_code_for(exc))
    except Interrupted as exc:
        error_line(ctx, str(exc))
        return int(exc.code)
    except KeyboardInterrupt:
        error_line(ctx, "interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # A reader closed our output before the command finished (the run's own writes survive a
        # closed stream, so this is an unexpected one): there is no verdict, and none is not a pass.
        error_line(ctx, "the output was closed before the command finished (broken pipe): no verdict")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug: its traceback for the report, and never 0 nor "checks failed"
        import traceback

        from runner.core.errors import internal_error

        _to_stderr(ctx.redact(traceback.format_exc().rstrip()))
        error_line(ctx, internal_error(exc))
        return int(ExitCode.SERVICE)
