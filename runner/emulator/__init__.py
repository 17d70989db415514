"""A local emulator of the monitoring service's API, moto-style, in two layers:

- `core/`: the service without HTTP: one handler per operation of the table (answers.py, served in
  process and by the shell alike), the world file, the state per resource behind one `Backend`,
  simulated time, the simulation of check runs, the analyser, fault specs. No FastAPI in it.
- `shell/`: HTTP around the core: one /v1 route, the intake, fault and stats middleware, the Host
  guard, the /_emulator/ control API, HTML pages, the app and the threaded server.

The shell imports the core, never the reverse (tests/test_layers.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.emulator.core.backend import Backend
    from runner.emulator.core.world import World, load_world
    from runner.emulator.shell.server import Emulator

__all__ = ["Backend", "Emulator", "World", "load_world"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import runner.emulator` stays light (FastAPI loads only when a server is built).
    if name == "Emulator":
        from runner.emulator.shell.server import Emulator

        return Emulator
    if name == "Backend":
        from runner.emulator.core.backend import Backend

        return Backend
    if name in ("World", "load_world"):
        from runner.emulator.core import world

        return getattr(world, name)
    raise AttributeError(name)
