"""README command blocks as a newcomer runs them: read from the README itself, run in-process against
the emulator (standing in for the real service), and expected to do what the text says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from runner.cli.main import main
from runner.emulator import Emulator

README = Path(__file__).resolve().parent.parent / "README.md"


def block_after(heading: str, index: int = 0) -> list[str]:
    """The `testsession ...` lines of the index-th ```sh block after `heading` (comments dropped)."""
    text = README.read_text(encoding="utf-8")
    rest = text[text.index(heading) :]
    blocks = re.findall(r"```sh\n(.*?)```", rest, re.DOTALL)
    lines = [line.split("  #")[0].strip() for line in blocks[index].splitlines()]
    return [line for line in lines if line.startswith("testsession ")]


def run_line(line: str) -> int:
    argv = shlex.split(line)[1:]
    if argv[0] in ("run", "wait"):
        argv += ["--junit", "out/j.xml", "--markdown", "", "--json", "out/r.json"]
    return main(argv)


def test_the_real_service_block_runs_a_spec_that_exists(cli_env: Emulator, repo_root: Path) -> None:
    (line,) = block_after("## Using it against the real service")
    spec = shlex.split(line)[2]
    assert (repo_root / spec).is_file(), f"README runs {spec}, which is not in the repository"
    # From the repository root, as the README is read; the emulator stands in for the service.
    argv = shlex.split(line)
    argv[2] = str(repo_root / spec)
    assert run_line(shlex.join(argv)) == 0


def test_the_per_operation_examples_use_the_shipped_worlds_ids(
    cli_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = block_after("## One command per API operation", index=1)
    assert len(lines) == 3
    assert [run_line(line) for line in lines] == [0, 0, 0]
    # Run again, the delete names the id that is gone (exit 2, as the README says).
    capsys.readouterr()
    assert run_line(lines[2]) == 2
    assert "no client certificate with id cert-3001" in capsys.readouterr().err
