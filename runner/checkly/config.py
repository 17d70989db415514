"""Which file makes a folder a Checkly project: apart from synth.py, so that asking (every `run --checks
FILE` asks) does not import Node's tools and the project's models (~40-100 ms of a one-check run)."""

from __future__ import annotations

from pathlib import Path

CONFIG_NAMES = ("checkly.config.ts", "checkly.config.mts", "checkly.config.js", "checkly.config.mjs",
                "checkly.config.cjs")  # fmt: skip


def find_config(path: str | Path) -> Path | None:
    """The checkly.config.* that `path` names (the file, or a folder holding one); None if neither."""
    p = Path(path)
    if p.is_file() and p.name in CONFIG_NAMES:
        return p.resolve()
    if p.is_dir():
        for name in CONFIG_NAMES:
            if (p / name).is_file():
                return (p / name).resolve()
    return None
