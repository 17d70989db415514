"""Where Playwright and the browser come from for a BROWSER or MULTI_STEP check (docs/checks.md, "Browser").

Playwright (`find_playwright`):
1. the working directory's own `node_modules/@playwright/test` (the project's version wins);
2. else the version of the check's `runtimeId` (production's runtimes list, RUNTIMES; null: the newest,
   as a new account's active runtime), installed once with npm into a user cache
   (`$XDG_CACHE_HOME/testsession/playwright-<version>`, default ~/.cache), with a progress line;
3. no npm, or npm cannot install it (no registry): SetupError saying what to install.

The browser (`find_browser`), Chromium only (production's browser checks run Chromium):
1. a flag or TESTSESSION_BROWSER naming an executable;
2. else the one that Playwright installed itself (`npx playwright install chromium`);
3. else the machine's: chromium, chromium-browser, google-chrome, google-chrome-stable on PATH;
4. none: SetupError naming `npx playwright install chromium` and `apt-get install chromium`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.checks.node import ChildResult, NodeMissing, NodeTools, child_environment, find_node, run_child

# Production's runtimes (platform/runtimes/runtime-specification.mdx) and the @playwright/test of each.
RUNTIMES: dict[str, str] = {
    "2026.04": "1.58.2",
    "2025.04": "1.51.1",
    "2024.09": "1.48.2",
    "2024.02": "1.42.1",
    "2023.09": "1.38.1",
    "2023.02": "1.32.1",
    "2022.10": "1.28.0",
}
DEFAULT_RUNTIME = "2026.04"
BROWSER_VARIABLE = "TESTSESSION_BROWSER"
MACHINE_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_SECONDS = 300.0
PACKAGE = "@playwright/test"

Progress = Callable[[str], None]


class SetupError(Exception):
    """Playwright, Node or the browser cannot be had: the message says what to install."""


@dataclass(frozen=True)
class Playwright:
    root: Path  # the folder whose node_modules holds @playwright/test
    version: str
    source: str  # "the working directory" or "the cache (runtime 2026.04)"

    @property
    def cli(self) -> Path:
        return self.root / "node_modules" / PACKAGE / "cli.js"


def node_tools() -> NodeTools:
    try:
        return find_node()
    except NodeMissing as exc:
        raise SetupError(str(exc)) from None


def runtime_version(runtime_id: str | None) -> str:
    """The @playwright/test version of a runtime; an unknown runtime id is the caller's problem."""
    return RUNTIMES[runtime_id or DEFAULT_RUNTIME]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "testsession"


def _installed_version(root: Path) -> str | None:
    try:
        data = json.loads((root / "node_modules" / PACKAGE / "package.json").read_text())
        return str(data["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def project_playwright(workdir: Path) -> Playwright | None:
    """The @playwright/test that Node resolves from `workdir`: its node_modules or a parent's (a
    workspace's root); None when there is none (a Playwright check suite's project, never installed)."""
    for folder in (workdir, *workdir.parents):
        version = _installed_version(folder)
        if version:
            return Playwright(folder, version, "the project")
    return None


_INSTALL_LOCK = threading.Lock()


def find_playwright(
    workdir: Path,
    runtime_id: str | None,
    *,
    progress: Progress,
    deadline: float,
    stop: threading.Event | None,
) -> Playwright:
    own = _installed_version(workdir)
    if own:
        return Playwright(workdir, own, "the working directory")
    runtime = runtime_id or DEFAULT_RUNTIME
    version = runtime_version(runtime)
    root = cache_root() / f"playwright-{version}"
    source = f"the cache (runtime {runtime})"
    if _installed_version(root) == version:
        return Playwright(root, version, source)
    with _INSTALL_LOCK, _file_lock(cache_root() / f".playwright-{version}.lock"):
        if _installed_version(root) != version:  # another thread or process may have installed it
            _install(root, version, progress=progress, deadline=deadline, stop=stop)
    return Playwright(root, version, source)


@contextlib.contextmanager
def _file_lock(path: Path):  # type: ignore[no-untyped-def]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _install(
    root: Path, version: str, *, progress: Progress, deadline: float, stop: threading.Event | None
) -> None:
    tools = node_tools()
    what = f"npm install {PACKAGE}@{version}"
    if tools.npm is None:
        raise SetupError(
            f"Playwright is needed and npm is not installed: run `{what}` in the working directory, "
            "or install npm (apt-get install npm) so testsession can install it"
        )
    progress(f"installing {PACKAGE}@{version} into {root} (once, with npm) ...")
    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix=f".playwright-{version}-", dir=root.parent))
    try:
        env = child_environment(
            extra={"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1", "npm_config_update_notifier": "false"}
        )
        result = run_child(
            [str(tools.npm), "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(staging),
             f"{PACKAGE}@{version}"],
            cwd=staging, env=env, deadline=min(deadline, time.monotonic() + INSTALL_SECONDS), stop=stop,
        )  # fmt: skip
        if result.returncode != 0 or _installed_version(staging) != version:
            raise SetupError(f"Playwright {version} could not be installed ({_why(result)}): run `{what}` "
                             "in the working directory, or let npm reach its registry")  # fmt: skip
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
        staging.rename(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"installed {PACKAGE}@{version} in {time.monotonic() - started:.1f} s")


def _why(result: ChildResult) -> str:
    if result.cancelled:
        return "cancelled"
    if result.timed_out:
        return "npm did not finish in time"
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "ERR" in line] or lines
    return f"npm: {errors[0][:200]}" if errors else f"npm exited with {result.returncode}"


def _may_have_browsers(playwright: Playwright) -> bool:
    """False when none of the folders where Playwright installs browsers exists: PLAYWRIGHT_BROWSERS_PATH
    (when set, Node is asked anyway), `ms-playwright` in $XDG_CACHE_HOME and in ~/.cache, and
    playwright-core's `.local-browsers` (PLAYWRIGHT_BROWSERS_PATH=0)."""
    if os.environ.get("PLAYWRIGHT_BROWSERS_PATH"):
        return True
    caches = [Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"), Path.home() / ".cache"]
    local = playwright.root / "node_modules" / "playwright-core" / ".local-browsers"
    return any((cache / "ms-playwright").is_dir() for cache in caches) or local.is_dir()


def find_browser(playwright: Playwright, named: str | None = None) -> Path:
    named = named or os.environ.get(BROWSER_VARIABLE)
    if named:
        found = shutil.which(named)
        if found is None:
            raise SetupError(f"the browser named by {BROWSER_VARIABLE} is not an executable: {named}")
        return Path(found)
    own = _playwright_browser(playwright)
    if own is not None:
        return own
    for name in MACHINE_BROWSERS:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise SetupError(
        "no Chromium for browser checks: run `npx playwright install chromium`, or "
        f"`apt-get install chromium`, or name one with {BROWSER_VARIABLE}"
    )


def _playwright_browser(playwright: Playwright) -> Path | None:
    """The Chromium that Playwright downloaded itself, when it did (asked once per Playwright folder).
    Where Playwright keeps no browsers at all, Node is not asked (it costs a Node start per run)."""
    return own_build(playwright, "chromium")


# Playwright's browser types; only Chromium has a machine's stand-in (MACHINE_BROWSERS).
PLAYWRIGHT_BROWSERS = ("chromium", "firefox", "webkit")
_BUILDS: dict[tuple[Path, str], Path | None] = {}


def own_build(playwright: Playwright, browser: str) -> Path | None:
    """Playwright's own build of `browser` (chromium, firefox, webkit) when `npx playwright install`
    put it there, else None; asked once per Playwright folder and browser."""
    key = (playwright.root, browser)
    if browser not in PLAYWRIGHT_BROWSERS:
        return None
    if key not in _BUILDS:
        found: Path | None = None
        with contextlib.suppress(SetupError, OSError):
            if not _may_have_browsers(playwright):
                raise SetupError("no browsers of Playwright's own")
            tools = node_tools()
            script = f"console.log(require('playwright-core').{browser}.executablePath())"
            result = run_child([str(tools.node), "-e", script], cwd=playwright.root, env=child_environment(),
                               deadline=time.monotonic() + 20)  # fmt: skip
            path = Path(result.stdout.strip()) if result.returncode == 0 and result.stdout.strip() else None
            found = path if path is not None and path.is_file() and os.access(path, os.X_OK) else None
        _BUILDS[key] = found
    return _BUILDS[key]
