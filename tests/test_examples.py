"""Every shipped example runs on the shipped emulator, with the command in its own header.

The world is examples/emulator-world.yml (the emulator's default world) at a higher speed, so the
sessions take a fraction of a second; nothing else is changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT
from helpers import Ran, child_env, fast_world, run_here

EXAMPLES = REPO_ROOT / "examples"


@pytest.fixture(name="fast_world")
def fast_world_file(tmp_path: Path) -> Path:
    return fast_world(tmp_path)


def run_testsession(*args: str, cwd: Path) -> Ran:
    """`testsession ARGS` in this process (helpers.run_here); the gate script below runs it as a
    shell does, in a process of its own."""
    return run_here(list(args), child_env(), cwd)


def test_the_default_world_is_the_example_world() -> None:
    shipped = (REPO_ROOT / "runner" / "emulator" / "world.yml").read_text(encoding="utf-8")
    example = (EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8")
    assert yaml.safe_load(shipped) == yaml.safe_load(example)


@pytest.mark.parametrize(
    ("spec", "sessions", "checks"),
    [("testsession.yml", 1, 5), ("testsession-multi.yml", 2, 5)],
)
def test_spec_example_runs(spec: str, sessions: int, checks: int, tmp_path: Path, fast_world: Path) -> None:
    header = (EXAMPLES / spec).read_text(encoding="utf-8")
    assert f"testsession run examples/{spec} --emulator" in header
    proc = run_testsession(
        "run", str(EXAMPLES / spec), "--emulator", "--world", str(fast_world), cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the demo world has failing checks
    outcome = json.loads((tmp_path / "testsession-reports" / "results.json").read_text())
    assert len(outcome["sessions"]) == sessions
    assert outcome["counts"]["total"] == checks
    assert outcome["counts"]["failed"] >= 1
    assert all(s["testSessionId"] for s in outcome["sessions"])
    assert proc.stdout.splitlines()[-1].startswith("verdict: FAILED")


# examples/pre-deploy-gate.sh (a failing build is not deployed, a passing one is, a usage error passes
# through): tests/test_ci_docker.py, as a shell runs it.
