"""API check setup and teardown scripts, run in Node as production's runtime runs them.

Production (detect/synthetic-monitoring/api-checks/setup-and-teardown.mdx): a setup script runs before
the request and may change `request` (method, url, body, headers, queryParameters) and process.env
(the changed variables fill the request's {{VARIABLES}}); an error or its 10 s limit aborts the check.
A teardown script runs after the response, before the assertions, reads `request` and `response`
(statusCode, statusText, body, headers, timings, timingPhases) and may change `response.body`, which
the assertions then read; its error fails the check after the assertions ran (their results are kept,
a failed assertion named first; production runs them either way).
Here (ours): the script sees the request as the check defines it, its {{VARIABLES}} not yet filled in
(so a variable the setup sets fills them); each script runs in a Node child of its own in a temp folder
holding the script at its path in the project and the shared files it imports, with the project's
node_modules linked in (TypeScript, imports and top-level await through the `jiti` the project's
`checkly` ships), with the check's variables as process.env and nothing else of this process's
environment beyond what Node needs; bounded by 10 s and by the run's stop; its error message is masked
like every text of an attempt.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Node and the child-process runner are imported when a check has scripts: every world and
    # checks file asks `runner_for`, and most checks have none (subprocess, selectors: start-up).
    from runner.checks.node import NodeTools
    from runner.models.check_definitions import CheckDefinition

HARNESS = Path(__file__).with_name("script_harness.mjs")
SCRIPT_SECONDS = 10.0  # production's limit for each script
MAX_RESULT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ScriptOutcome:
    ok: bool
    error: str | None  # one line, not yet masked
    timed_out: bool
    request: dict[str, Any]
    response: dict[str, Any] | None
    env: dict[str, str]


@dataclass(frozen=True)
class ScriptFiles:
    """Where a script comes from: its text, its path in the project, the files it imports."""

    script: str
    path: str | None
    shared: tuple[tuple[str, str], ...]
    project_dir: str | None


class ScriptRunner:
    """Runs setup and teardown scripts with one Node; `available()` finds it once."""

    def __init__(self, node: NodeTools, seconds: float = SCRIPT_SECONDS) -> None:
        self.node = node
        self.seconds = seconds  # each script's bound

    def run(
        self,
        phase: str,
        files: ScriptFiles,
        *,
        request: dict[str, Any],
        response: dict[str, Any] | None,
        env: dict[str, str],
        stop: threading.Event | None = None,
    ) -> ScriptOutcome:
        from runner.checks.node import child_environment, run_child

        timeout = self.seconds
        with tempfile.TemporaryDirectory(prefix="testsession-script-") as tmp:
            root = Path(tmp) / "project"
            entry = _safe_relative(files.path) or PurePosixPath(f"{phase}.ts")
            for rel, content in (*files.shared, (str(entry), files.script)):
                target = _inside(root, rel)
                if target is None:
                    continue  # a path leaving the folder (../x): never written outside it
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
            modules = _node_modules(files.project_dir)
            if modules is not None:
                (root / "node_modules").symlink_to(modules, target_is_directory=True)
            result_file = Path(tmp) / "result.json"
            input_file = Path(tmp) / "input.json"
            document = {
                "root": str(root), "entry": str(entry), "projectDir": files.project_dir,
                "request": request, "response": response, "env": env, "resultFile": str(result_file),
            }  # fmt: skip
            input_file.write_text(json.dumps(document), encoding="utf-8")
            # The variables reach the script through the input (the harness sets process.env to
            # exactly them); the child itself gets only what Node needs.
            run = run_child(
                [str(self.node.node), str(HARNESS), str(input_file)], cwd=root, env=child_environment(),
                deadline=time.monotonic() + timeout, stop=stop, output_cap=64 * 1024,
            )  # fmt: skip
            if run.timed_out or run.cancelled:
                what = "stopped" if run.cancelled else f"did not finish within {timeout:g} s"
                return ScriptOutcome(False, f"{phase} script {what}", run.timed_out, request, response, env)
            try:
                with result_file.open("rb") as handle:
                    data = json.loads(handle.read(MAX_RESULT_BYTES))
            except (OSError, ValueError):
                said = run.stderr.strip().splitlines()
                detail = f": {said[-1]}" if said else ""
                failed = f"{phase} script did not run (node exit {run.returncode}){detail}"
                return ScriptOutcome(False, failed, False, request, response, env)
        return _outcome(phase, data, request, response, env)


def _outcome(
    phase: str, data: Any, request: dict[str, Any], response: dict[str, Any] | None, env: dict[str, str]
) -> ScriptOutcome:
    if not isinstance(data, dict):
        return ScriptOutcome(False, f"{phase} script gave no result", False, request, response, env)
    new_request: dict[str, Any] = data["request"] if isinstance(data.get("request"), dict) else request
    new_response = data.get("response") if isinstance(data.get("response"), dict) else response
    new_env = (
        {str(k): str(v) for k, v in (data.get("env") or {}).items()}
        if isinstance(data.get("env"), dict)
        else env
    )
    error = data.get("error")
    message = f"{phase} script failed: {error}" if error else None
    return ScriptOutcome(bool(data.get("ok")), message, False, new_request, new_response, new_env)


def _safe_relative(path: str | None) -> PurePosixPath | None:
    if not path:
        return None
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts:
        return None
    return rel


def _inside(root: Path, rel: str) -> Path | None:
    safe = _safe_relative(rel)
    return root.joinpath(*safe.parts) if safe is not None else None


def _node_modules(project_dir: str | None) -> Path | None:
    if not project_dir:
        return None
    for folder in (Path(project_dir), *Path(project_dir).parents):
        if (folder / "node_modules").is_dir():
            return folder / "node_modules"
    return None


_lock = threading.Lock()
_found: list[ScriptRunner | None] = []


def runner_for(check: CheckDefinition) -> ScriptRunner | None:
    """The runner of `check`'s setup and teardown scripts; None without Node, and for a check that
    has none: Node (`node --version`, a child process) is looked for only when a check needs it."""
    return default_runner() if check.script_fields() else None


def default_runner() -> ScriptRunner | None:
    """A runner with this machine's Node (found once per process); None without Node."""
    with _lock:
        if not _found:
            from runner.checks.node import NodeMissing, find_node

            try:
                _found.append(ScriptRunner(find_node()))
            except NodeMissing:
                _found.append(None)
        return _found[0]
