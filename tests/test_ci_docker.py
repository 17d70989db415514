"""The Dockerfile (no Docker engine here: the install it does is replayed in a fresh virtual
environment) and the pre-deploy gate script."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env, fast_world

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"


def ci_free_env() -> dict[str, str]:
    """child_env(), and pip free to install into the replay's own venv."""
    env = child_env()
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    return env


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def test_dockerfile_follows_the_contract():
    steps = instructions()
    (base,) = [args for keyword, args in steps if keyword == "FROM"]
    assert re.fullmatch(r"python:3\.\d+-slim(-\w+)?", base), base  # a tag, no digest
    runs = " && ".join(args for keyword, args in steps if keyword == "RUN")
    # git (commit metadata), Node, npm and Chromium (browser checks), tini (an init as PID 1): Debian's.
    assert "apt-get install -y --no-install-recommends git nodejs npm chromium tini" in runs
    assert "rm -rf /var/lib/apt/lists/*" in runs
    assert "git config --system --add safe.directory '*'" in runs
    assert not re.search(r"\b(curl|wget)\b", runs)  # nothing fetched but packages
    assert not [args for keyword, args in steps if keyword == "ADD"]
    (user,) = [args for keyword, args in steps if keyword == "USER"]
    assert re.fullmatch(r"[1-9]\d*(:\d+)?", user)  # numeric, not root
    assert steps[-2] == ("ENTRYPOINT", '["tini", "--", "testsession"]')  # exec form, tini reaps as PID 1
    assert steps[-1] == ("CMD", '["run"]')


def pip_install_args() -> list[str]:
    """The Dockerfile's `pip install ...` arguments, without the source directory."""
    runs = [args for keyword, args in instructions() if keyword == "RUN" and "pip install " in args]
    (command,) = runs
    words = shlex.split(command.split("&&")[0])
    args = words[words.index("install") + 1 :]
    assert args[-1] == "/src"
    return args[:-1]


def copy_build_context(target: Path) -> None:
    """What .dockerignore lets through: its `!` lines on top of a `*` exclude-all."""
    lines = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    assert "*" in lines
    for pattern in (line[1:].rstrip("/") for line in lines if line.startswith("!")):
        source = REPO / pattern
        if source.is_dir():
            shutil.copytree(source, target / pattern, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, target / pattern)


# A pip install in a fresh venv: 20 s of CPU, so it runs with the image tests (scripts/test-image.sh,
# and .ci/run on its own where podman is not set up) rather than in the suite.
@pytest.mark.container
@pytest.mark.timeout(600)
def test_the_dockerfile_install_runs_the_main_job(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    src = tmp_path / "src"
    src.mkdir()
    copy_build_context(src)
    # The Dockerfile's flags, less --no-cache-dir: the local pip cache may serve the wheels here.
    flags = [flag for flag in pip_install_args() if flag != "--no-cache-dir"]
    env = ci_free_env()
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *flags, str(src)],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    run = subprocess.run(
        [
            str(venv / "bin" / "testsession"),
            "run",
            str(REPO / "examples" / "testsession.yml"),
            "--emulator",
            "--world",
            str(fast_world(tmp_path)),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # the demo world has failing checks
    reports = work / "testsession-reports"
    assert {p.name for p in reports.iterdir()} >= {"junit.xml", "summary.md", "results.json"}
    assert json.loads((reports / "results.json").read_text())["exitCode"] == 1


def gate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """examples/pre-deploy-gate.sh ARGS as a shell runs it, with this interpreter's installed
    `testsession` first on PATH. (test_examples ran the same two gates again: folded in here.)"""
    env = ci_free_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["bash", str(REPO / "examples" / "pre-deploy-gate.sh"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gate_blocks_the_deploy_when_checks_fail(tmp_path):
    world = str(fast_world(tmp_path))
    proc = gate(tmp_path, str(REPO / "examples" / "testsession.yml"), "--emulator", "--world", world,
                "--", "touch", "deployed")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "checks failed; not deploying" in proc.stderr
    assert not (tmp_path / "deployed").exists()
    assert "verdict: FAILED" in proc.stdout  # the run's own output reaches the log


def test_gate_deploys_when_checks_pass(tmp_path):
    world = str(fast_world(tmp_path))
    proc = gate(tmp_path, str(REPO / "examples" / "testsession.yml"), "--tag", "smoke", "--emulator",
                "--world", world, "--", "touch", "deployed")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pre-deploy gate: passed" in proc.stdout
    assert (tmp_path / "deployed").exists()


def test_gate_passes_a_usage_error_through(tmp_path):
    proc = gate(tmp_path, "missing.yml", "--emulator", "--", "touch", "deployed")
    assert proc.returncode == 2
    assert not (tmp_path / "deployed").exists()
