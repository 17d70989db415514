"""Where a Playwright check suite's project is, and whether it can run as it is (docs/checks.md,
"Playwright check suites").

The working directory is the check's `workingDir` relative to its project folder (a checks file's
folder; a world's checks: the working directory); it must hold the Playwright config (the one
`--config` names in testCommand, else playwright.config.{ts,js,mts,mjs,cts,cjs}, as Playwright looks)
and resolve @playwright/test from its node_modules or a parent's (a workspace). Nothing is installed:
production runs `installCommand` on its own runner, but here the project is the user's own folder, and
running an arbitrary install command against it is not ours to do. A missing piece fails closed saying
what is missing and what to run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.checks.protocols.browser.setup import Playwright, project_playwright
from runner.models.check_definitions import PlaywrightCheckDefinition
from runner.models.test_command import TestCommand, TestCommandError, parse_test_command

CONFIG_NAMES = tuple(f"playwright.config.{ext}" for ext in ("ts", "js", "mts", "mjs", "cts", "cjs"))
# What production runs to install when installCommand is empty, by the lock file it finds
# (playwright-checks/custom-dependencies.mdx, timeouts.mdx).
LOCK_FILES = (
    ("pnpm-lock.yaml", "pnpm install"), ("yarn.lock", "yarn install"), ("package-lock.json", "npm ci"),
)  # fmt: skip
DEFAULT_INSTALL = "npm install"


class ProjectMissing(Exception):
    """The project cannot run as it is: the message says what is missing and what to do."""


@dataclass(frozen=True)
class Project:
    folder: Path  # where testCommand runs
    config: Path  # the Playwright config the run wraps
    playwright: Playwright  # the project's own @playwright/test
    command: TestCommand


def find_project(base: Path, check: PlaywrightCheckDefinition) -> Project:
    folder = (base / check.workingDir) if check.workingDir else base
    where = f"workingDir {check.workingDir!r}: " if check.workingDir else ""
    if not folder.is_dir():
        raise ProjectMissing(f"{where}the Playwright project's folder {folder} does not exist")
    try:
        command = parse_test_command(check.testCommand)
    except TestCommandError as exc:  # refused when the file loaded; a check made otherwise too
        raise ProjectMissing(f"testCommand: {exc}") from None
    config = _config(folder, command)
    playwright = project_playwright(folder)
    if playwright is None:
        install = check.installCommand or _install_command(folder)
        if not any((f / "node_modules").is_dir() for f in (folder, *folder.parents)):
            raise ProjectMissing(
                f"the Playwright project in {folder} has no node_modules: run its install command there "
                f"first (`{install}`); testsession does not install a project's dependencies"
            )
        raise ProjectMissing(
            f"@playwright/test is not installed in the Playwright project in {folder}: add it "
            f"(npm install -D @playwright/test) and run its install command (`{install}`)"
        )
    return Project(folder, config, playwright, command)


def _config(folder: Path, command: TestCommand) -> Path:
    if command.config is not None:
        named = folder / command.config
        if not named.is_file():
            raise ProjectMissing(f"testCommand: --config names {named}, which is not a file")
        return named
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise ProjectMissing(
        f"no playwright.config.ts (or .js, .mts, .mjs, .cts, .cjs) in {folder}: a Playwright check suite "
        "runs the Playwright project there (set workingDir, or --config in testCommand)"
    )


def _install_command(folder: Path) -> str:
    for lock, command in LOCK_FILES:
        if (folder / lock).is_file():
            return command
    return DEFAULT_INSTALL
