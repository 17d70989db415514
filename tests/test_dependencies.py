"""pyproject.toml's runtime dependencies are exactly what runner/ imports: none declared and unused
(every install, in every CI job, would download it for nothing), none imported and undeclared (it would
be there only while another package happens to pull it in)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys

import pytest
from conftest import REPO_ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = (re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec) for spec in project["dependencies"])
    return {normalized(name.group()) for name in names if name}


@functools.cache  # parsing every file under runner/ takes ~0.3 s; check() runs three times
def imported_modules() -> dict[str, str]:
    """Top-level module -> the first file under runner/ that imports it (function-level imports too)."""
    found: dict[str, str] = {}
    for path in sorted((REPO_ROOT / "runner").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(REPO_ROOT)))
    return found


def check(dependencies: set[str]) -> tuple[list[str], list[str]]:
    """(declared and imported nowhere under runner/, imported there and not declared)."""
    distributions = importlib.metadata.packages_distributions()
    imported: set[str] = set()  # distributions runner/ imports
    undeclared = []
    for module, where in imported_modules().items():
        if module == "runner" or module in sys.stdlib_module_names:
            continue
        owners = {normalized(d) for d in distributions.get(module, [])}
        imported |= owners
        if not owners & dependencies:
            undeclared.append(f"{module} ({where}; distribution {sorted(owners) or 'not installed'})")
    return sorted(dependencies - imported), undeclared


def test_every_declared_dependency_is_imported_and_every_import_declared() -> None:
    unused, undeclared = check(declared())
    assert unused == [], f"declared in pyproject.toml, imported nowhere under runner/: {unused}"
    assert undeclared == [], f"imported under runner/, not declared in pyproject.toml: {undeclared}"


def test_the_check_finds_the_dependency_of_issue_23_and_a_missing_one() -> None:
    """pyproject.toml declared junit-xml, which nothing imports; and without urllib3 declared, the
    client's direct imports of it would rest on requests pulling it in."""
    assert check(declared() | {"junit-xml"})[0] == ["junit-xml"]
    undeclared = check(declared() - {"urllib3"})[1]
    assert undeclared and all(line.startswith("urllib3 (runner/") for line in undeclared)
