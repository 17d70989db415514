"""Emulator: the app served by uvicorn in a daemon thread on a free port, for tests and the CLI."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from runner.emulator.core.backend import Backend
from runner.emulator.core.world import World, load_world
from runner.emulator.shell.access import is_loopback


class Emulator:
    """`with Emulator() as emu:` serves the default world at emu.url until the block ends."""

    def __init__(
        self,
        world: World | str | Path | dict[str, Any] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        speed: float | None = None,
        control_token: str | None = None,
        state: str | Path | None = None,
        allow_hosts: tuple[str, ...] = (),
    ) -> None:
        """`allow_hosts`: Host names served beside the address bound and the loopback names
        (hosts.py: any other Host is 421)."""
        self.world = load_world(world)
        self.host, self.port = host, port
        self.allow_hosts = allow_hosts
        # Bound beyond loopback, the control API (which can load any world, revoke keys, inject
        # faults) is never left open: without a token of the caller's, one is made up here.
        self.control_token_generated = control_token is None and not is_loopback(host)
        if self.control_token_generated:
            control_token = secrets.token_urlsafe(24)
        self.control_token = control_token
        # With `state`, error groups, analyses and sessions live in that SQLite file (locked while this
        # emulator runs) and outlast it: runner/state/store.py.
        self.backend = Backend(self.world, speed=speed, state=state)
        # Beyond loopback, real checks run only for keys of the world's own (access.py explains).
        self.backend.exposed = not is_loopback(host)
        self.api_key, self.account_id = self.world.first_key()
        self.account_header = self.world.settings.accountHeader
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(self.host, self.host)
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def control_headers(self) -> dict[str, str]:
        """The headers a request to the control API (/_emulator/) needs: hosts.py's CONTROL_HEADERS,
        and the control token when one is set."""
        from runner.emulator.shell.hosts import CONTROL_HEADERS

        token = {"Authorization": f"Bearer {self.control_token}"} if self.control_token else {}
        return {**CONTROL_HEADERS, **token}

    def start(self) -> Emulator:
        import uvicorn

        from runner.emulator.shell.app import create_app
        from runner.emulator.shell.hosts import AllowedHosts

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the listening
        # socket says so; without it every keep-alive response waits ~40 ms for a delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._socket = sock
        self.backend.base_url = self.url
        config = uvicorn.Config(
            create_app(self.backend, self.control_token, AllowedHosts(self.host, self.allow_hosts)),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"emulator:{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the emulator did not start")
            time.sleep(0.005)
        return self

    def serve_forever(self) -> None:
        """Blocks until stop() is called (by a signal handler, for example)."""
        if self._thread is not None:
            while self._thread.is_alive():
                self._thread.join(0.2)

    def stop(self, wait: bool = True) -> None:
        """Stops serving; `wait=False` returns at once and lets the server thread (a daemon) finish
        on its own (uvicorn takes about 0.2 s to wind down), as tests that start many do. Real check
        runs stop too (within a second, on their daemon threads)."""
        self.backend.shutdown()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            if not wait:  # uvicorn closes the listening socket itself as it winds down
                self._thread = self._socket = None
                self.backend.close()
                return
            self._thread.join(5)
            self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.backend.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
