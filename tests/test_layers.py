"""The package's layers import downwards only, without cycles (docs/architecture.md): tests over the
import graph, read from every import statement of every module (function-level ones included)."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parent.parent / "runner"
ARCHITECTURE = RUNNER.parent / "docs" / "architecture.md"

# Lower numbers are lower layers. A module may import its own layer and those below it.
LAYERS = {
    "core": 0,
    "models": 1,
    "checks": 2,
    "state": 3,
    "spec": 4,
    "metadata": 4,
    "client": 4,
    "emulator": 4,
    "checkly": 4,
    "job": 5,
    "reports": 6,
    "ci": 7,
    "cli": 8,
}
# Siblings of one layer stay apart, so that each can be read (and replaced) on its own.
INDEPENDENT = {"spec", "metadata", "client", "emulator", "checkly"}
# Layers inside a package: the emulator's HTTP shell imports its core, never the reverse.
SUBLAYERS = {"emulator": {"core": 0, "shell": 1}}
# What the emulator's core never imports: it is the service without HTTP.
HTTP_PACKAGES = ("fastapi", "starlette", "uvicorn")


def _layer_of(parts: tuple[str, ...]) -> str:
    if len(parts) == 1:  # runner/__init__.py (the version) is below everything; __main__ is the CLI
        return "cli" if parts[0] == "__main__.py" else "core"
    return parts[0]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path, module: str = "", names: bool = True) -> list[tuple[int, str]]:
    """(line, module) of every import anywhere in the file; with `names`, `from a import b` gives a.b
    as well as a (the graph keeps whichever names a module). Relative imports are resolved against
    `module`, the file's own module name."""
    found = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(_parsed(path)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.append((node.lineno, base))
            if names:
                found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def _runner_imports(path: Path, module: str = "", names: bool = True) -> list[tuple[int, str]]:
    seen = set()
    result = []
    for line, name in _imports(path, module, names):
        if name.startswith("runner.") and name not in seen:
            seen.add(name)
            result.append((line, name))
    return result


def upward_imports(root: Path = RUNNER) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        source = _layer_of(parts)
        for line, module in _runner_imports(path, _module_name(root, path), names=False):
            target_parts = module.split(".")[1:]
            target = target_parts[0]
            if target not in LAYERS or target == source:
                if target == source and source in SUBLAYERS:
                    problems += _sublayer_problem(root, path, parts, target_parts, line, module)
                continue
            upward = LAYERS[target] > LAYERS[source]
            sideways = source in INDEPENDENT and target in INDEPENDENT
            if upward or sideways:
                problems.append(f"{path.relative_to(root.parent)}:{line}: {source} imports {module}")
    return problems


def _sublayer_problem(
    root: Path, path: Path, parts: tuple[str, ...], target_parts: list[str], line: int, module: str
) -> list[str]:
    layers = SUBLAYERS[parts[0]]
    source = parts[1] if len(parts) > 2 else None
    target = target_parts[1] if len(target_parts) > 1 else None
    if source in layers and target in layers and layers[target] > layers[source]:
        return [f"{path.relative_to(root.parent)}:{line}: {parts[0]}.{source} imports {module}"]
    return []


def import_graph(root: Path = RUNNER) -> dict[str, dict[str, int]]:
    """module -> {imported runner module: line}, over the modules that exist under `root`."""
    files = {_module_name(root, path): path for path in root.rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for line, name in _runner_imports(path, module):
            if name in files and name != module:
                edges.setdefault(name, line)
        graph[module] = edges
    return graph


def import_cycles(root: Path = RUNNER) -> list[list[str]]:
    """The strongly connected components of the import graph with more than one module (Tarjan)."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def http_imports_of_the_core(root: Path = RUNNER) -> list[str]:
    """Imports of FastAPI, Starlette, uvicorn or the shell, by the emulator's core or anything it
    imports (the closure over the package's modules)."""
    graph = import_graph(root)
    files = {_module_name(root, path): path for path in root.rglob("*.py")}
    core = [m for m in graph if m.startswith("runner.emulator.core")]
    reached, todo = set(core), list(core)
    while todo:
        for target in graph[todo.pop()]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    problems = []
    for module in sorted(reached):
        for line, name in _imports(files[module], module):
            if name.split(".")[0] in HTTP_PACKAGES or name.startswith("runner.emulator.shell"):
                problems.append(f"{module}:{line}: imports {name}")
    return problems


def test_every_package_is_a_known_layer() -> None:
    packages = {p.name for p in RUNNER.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYERS)
    for package, layers in SUBLAYERS.items():
        inner = {p.name for p in (RUNNER / package).iterdir() if (p / "__init__.py").exists()}
        assert inner == set(layers), package


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports() == []


def test_no_import_cycle() -> None:
    assert import_cycles() == []


def test_the_emulator_core_imports_no_http() -> None:
    assert http_imports_of_the_core() == []


def test_checking_a_world_loads_no_http_server() -> None:
    """`testsession emulator --check` validates a world with the core alone."""
    code = (
        "import sys; from runner.cli.main import main; rc = main(['emulator', '--check']); "
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {HTTP_PACKAGES!r}); "
        "print(loaded); sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    assert "the packaged world: ok" in done.stdout


def _layer_lines(text: str, heading: str) -> list[list[str]]:
    """The package names at the start of each line of the first code block after `heading`."""
    block = text.split(heading, 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines():
        names = []
        for word in line.split():
            if not re.fullmatch(r"[a-z]+(/[a-z]+)?", word) or word.split("/")[0] not in LAYERS:
                break
            names.append(word)
        if names:
            rows.append(names)
    return rows


def test_the_architecture_document_lists_the_layers_top_down() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    top_down = sorted(set(LAYERS.values()), reverse=True)
    expected = [sorted(p for p in LAYERS if LAYERS[p] == n) for n in top_down]
    assert [sorted(row) for row in _layer_lines(text, "# Architecture")] == expected
    for package, layers in SUBLAYERS.items():
        rows = _layer_lines(text, f"## Inside `{package}/`")
        inner = sorted(layers, key=layers.__getitem__, reverse=True)
        assert rows == [[f"{package}/{name}"] for name in inner]


# --- the checks find what they look for ---------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "runner"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            (root / parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    return root


def test_the_check_finds_upward_and_sideways_imports(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "job/mod.py": "from runner.ci.console import Console\n",  # upward
            "client/mod.py": "import runner.spec.loader\n",  # sideways
            "ci/mod.py": "from runner.job.digest import Digest\n",  # downward: fine
            "emulator/core/mod.py": "def f():\n    from runner.emulator.shell import app\n",  # core -> shell
            "emulator/shell/mod.py": "from runner.emulator.core import mod\n",  # shell -> core: fine
        },
    )
    assert upward_imports(root) == [
        "runner/client/mod.py:1: client imports runner.spec.loader",
        "runner/emulator/core/mod.py:2: emulator.core imports runner.emulator.shell",
        "runner/job/mod.py:1: job imports runner.ci.console",
    ]


def test_the_check_finds_cycles_through_function_level_imports(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "emulator/a.py": "from runner.emulator import b\n",
            "emulator/b.py": "def later():\n    from runner.emulator.c import x\n",
            "emulator/c.py": "import runner.emulator.a\nx = 1\n",
            "emulator/d.py": "from runner.emulator.a import y\n",  # into the cycle, not part of it
        },
    )
    assert import_cycles(root) == [["runner.emulator.a", "runner.emulator.b", "runner.emulator.c"]]


def test_the_check_finds_http_reached_from_the_core(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "emulator/core/state.py": "from runner.models import thing\n",
            "models/__init__.py": "def f():\n    import starlette.routing\n",
            "emulator/shell/app.py": "import fastapi\n",  # the shell may
        },
    )
    assert http_imports_of_the_core(root) == ["runner.models:2: imports starlette.routing"]
