"""One run of a Playwright check suite: `playwright test` in the project's folder, with testsession's
settings laid over the project's config, and the report our reporter wrote.

Playwright reads no executable path, reporter or output folder from the environment alone, and the
project's config may be TypeScript or ESM: the run writes a small config beside the project's (its
relative paths, testDir and globalSetup, stay right) that imports it and applies overlay.cjs, and
removes it after the run. The command is the user's testCommand as an argument list (no shell), its
`--config` replaced by ours; the child runs in its own process group with the check's variables as
process.env and nothing else of ours but what Node and the browser need (node.child_environment),
bounded by the attempt's deadline and ended with everything it started on a stop. The config written
beside the project's is removed after the run, and at the latest when testsession exits (a SIGTERM).
Only a SIGKILL can leave a `.testsession-PID-*.config.ts` behind: the next run in that project
removes it, once the process its name gives is gone (`sweep_stale`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import secrets
import threading
from pathlib import Path

from runner.checks.child import scratch_dir
from runner.checks.node import child_environment, run_child
from runner.checks.protocols.browser.script import HERE as BROWSER_HERE
from runner.checks.protocols.browser.script import ScriptRun, chromium_args
from runner.checks.protocols.browser.setup import node_tools
from runner.checks.protocols.playwright.project import Project

HERE = Path(__file__).parent
# Production's default when the config sets none (playwright-checks/configuration.mdx).
DEFAULT_RETRIES = 2


# The configs written beside projects' and not yet removed: a SIGTERM can end the run while a check's
# thread still waits for its child to go, before its `finally`; they are removed when the process exits.
_WRITTEN: set[Path] = set()
_WRITTEN_LOCK = threading.Lock()


@atexit.register
def _remove_written() -> None:
    with _WRITTEN_LOCK:
        for path in _WRITTEN:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        _WRITTEN.clear()


# `.testsession-PID-RANDOM.config.ts`: the process that wrote it, so a later run can tell a config
# left by a killed run from one a run in progress still uses.
_WRAPPER_NAME = re.compile(r"\.testsession-(\d{1,10})-[0-9a-f]{8}\.config\.ts")


def sweep_stale(folder: Path) -> list[Path]:
    """Removes the configs runs killed by SIGKILL left in `folder` (their `finally` and atexit never
    ran): those whose writer is no longer a process here. A run still going keeps its own."""
    removed: list[Path] = []
    try:
        found = [(path, _WRAPPER_NAME.fullmatch(path.name)) for path in folder.iterdir()]
    except OSError:
        return removed
    for path, match in found:
        if match is None or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a process's id: not ours to judge
    try:
        os.kill(pid, 0)  # no signal sent: whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM), or it cannot be told: left alone
        return True
    return True


def wrapper_text(config: Path) -> str:
    """The config the run gives Playwright: the project's, with overlay.cjs applied."""
    return (
        "// Written by testsession for one run of this Playwright project and removed after it:\n"
        "// the project's config with testsession's reporter, output folder and browser.\n"
        f"import config from {json.dumps('./' + config.name)};\n"
        f"import overlay from {json.dumps(str(HERE / 'overlay.cjs'))};\n"
        "export default overlay(config);\n"
    )


def run_suite(
    project: Project,
    *,
    browser: Path,
    output_dir: Path,
    variables: dict[str, str],
    deadline: float,
    stop: threading.Event | None,
    skip_browsers: tuple[str, ...] = (),
) -> ScriptRun:
    """OSError when the wrapper config cannot be written beside the project's (a read-only folder).
    `skip_browsers`: the config's projects of these browsers are left out (they cannot run here)."""
    tools = node_tools()
    with scratch_dir("testsession-suite-") as work:
        sweep_stale(project.config.parent)
        wrapper = project.config.parent / f".testsession-{os.getpid()}-{secrets.token_hex(4)}.config.ts"
        with _WRITTEN_LOCK:
            _WRITTEN.add(wrapper)
        try:
            wrapper.write_text(wrapper_text(project.config), encoding="utf-8")
            report_file = work / "report.json"
            ours = {
                "reporter": str(BROWSER_HERE / "reporter.cjs"),
                "outputDir": str(output_dir),
                "executablePath": str(browser),
                "args": chromium_args(),
                "trace": "retain-on-failure",
                "screenshot": "only-on-failure",
                "retries": DEFAULT_RETRIES,
                "skip": list(skip_browsers),
            }
            env = child_environment(
                variables,
                extra={"TESTSESSION_REPORT": str(report_file), "TESTSESSION_PLAYWRIGHT": json.dumps(ours),
                       "TESTSESSION_FULL_TITLES": "1", "FORCE_COLOR": "0", "NO_COLOR": "1",
                       "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1", "CI": "1"},
            )  # fmt: skip
            argv = [str(tools.node), str(project.playwright.cli), "test", *project.command.args]
            argv += ["--config", str(wrapper)]
            child = run_child(argv, cwd=project.folder, env=env, deadline=deadline, stop=stop)
            report = None
            try:
                data = json.loads(report_file.read_text(encoding="utf-8"))
                report = data if isinstance(data, dict) else None
            except (OSError, ValueError):
                pass
            return ScriptRun(child, report)
        finally:
            with _WRITTEN_LOCK, contextlib.suppress(OSError):
                wrapper.unlink(missing_ok=True)
                _WRITTEN.discard(wrapper)
