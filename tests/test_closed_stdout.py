"""The gate's exit code survives a reader that closes stdout early, in the environment CI runners give.

GitHub and GitLab start Python without PYTHONUNBUFFERED: stdout is block-buffered, and Python flushes it
once more at exit. With the pipe closed (`testsession run ... | head -c 1` under `set -o pipefail`), that
last flush used to print "Exception ignored ... BrokenPipeError" and exit 120, losing the verdict.
The command runs here as `env -i PATH=... HOME=...` would start it: no other variable at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from helpers import fast_world

TESTSESSION = Path(sys.executable).parent / "testsession"


def bare_env(home: Path) -> dict[str, str]:
    """`env -i PATH="$PATH" HOME="$HOME"`: what a CI runner's shell hands the command, and no more."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}


@pytest.mark.parametrize("stderr_too", [False, True], ids=["stdout", "stdout-and-stderr"])
def test_demo_with_stdout_closed_early_exits_with_the_gates_code(tmp_path: Path, stderr_too: bool) -> None:
    assert TESTSESSION.exists(), "the project is installed in this interpreter's venv (pip install -e .)"
    world = fast_world(tmp_path)
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as err:
        proc = subprocess.Popen(
            [TESTSESSION, "run", REPO_ROOT / "examples" / "testsession.yml", "--emulator", "--world", world],
            cwd=tmp_path,
            env=bare_env(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if stderr_too else err,
        )
        assert proc.stdout is not None
        first = proc.stdout.read(1)  # `| head -c 1`: one byte, then the reader is gone
        proc.stdout.close()
        code = proc.wait(timeout=90)
    said = errors.read_text(encoding="utf-8", errors="replace")
    assert first
    assert code == 1, said  # the demo world has failing checks: the gate says 1, whoever reads stdout
    assert "Exception ignored" not in said and "Traceback" not in said and "BrokenPipeError" not in said
    reports = tmp_path / "testsession-reports"
    outcome = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    assert outcome["exitCode"] == 1 and outcome["verdict"] == "failed" and outcome["partial"] is False
    assert (reports / "junit.xml").stat().st_size > 0 and (reports / "summary.md").stat().st_size > 0


def test_a_broken_pipe_that_escapes_a_command_is_no_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """A broken pipe the command did not expect ends it before any verdict: that is never exit 0."""
    import argparse

    from runner.cli.common import run_handler
    from runner.core.exitcodes import ExitCode

    def handler(_args: argparse.Namespace, _ctx: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert run_handler(argparse.Namespace(func=handler)) == ExitCode.INTERRUPTED
    assert "no verdict" in capsys.readouterr().err
