"""One `playwright test` for one or more checks (batch.py decides which): a run folder (place.py: the
same from run to run, so Playwright finds the files compiled) with a folder per check, a generated
config, Playwright's CLI run with Node.

Each check's script is written as it is stored (CommonJS `require('@playwright/test')`, ESM `import`,
TypeScript: Playwright compiles `.ts` files, so `check.spec.ts` takes all three) in its own folder
(`c1/`, `c2/` ...), with its `@playwright/test` pointed at that folder's shim: Playwright's exports and
a `context` fixture that keeps console errors, page errors and failed requests (fixtures.cjs), and the
check's own variables (CHECK_NAME ...) set in process.env when its file loads and before each of its
tests. The generated config: `workers` workers (a check's tests run in order in one of them), no
retries (the check's retry strategy retries), the browser by launchOptions.executablePath with the
flags a locked-down machine needs, a screenshot on failure and the trace of a failed test kept
(production: "Traces are populated automatically for failed Browser checks"), written to `output_dir`;
reporter.cjs writes each check's results to a JSON file that report.py reads.

The check's `playwrightConfig` is merged into that config as production reads it (browser-checks/
playwright-support.mdx): its `timeout` (at most the check's run limit), `expect` and the supported `use`
options (baseURL, viewport, extraHTTPHeaders ...); ours win only for what must be ours: headless,
screenshot, trace and launchOptions (the machine's browser and its flags), the reporter, the output
folder, workers and retries. Its `sharedFiles` ({path, content}, paths in the Checkly project) are
written at their paths in its folder and the script next to them at the folder of its `scriptPath`, so
`import { login } from './helpers/login'` resolves; a path that leaves the folder (`../x`, absolute) is
not written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runner.checks.child import scratch_dir
from runner.checks.node import ChildResult, child_environment, run_child
from runner.checks.protocols.browser.place import CACHE_VARIABLE, run_place
from runner.checks.protocols.browser.setup import Playwright, node_tools
from runner.models.check_definitions import PLAYWRIGHT_USE_KEYS

HERE = Path(__file__).parent
SPEC_NAME = "check.spec.ts"
# The shim and the fixtures are ours and plain CommonJS: in a node_modules folder, which Playwright loads
# as it is (it compiles every other file it loads with Babel: for 20 checks, 21 files fewer to compile).
SHIM_NAME = "node_modules/testsession-test.cjs"  # in each check's folder
FIXTURES_NAME = "testsession/node_modules/testsession-fixtures.cjs"  # in the run's folder
REPORT_DIR = "testsession-report"
REPORT_NAME = "report.json"
CONFIG_NAME = "playwright.config.cjs"
OUTPUT_VARIABLE = "TESTSESSION_OUTPUT_DIR"  # Playwright's outputDir, read by the config
# Ours in the run's folder: a shared file of these names at its top is not written (it could pose as
# the report, a config or the shim).
RESERVED = frozenset({REPORT_NAME, CONFIG_NAME, "node_modules"})
# Files whose `@playwright/test` imports are pointed at the shim: the script and the shared files.
CODE_SUFFIXES = (".ts", ".js", ".mjs", ".cjs", ".mts", ".cts", ".tsx", ".jsx")
# Flags Chromium needs on a CI runner: no GPU, no sandbox as root, no background connections (a closed
# network refuses them and they slow the start), a small /dev/shm in containers.
CHROMIUM_FLAGS = (
    "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-default-apps",
)  # fmt: skip
PLAYWRIGHT_TEST_TIMEOUT_MS = 30_000  # Playwright's own default
_IMPORT = re.compile(r"""(require\(\s*|from\s+|import\s+)(['"])@playwright/test\2""")


@dataclass(frozen=True)
class ScriptRun:
    child: ChildResult
    report: dict[str, object] | None  # the check's tests and errors; None when nothing readable came
    started: float | None = None  # time.monotonic() when its run started
    # Its own time in a run of several checks (its tests' durations); None: the run's whole time.
    own_ms: float | None = None
    checks: int = 1  # how many checks its run held


@dataclass(frozen=True)
class Member:
    """One check of a run: its folder in the run (`c1`), its script and files, its own variables (those
    that differ between the checks of one run: CHECK_NAME, CHECK_ID ..., never a secret) and where its
    files (screenshots, trace) go."""

    folder: str
    script: str
    output_dir: Path
    own_variables: Mapping[str, str]
    script_path: str | None = None
    shared_files: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True)
class BatchRun:
    child: ChildResult
    reports: Mapping[str, dict[str, object]]  # by member folder: what reporter.cjs wrote for it
    end: dict[str, object] | None  # the run's end (status, errors outside any test); None: it was ended


def chromium_args() -> list[str]:
    """The machine's Chromium's flags: CHROMIUM_FLAGS, and no sandbox as root (Chromium refuses it)."""
    return list(CHROMIUM_FLAGS) + (["--no-sandbox"] if os.geteuid() == 0 else [])


def rewrite_imports(script: str, shim: str = f"./{SHIM_NAME}") -> str:
    """`@playwright/test` in require(), import ... from and import '...' becomes the shim (`shim`: its
    path relative to the file)."""
    return _IMPORT.sub(lambda m: f"{m[1]}{m[2]}{shim}{m[2]}", script)


def config_text(
    *, browser: Path, specs: Sequence[str] = (SPEC_NAME,), workers: int = 1,
    playwright_config: Mapping[str, Any] | None = None, max_test_ms: float | None = None,
) -> str:  # fmt: skip
    """The run's config; its output folder is the child's OUTPUT_VARIABLE (the text stays the same from
    run to run, as its compiled form in Playwright's cache: place.py)."""
    flags = chromium_args()
    theirs = playwright_config or {}
    their_use: Mapping[str, Any] = theirs["use"] if isinstance(theirs.get("use"), dict) else {}
    config: dict[str, Any] = {
        "testDir": ".",
        "testMatch": list(specs),
        "workers": workers,
        "retries": 0,
        "reporter": [[str(HERE / "reporter.cjs")]],
        "preserveOutput": "always",
        "use": {
            **{k: v for k, v in their_use.items() if k in PLAYWRIGHT_USE_KEYS},
            "headless": True,
            "screenshot": "only-on-failure",
            "trace": "retain-on-failure",
            "launchOptions": {"executablePath": str(browser), "args": flags},
        },
    }
    timeout = theirs.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        config["timeout"] = timeout
    # No test may outlive the check's run limit (0 is Playwright's "no timeout").
    if max_test_ms is not None and (config.get("timeout") or PLAYWRIGHT_TEST_TIMEOUT_MS) > max_test_ms:
        config["timeout"] = max(1, round(max_test_ms))
    if isinstance(theirs.get("expect"), dict):
        config["expect"] = theirs["expect"]
    head = "// generated by testsession"
    output = f"config.outputDir = process.env.{OUTPUT_VARIABLE};"
    return f"{head}\nconst config = {json.dumps(config, indent=2)};\n{output}\nmodule.exports = config;\n"


def run_batch(
    members: Sequence[Member],
    *,
    playwright: Playwright,
    browser: Path,
    output_dir: Path,
    variables: Mapping[str, str],
    deadline: float,
    stop: threading.Event | None,
    workers: int,
    playwright_config: Mapping[str, Any] | None = None,
    max_test_ms: float | None = None,
) -> BatchRun:
    """One `playwright test` for `members` with `workers` workers: a folder per member with its own shim
    (Playwright's exports, setting the member's own variables in process.env when its file loads and
    before each of its tests), the shared `variables` as the process's environment. Playwright writes
    files under `output_dir`; each member's are moved to its own output_dir after the run."""
    tools = node_tools()
    with scratch_dir("testsession-browser-") as scratch, run_place(scratch / "run") as place:
        work = place.folder  # the same from run to run (place.py): Playwright finds its files compiled
        reports = scratch / REPORT_DIR
        reports.mkdir()
        (work / "node_modules").symlink_to(playwright.root / "node_modules", target_is_directory=True)
        (work / FIXTURES_NAME).parent.mkdir(parents=True)
        shutil.copyfile(HERE / "fixtures.cjs", work / FIXTURES_NAME)
        own_keys = sorted({key for m in members for key in m.own_variables})
        specs = []
        for member in members:
            root = work / member.folder
            (root / SHIM_NAME).parent.mkdir(parents=True)
            (root / SHIM_NAME).write_text(_shim(member.own_variables, own_keys), encoding="utf-8")
            spec = write_sources(root, member.script, member.script_path, member.shared_files)
            specs.append(spec.relative_to(work).as_posix())
        config = work / CONFIG_NAME
        text = config_text(browser=browser, specs=specs, workers=workers,
                           playwright_config=playwright_config, max_test_ms=max_test_ms)  # fmt: skip
        config.write_text(text)
        extra = {"TESTSESSION_REPORT_DIR": str(reports), OUTPUT_VARIABLE: str(output_dir), "FORCE_COLOR": "0",
                 "NO_COLOR": "1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1", "CI": "1"}  # fmt: skip
        if place.compile_cache is not None:
            extra[CACHE_VARIABLE] = str(place.compile_cache)
        env = child_environment(dict(variables), extra=extra)
        child = run_child(
            [str(tools.node), str(playwright.cli), "test", "--config", str(config)],
            cwd=work, env=env, deadline=deadline, stop=stop,
        )  # fmt: skip
        found = {m.folder: r for m in members if (r := _read(reports / f"{m.folder}.json")) is not None}
        return BatchRun(child, found, _read(reports / "end.json"))


def _shim(own: Mapping[str, str], keys: Sequence[str]) -> str:
    """The member's `@playwright/test`: the fixtures, and its own variables in process.env (the other
    members' own variables removed) when its file loads and before each of its tests."""
    return (
        f"const own = {json.dumps(dict(own))};\n"
        f"const keys = {json.dumps(list(keys))};\n"
        "const mine = () => {\n"
        "  for (const k of keys) delete process.env[k];\n"
        "  Object.assign(process.env, own);\n"
        "};\n"
        "mine();\n"
        f"const pw = require('../../{FIXTURES_NAME}');\n"
        "pw.test.beforeEach(mine);\n"
        "module.exports = pw;\n"
    )


def _read(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_sources(
    work: Path, script: str, script_path: str | None, shared_files: Sequence[tuple[str, str]]
) -> Path:
    """Writes the shared files at their paths and the script as SPEC_NAME in its scriptPath's folder
    (the top when it has none); returns the spec's path. A path that leaves `work` or names one of
    ours is not written."""
    folder = _inside(work, script_path)
    spec = (folder.parent if folder is not None else work) / SPEC_NAME
    for rel, content in (*shared_files, (str(spec.relative_to(work)), script)):
        target = _inside(work, rel)
        if target is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shim = os.path.relpath(work / SHIM_NAME, target.parent)
        shim = shim if shim.startswith(".") else f"./{shim}"
        text = rewrite_imports(content, shim) if target.suffix in CODE_SUFFIXES else content
        target.write_text(text, encoding="utf-8")
    return spec


def _inside(root: Path, rel: str | None) -> Path | None:
    """root/rel when `rel` is a relative path that stays inside root, else None."""
    if not rel:
        return None
    path = PurePosixPath(rel.replace("\\", "/"))  # a Windows-made path has backslashes
    parts = [part for part in path.parts if part != "."]
    if path.is_absolute() or not parts or ".." in parts or parts[0] in RESERVED:
        return None
    return root.joinpath(*parts)
