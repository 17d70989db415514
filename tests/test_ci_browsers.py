"""The Action sets up browser checks on a hosted runner: Node (actions/setup-node), the @playwright/test
of the checks' runtimes and a browser, kept with actions/cache, only when the checks need them (input
`browsers`, default auto). Its steps' decision and set-up run here as the action runs them; the steps
that only GitHub runs (setup-node, cache) are read from action.yml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import Ran, run_here

from runner.checks.protocols.browser.setup import DEFAULT_RUNTIME, RUNTIMES, cache_root

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "action.yml"
NEEDED = "steps.install.outputs.browsers == 'true'"


def steps() -> list[dict[str, Any]]:
    return list(yaml.safe_load(ACTION.read_text(encoding="utf-8"))["runs"]["steps"])


def action_module(args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runner.cli.action", args],
        cwd=cwd, env={"PATH": os.environ["PATH"], "HOME": str(cwd), **env},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_node_playwright_and_the_browser_are_set_up_and_cached_only_when_needed() -> None:
    by_name = {step.get("uses", "").split("@")[0] or step["name"]: step for step in steps()}
    install = next(step for step in steps() if step.get("id") == "install")
    assert "-m runner.cli.action --browsers" in install["run"] and "GITHUB_OUTPUT" in install["run"]
    assert install["env"]["INPUT_BROWSERS"] == "${{ inputs.browsers }}"
    node, cache = by_name["actions/setup-node"], by_name["actions/cache"]
    setup = next(step for step in steps() if "--setup-browsers" in step.get("run", ""))
    for step in (node, cache, setup):
        assert step["if"] == NEEDED
    order = steps()
    assert order.index(install) < order.index(node) < order.index(cache) < order.index(setup)
    assert order.index(setup) < next(i for i, step in enumerate(order) if step.get("id") == "run")
    # What is cached is where the engine looks (no XDG_CACHE_HOME on a hosted runner: ~/.cache), by
    # runner and Playwright version.
    home_cache = cache_root().relative_to(Path.home()) if "XDG_CACHE_HOME" not in os.environ else None
    if home_cache is not None:
        assert f"~/{home_cache}/playwright-*" in cache["with"]["path"].split()
    assert "${{ steps.install.outputs.playwright }}" in cache["with"]["key"]
    assert "runner.os" in cache["with"]["key"]
    assert yaml.safe_load(ACTION.read_text())["inputs"]["browsers"]["default"] == "auto"


def browsers_here(env: dict[str, str], cwd: Path) -> Ran:
    """`python -m runner.cli.action --browsers` in this process (helpers.run_here): its outputs and
    exit code, without a child's ~0.4 s of imports; the first call of the test below is the process."""
    from runner.cli.action import browsers_main

    return run_here([], {"PATH": os.environ["PATH"], "HOME": str(cwd), **env}, cwd,
                    entry=lambda: browsers_main(os.environ))  # fmt: skip


def test_the_decision_is_written_as_step_outputs(tmp_path: Path) -> None:
    browser = tmp_path / "checks.yml"
    browser.write_text(
        "checks:\n"
        "  - {name: Old, checkType: BROWSER, runtimeId: '2025.04', script: \"test('x', () => {})\"}\n"
        "  - {name: New, checkType: MULTI_STEP, script: \"test('y', () => {})\"}\n"
    )
    (tmp_path / "api.yml").write_text("- {name: A, checkType: API, request: {url: 'http://x'}}\n")
    done = action_module("--browsers", {"INPUT_CHECKS": "checks.yml"}, tmp_path)
    outputs = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert outputs == {"browsers": "true", "playwright": f"{RUNTIMES['2025.04']}-{RUNTIMES[DEFAULT_RUNTIME]}"}
    here = browsers_here({"INPUT_CHECKS": "api.yml"}, tmp_path)
    assert here.stdout.splitlines() == ["browsers=false", "playwright="]
    here = browsers_here({"INPUT_CHECKS": "api.yml", "INPUT_BROWSERS": "true"}, tmp_path)
    assert here.stdout.splitlines() == ["browsers=true", f"playwright={RUNTIMES[DEFAULT_RUNTIME]}"]
    here = browsers_here({"INPUT_BROWSERS": "sometimes"}, tmp_path)
    assert here.returncode == 2 and here.stdout == ""
    assert (
        here.stderr == "testsession: error: input browsers: expected auto, true or false, got 'sometimes'\n"
    )


def test_the_set_up_step_finds_a_cached_playwright_and_the_machines_browser(tmp_path: Path) -> None:
    """The cache restored (this machine's Playwright linked in): nothing installed, the browser named."""
    version = RUNTIMES[DEFAULT_RUNTIME]
    installed = cache_root() / f"playwright-{version}"
    if not (installed / "node_modules").is_dir():
        pytest.skip(f"no @playwright/test {version} in {installed} (.ci/run installs it)")
    cached = tmp_path / ".cache" / "testsession"
    cached.mkdir(parents=True)
    (cached / f"playwright-{version}").symlink_to(installed)
    done = action_module("--setup-browsers", {"PLAYWRIGHT_VERSIONS": version}, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installing" not in done.stdout and "::warning::" not in done.stdout
    assert done.stdout.startswith(f"browser checks: Playwright {version} ({cached}/playwright-{version})")
