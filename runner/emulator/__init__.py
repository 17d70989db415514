"""A local emulator of the monitoring service's API (moto-style: state in a backend, thin routes,
a threaded server on a free port, a control API under /_emulator/)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.emulator.core.backend import Backend
    from runner.emulator.core.world import World
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
        from runner.emulator import world

        return getattr(world, name)
    raise AttributeError(name)
