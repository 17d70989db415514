"""`testsession emulator`: serve the local emulator of the monitoring service until SIGINT/SIGTERM."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.cli.common import Context

import argparse
import os
import sys

from runner.cli.common import ENV_EMULATOR_STATE, STATE_HELP

# As runner.emulator.shell.access (not imported here: it loads FastAPI).
ENV_CONTROL_TOKEN = "TESTSESSION_EMULATOR_CONTROL_TOKEN"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "emulator",
        help="serve a local emulator of the monitoring service's API",
        description=(
            "Serve a local emulator of the monitoring service's API (for demos and pipeline dry runs). "
            "Prints the base URL and the accepted credentials as export lines, then serves until "
            "interrupted. The world file defines accounts, keys and how each check behaves."
        ),
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other address exposes the emulator to the network: "
        "the control API then requires a control token (one is generated and printed if none is set)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer to beside the address bound, localhost, 127.0.0.1 and ::1 (and any IP "
        "address when bound to 0.0.0.0 or ::); repeatable. A request naming another host is refused "
        "(421): a web page cannot reach the emulator through a name of its own (DNS rebinding)",
    )
    parser.add_argument(
        "--control-token",
        default=os.environ.get(ENV_CONTROL_TOKEN) or None,
        metavar="TOKEN",
        help=f"require `Authorization: Bearer TOKEN` on the /_emulator/ control routes (env: "
        f"{ENV_CONTROL_TOKEN}; prefer the variable, a flag shows in process lists)",
    )
    parser.add_argument("--port", type=int, default=8484, help="port; 0 picks a free one (default 8484)")
    parser.add_argument(
        "--world",
        metavar="FILE",
        help="world file (YAML or JSON; default: the packaged demo world)",
    )
    parser.add_argument("--speed", type=float, help="simulated seconds per real second (overrides the world)")
    parser.add_argument(
        "--state", default=os.environ.get(ENV_EMULATOR_STATE) or None, metavar="PATH", help=STATE_HELP
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check the world file: print what it holds, or the problem (exit 2); serve nothing",
    )
    parser.set_defaults(func=handle)


def check_world(path: str | None) -> int:
    """Validates a world without building a server (the emulator's core only: no FastAPI)."""
    from runner.emulator.core.world import load_world

    world = load_world(path)
    checks = sum(len(account.checks) for account in world.accounts)
    from runner.core.words import counted

    faults = f", {counted(len(world.settings.faults), 'fault')}" if world.settings.faults else ""
    accounts = counted(len(world.accounts), "account")
    print(f"{path or 'the packaged world'}: ok, {accounts}, {counted(checks, 'check')}{faults}")
    return 0


def handle(args: argparse.Namespace, ctx: Context) -> int:
    if args.check:
        return check_world(args.world)
    import signal
    import threading

    from runner.core.errors import UsageError
    from runner.emulator.shell.access import is_loopback
    from runner.emulator.shell.server import Emulator

    if args.speed is not None and args.speed <= 0:
        raise UsageError("--speed: must be greater than 0")
    if not 0 <= args.port <= 65535:
        raise UsageError("--port: must be 0 to 65535")
    if args.control_token is not None and len(args.control_token) < 16:
        raise UsageError("--control-token: use at least 16 characters")
    if args.state == "":
        raise UsageError("--state: give the state file's path")
    emulator = Emulator(
        world=args.world,
        host=args.host,
        port=args.port,
        speed=args.speed,
        control_token=args.control_token,
        state=args.state,
        allow_hosts=tuple(args.allow_host),
    )
    try:
        emulator.start()
    except OSError as exc:
        emulator.backend.close()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    # The credentials are the emulator's own demo values (or the caller's, from the environment).
    print(f"emulator serving at {emulator.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    if emulator.backend.state is not None:
        print(f"state in {emulator.backend.state.describe()}", file=sys.stderr, flush=True)
    if not is_loopback(args.host):
        print(
            f"warning: the emulator listens on {args.host}, reachable from other machines; it holds demo "
            "credentials, its control API needs the control token, its HTML pages an API key, and it runs "
            "real checks only for keys of your own in the world file, never for a demo key (tsk_demo_...)",
            file=sys.stderr,
            flush=True,
        )
    print(f"export TESTSESSION_BASE_URL={emulator.url}")
    if os.environ.get("TESTSESSION_API_KEY") == emulator.api_key:
        # Never echo a key the caller supplied: it may be a real secret.
        print("# TESTSESSION_API_KEY: the value from your environment is accepted")
    else:
        print(f"export TESTSESSION_API_KEY={emulator.api_key}")
    print(f"export TESTSESSION_ACCOUNT_ID={emulator.account_id}")
    if emulator.control_token_generated:
        print(f"export {ENV_CONTROL_TOKEN}={emulator.control_token}")
    sys.stdout.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        emulator.stop()
    print("emulator stopped", file=sys.stderr)
    return 0
