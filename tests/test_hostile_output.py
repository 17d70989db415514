"""Text from the service never becomes a workflow command, and a broken console never changes a verdict."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT, default_world_dict

from runner.ci.console import Console
from runner.emulator import Emulator
from runner.job.digest import digest
from runner.job.events import AnalysisReady, NoMatch, ResultFinished, SessionFailed, Triggered, Where
from runner.job.outcome import AnalysisOutcome, ErrorGroupOutcome, ResultOutcome
from runner.models import Analysis

HOSTILE = "boom\n::stop-commands::pwned\r\n::add-mask::x\u2028::error::fake\x85section_start:1:x\x1b[2J"
OUR_COMMANDS = ("::group::", "::endgroup::", "::error ", "::notice ", "::add-mask::")


def our_lines_only(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("::"):
            assert line.startswith(OUR_COMMANDS), line
            # Service text only after our command's own delimiters: GitHub reads the rest as data.
        assert not line.startswith(("section_start", "section_end"))
    assert "\x1b[2J" not in text and "::stop-commands::pwned" not in [
        line.strip() for line in text.splitlines()
    ]


def test_every_service_text_on_the_console_stays_inside_its_line() -> None:
    stream = io.StringIO()
    console = Console(stream=stream, environ={"GITHUB_ACTIONS": "true", "NO_COLOR": "1"})
    where = Where(HOSTILE, HOSTILE)
    result = ResultOutcome(
        id="r1",
        link=HOSTILE,
        name=HOSTILE,
        checkType=HOSTILE,
        runLocation=HOSTILE,
        status="FAILED",
        verdict="failed",
        error=HOSTILE,
        errorGroupIds=["g1"],
    )
    analysis = Analysis(classification=HOSTILE, rootCause=HOSTILE, userImpact=HOSTILE)
    group = ErrorGroupOutcome(id=HOSTILE, analysis=AnalysisOutcome(state="completed", analysis=analysis))
    for event in (
        Triggered(where, HOSTILE, HOSTILE),
        NoMatch(where, HOSTILE),
        ResultFinished(where, result),
        SessionFailed(where, HOSTILE),
        AnalysisReady(where, (HOSTILE,), group),
    ):
        console.notify(event)
    our_lines_only(stream.getvalue())


HOSTILE_WORLD: dict[str, Any] = default_world_dict()
HOSTILE_WORLD["accounts"][0]["checks"].append(
    {
        "id": "5a1e0000-0000-4000-8000-0000000000aa",
        "name": "Injected\n::stop-commands::pwned",
        "checkType": "API",
        "tags": ["hostile"],
        "behaviour": "fail",
        "durationSeconds": 1,
        "errorMessage": HOSTILE,
    }
)


def run_env(emu: Emulator, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TESTSESSION_", "GITHUB_", "GITLAB_"))}
    env.update(
        TESTSESSION_API_KEY=emu.api_key,
        TESTSESSION_ACCOUNT_ID=emu.account_id,
        TESTSESSION_BASE_URL=emu.url,
        PYTHONPATH=str(REPO_ROOT),
        NO_COLOR="1",
        **extra,
    )
    return env


def test_a_hostile_check_in_a_github_log(tmp_path: Path) -> None:
    with Emulator(world=HOSTILE_WORLD, speed=25) as emu:
        env = run_env(emu, GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(tmp_path / "out.txt"))
        proc = subprocess.run(
            [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", "--tag", "hostile"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1, proc.stderr
    our_lines_only(proc.stdout)
    assert "Injected ::stop-commands::pwned" in proc.stdout  # shown, as text, inside our own line


def test_stdout_closed_early_never_changes_the_verdict(tmp_path: Path) -> None:
    """`testsession run ... | head -c 1`: the failing run still exits 1 with complete reports."""
    with Emulator(world=HOSTILE_WORLD, speed=25) as emu:
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", "--tag", "hostile"],
            env=run_env(emu),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.read(1)
        proc.stdout.close()
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    data = json.loads((tmp_path / "testsession-reports" / "results.json").read_text())
    assert data["verdict"] == "failed" and data["exitCode"] == 1 and data["partial"] is False
    assert (tmp_path / "testsession-reports" / "junit.xml").stat().st_size > 0


def test_the_digest_keeps_hostile_text_raw_for_each_renderer_to_clean() -> None:
    # The digest is shared by every output; sanitising is the renderer's job, for its own output.
    from outcome_factory import outcome, result, session

    d = digest(outcome([session([result("failed", error=HOSTILE)])]))
    assert d.failing[0].result.error == HOSTILE
