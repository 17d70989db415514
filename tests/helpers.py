"""Helpers shared by test modules (import as `from helpers import ...`; pytest puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"


def fast_world(tmp_path: Path, speed: float = 40) -> Path:
    """examples/emulator-world.yml (the default world) at `speed`: its sessions end in a fraction of a
    second; nothing else is changed. Written to tmp_path/world.yml for `--world`."""
    world = yaml.safe_load((EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8"))
    world["settings"]["speed"] = speed
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    return path
