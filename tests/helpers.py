"""Helpers shared by test modules (import as `from helpers import ...`; pytest puts tests/ on sys.path).

Importable without pytest too (bench/fault_table.py runs tests/fault_cells.py): no conftest here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"


def fast_world(tmp_path: Path, speed: float = 40) -> Path:
    """examples/emulator-world.yml (the default world) at `speed`: its sessions end in a fraction of a
    second; nothing else is changed. Written to tmp_path/world.yml for `--world`."""
    world = yaml.safe_load((EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8"))
    world["settings"]["speed"] = speed
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    return path


# The JUnit schema is not part of the repository (../shared/junit/junit-10.xsd beside the checkout).
# On a clone without it, only the XSD check is left out: every other assertion of a test still runs.
JUNIT_XSD = REPO_ROOT.parent / "shared" / "junit" / "junit-10.xsd"


@lru_cache(maxsize=1)
def _junit_schema() -> Any:
    if not JUNIT_XSD.exists():
        return None
    import xmlschema

    return xmlschema.XMLSchema(str(JUNIT_XSD))


def junit_xsd_errors(xml: str | Path) -> list[str]:
    """Why the JUnit XML (text, or a file) breaks junit-10.xsd; [] when it does not, or when the XSD
    is absent. Parses it either way, so XML that is not well-formed fails here too."""
    ET.parse(xml) if isinstance(xml, Path) else ET.fromstring(xml.encode("utf-8"))
    schema = _junit_schema()
    if schema is None:
        return []
    return [str(e.reason) for e in schema.iter_errors(str(xml) if isinstance(xml, Path) else xml)]


def valid_junit(xml: str) -> ET.Element:
    """The parsed JUnit XML, asserted valid by junit-10.xsd (when present)."""
    assert junit_xsd_errors(xml) == []
    return ET.fromstring(xml.encode("utf-8"))
