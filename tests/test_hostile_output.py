"""Text from the service never becomes a workflow command, and a broken console never changes a verdict."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import default_world_dict
from helpers import child_env

from runner.ci.console import Console
from runner.emulator import Emulator
from runner.job.digest import digest
from runner.job.events import AnalysisReady, NoMatch, ResultFinished, SessionFailed, Triggered, Where
from runner.job.outcome import AnalysisOutcome, ErrorGroupOutcome, ResultOutcome
from runner.models import Analysis

HOSTILE = "boom\n::stop-commands::pwned\r\n::add-mask::x\u2028::error::fake\x85section_start:1:x\x1b[2J"
OUR_COMMANDS = ("::group::", "::endgroup::", "::error ", "::notice ")


def our_lines_only(text: str, masked: tuple[str, ...] = ()) -> None:
    """Every workflow command in `text` is one of ours: service text only after our command's own
    delimiters (GitHub reads the rest as data), and `::add-mask::` only for the run's own secrets
    (an injected one would hide any text the service chooses from the log)."""
    for line in text.splitlines():
        if line.startswith("::add-mask::"):
            assert line.removeprefix("::add-mask::") in masked, line
        elif line.startswith("::"):
            assert line.startswith(OUR_COMMANDS), line
        assert not line.startswith(("section_start", "section_end"))
    assert "\x1b[2J" not in text


def test_the_line_check_catches_what_it_is_for() -> None:
    for injected in ("::add-mask::x", "::stop-commands::pwned", "section_start:1:x", "\x1b[2J"):
        with pytest.raises(AssertionError):
            our_lines_only(f"ok\n{injected}\n")
    our_lines_only("::add-mask::tsk_key_123\n::group::title\n", masked=("tsk_key_123",))


def test_every_service_text_on_the_console_stays_inside_its_line() -> None:
    stream = io.StringIO()
    console = Console(stream=stream, environ={"GITHUB_ACTIONS": "true"})
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
        before = len(stream.getvalue())
        console.notify(event)
        said = stream.getvalue()[before:]
        # Each event is one line of ours that shows the service's text, flattened into it: a console
        # that printed nothing (or dropped the text) would pass the line check below without this.
        assert said.count("\n") == 1 and said.endswith("\n"), (event, said)
        assert "boom ::stop-commands::pwned" in said, (event, said)
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


def test_a_hostile_check_in_a_github_log(tmp_path: Path) -> None:
    with Emulator(world=HOSTILE_WORLD, speed=25) as emu:
        env = child_env(
            TESTSESSION_API_KEY=emu.api_key,
            TESTSESSION_ACCOUNT_ID=emu.account_id,
            TESTSESSION_BASE_URL=emu.url,
            GITHUB_ACTIONS="true",
            GITHUB_OUTPUT=str(tmp_path / "out.txt"),
        )
        proc = subprocess.run(
            [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", "--tag", "hostile"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1, proc.stderr
    our_lines_only(proc.stdout, masked=(emu.api_key,))
    assert "Injected ::stop-commands::pwned" in proc.stdout  # shown, as text, inside our own line


def test_the_verdict_summary_of_a_hostile_failure_stays_inside_its_lines() -> None:
    """The digest carries the service's text raw; the console's end of run (the failure's details
    in a ::group::, the verdict) cleans it for a GitHub log."""
    from outcome_factory import outcome, result, session

    stream = io.StringIO()
    console = Console(stream=stream, environ={"GITHUB_ACTIONS": "true"})
    console.finish(digest(outcome([session([result("failed", name=HOSTILE, error=HOSTILE)])])), {})
    shown = stream.getvalue()
    our_lines_only(shown)
    lines = shown.splitlines()
    (title,) = [line for line in lines if line.startswith("::group::")]
    (error,) = [line for line in lines if line.startswith("  error: ")]
    for line in (title, error):  # shown, as text, inside our own line
        assert "boom" in line and "::stop-commands::pwned" in line and "::add-mask::x" in line
