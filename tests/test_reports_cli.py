"""`testsession report RESULTS.json`: re-renders the reports; bad input is one line and exit 2."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env
from outcome_factory import sample_outcome

from runner.cli import report_command
from runner.cli.common import run_handler
from runner.reports import render_json, render_junit, render_markdown

REPO_ROOT = Path(__file__).resolve().parent.parent


def report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="testsession")
    report_command.register(parser.add_subparsers())
    return run_handler(parser.parse_args(["report", *argv]))


def test_default_paths_beside_the_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = sample_outcome()
    results = tmp_path / "out" / "results.json"
    results.parent.mkdir()
    results.write_text(render_json(original), encoding="utf-8")
    assert report([str(results)]) == 0
    junit = results.parent / "junit.xml"
    summary = results.parent / "summary.md"
    assert junit.read_text(encoding="utf-8") == render_junit(original)
    assert summary.read_text(encoding="utf-8") == render_markdown(original)
    assert capsys.readouterr().out.splitlines() == [f"wrote {junit}", f"wrote {summary}"]


def test_explicit_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = sample_outcome(fail_on_degraded=True)
    results = tmp_path / "results.json"
    results.write_text(render_json(original), encoding="utf-8")
    junit = tmp_path / "reports" / "x.xml"
    summary = tmp_path / "md" / "s.md"
    assert report([str(results), "--junit", str(junit), "--markdown", str(summary)]) == 0
    assert junit.read_text(encoding="utf-8") == render_junit(original)
    assert summary.read_text(encoding="utf-8") == render_markdown(original)
    assert not (tmp_path / "junit.xml").exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (b"{broken", "not valid JSON"),
        (b'{"schemaVersion": 1, "sessions": "x"}', "not a testsession results file: sessions"),
        (b'{"schemaVersion": 99}', "schemaVersion 99 was written by a newer testsession"),
        (b"\xff\xfe{}", "not UTF-8 text"),
    ],
)
def test_bad_results_file_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, expected: str
) -> None:
    results = tmp_path / "results.json"
    if content is not None:
        results.write_bytes(content)
    assert report([str(results)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"testsession: error: {results}:")  # FILE: or FILE:LINE:
    assert expected in lines[0]
    assert not (tmp_path / "junit.xml").exists()


def test_real_command_line(tmp_path: Path) -> None:
    """Through `python -m runner` as a user runs it: success, then a broken file."""
    env = child_env()
    results = tmp_path / "results.json"
    results.write_text(render_json(sample_outcome()), encoding="utf-8")
    ok = subprocess.run(
        [sys.executable, "-m", "runner", "report", str(results)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "junit.xml").exists() and (tmp_path / "summary.md").exists()
    results.write_text('{"schemaVersion": 1, "exitCode": "x"}', encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "runner", "report", str(results)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert "exitCode" in bad.stderr


def test_module_imports_stay_light() -> None:
    code = (
        "import sys, runner.cli.report_command; "
        "heavy = ('pydantic', 'runner.reports', 'xml.etree.ElementTree'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert out.stdout.strip() == "[]", out.stderr
