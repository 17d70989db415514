"""The package's layers import downwards only (docs/architecture.md): a test over the import graph."""

from __future__ import annotations

import ast
from pathlib import Path

RUNNER = Path(__file__).resolve().parent.parent / "runner"

# Lower numbers are lower layers. A module may import its own layer and those below it.
LAYERS = {
    "core": 0,
    "models": 1,
    "spec": 2,
    "metadata": 2,
    "client": 2,
    "emulator": 2,
    "job": 3,
    "reports": 4,
    "ci": 5,
    "cli": 6,
}
# Siblings of one layer stay apart, so that each can be read (and replaced) on its own.
INDEPENDENT = {"spec", "metadata", "client", "emulator"}


def _layer_of(parts: tuple[str, ...]) -> str:
    if len(parts) == 1:  # runner/__init__.py (the version) is below everything; __main__ is the CLI
        return "cli" if parts[0] == "__main__.py" else "core"
    return parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("runner."):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("runner.")]
    return found


def upward_imports(root: Path = RUNNER) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        source = _layer_of(path.relative_to(root).parts)
        for line, module in _imports(path):
            target = module.split(".")[1]
            if target not in LAYERS or target == source:
                continue
            upward = LAYERS[target] > LAYERS[source]
            sideways = source in INDEPENDENT and target in INDEPENDENT
            if upward or sideways:
                problems.append(f"{path.relative_to(root.parent)}:{line}: {source} imports {module}")
    return problems


def test_every_package_is_a_known_layer() -> None:
    packages = {p.name for p in RUNNER.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYERS)


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports() == []


def test_the_check_finds_upward_and_sideways_imports(tmp_path: Path) -> None:
    root = tmp_path / "runner"
    for package, text in {
        "job": "from runner.ci.console import Console\n",  # upward
        "client": "import runner.spec.loader\n",  # sideways
        "ci": "from runner.job.digest import Digest\n",  # downward: fine
    }.items():
        (root / package).mkdir(parents=True)
        (root / package / "mod.py").write_text(text, encoding="utf-8")
    assert upward_imports(root) == [
        "runner/client/mod.py:1: client imports runner.spec.loader",
        "runner/job/mod.py:1: job imports runner.ci.console",
    ]
