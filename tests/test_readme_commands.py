"""The command blocks of the README and docs/ as a newcomer runs them: read from the page itself, run
in-process against the emulator (standing in for the real service, or the embedded one of
`--emulator`), and expected to do what the text says."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CI_PREFIXES
from doc_blocks import DOCS, README, code_blocks, commands
from helpers import fast_world

from runner.cli.main import main
from runner.emulator import Emulator

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True


def run_line(line: str) -> int:
    argv = shlex.split(line)[1:]
    if argv[0] in ("run", "wait"):
        argv += ["--junit", "out/j.xml", "--markdown", "", "--json", "out/r.json"]
    return main(argv)


def test_the_real_service_block_runs_a_spec_that_exists(cli_env: Emulator, repo_root: Path) -> None:
    (block,) = code_blocks(README, "### Using it against the real service", "sh")
    (line,) = commands(block)
    spec = shlex.split(line)[2]
    assert (repo_root / spec).is_file(), f"README runs {spec}, which is not in the repository"
    # From the repository root, as the README is read; the emulator stands in for the service.
    argv = shlex.split(line)
    argv[2] = str(repo_root / spec)
    assert run_line(shlex.join(argv)) == 0


def test_the_per_operation_examples_use_the_shipped_worlds_ids(
    cli_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = code_blocks(DOCS / "api-commands.md", "## Against the emulator", "sh")
    lines = commands(block)
    assert len(lines) == 3
    assert [run_line(line) for line in lines] == [0, 0, 0]
    # Run again, the delete names the id that is gone (exit 2, as the page says).
    capsys.readouterr()
    assert run_line(lines[2]) == 2
    assert "no client certificate with id cert-3001" in capsys.readouterr().err


# --- blocks that run `testsession run ... --emulator`: the embedded emulator, its world sped up ------


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> Iterator[Path]:
    """A clean working directory as a user's (no CI variables, no credentials), where a command of the
    docs runs from the repository's point of view: `examples/...` resolves."""
    for name in list(os.environ):
        if name.startswith((*CI_PREFIXES, "TESTSESSION_")) or name == "CI":
            monkeypatch.delenv(name, raising=False)
    world = fast_world(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(repo_root / "examples")
    monkeypatch.chdir(work)
    yield world


def run_demo(line: str, world: Path) -> int:
    """A documented `testsession run ... --emulator` line, with the sped-up default world."""
    argv = shlex.split(line)[1:]
    assert argv[0] == "run" and "--emulator" in argv, line
    return main([*argv, "--world", str(world)])


def matches(shown: str, printed: str) -> bool:
    """A line as the docs show it, where `...` or `…` stands for what was left out."""
    pattern = ".*".join(re.escape(part) for part in re.split(r"\.\.\.|…", shown))
    return re.fullmatch(pattern, printed) is not None


def test_the_first_command_runs_the_demo_and_exits_1(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (line,) = [
        c for b in code_blocks(README, "## The two commands", "sh") for c in commands(b, "pip install . && ")
    ]
    assert run_demo(line.removeprefix("pip install . && "), demo) == 1  # "It exits 1"
    out = capsys.readouterr().out
    for report in ("junit.xml", "summary.md", "results.json"):
        assert (Path("testsession-reports") / report).is_file()
    assert "root cause (INFRA ERROR)" in out and "[known since 3 days]" in out and "[new]" in out


def test_the_readme_spec_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = code_blocks(README, "### The target spec", "yaml")
    spec = tmp_path / "spec.yml"
    spec.write_text(block, encoding="utf-8")
    assert main(["validate", str(spec)]) == 0, capsys.readouterr()


def test_fail_on_new_forgives_the_known_failure_as_shown(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    section = "## New or known failures, and a baseline"
    block = code_blocks(DOCS / "reports.md", section, "console")[0]
    (line,) = commands(block)
    assert run_demo(line, demo) == 0
    printed = capsys.readouterr().out.splitlines()
    for shown in [s for s in block.splitlines()[1:] if s.strip() not in ("", "...")]:
        assert any(matches(shown, p) for p in printed), (
            f"docs/reports.md shows {shown!r}; printed:\n" + "\n".join(printed)
        )


def test_the_baseline_example_prints_and_writes_what_is_shown(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = code_blocks(DOCS / "reports.md", "## New or known failures, and a baseline", "console")[1]
    steps = re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]
    assert [s.split()[1] for s in steps] == ["run", "run", "-13"]  # two runs, then `head -13 summary.md`
    for step in steps[:2]:
        line, shown = step.split("\n", 1)
        code = run_demo(line, demo)
        printed = capsys.readouterr().out.splitlines()
        assert code == int(shown.strip().rsplit(" ", 1)[1]), (line, printed)
        assert any(matches(shown.strip(), p) for p in printed), (shown, printed)
    head, shown_summary = steps[2].split("\n", 1)
    summary = Path(head.split()[-1]).read_text(encoding="utf-8").splitlines()[:13]
    assert summary == shown_summary.rstrip("\n").splitlines()
