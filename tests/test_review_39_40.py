"""A second, adversarial read of what issues 39 and 40 changed: each defect found, as a user or an
attacker meets it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from helpers import run_here

ROOT = Path(__file__).resolve().parent.parent


def _bare_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


def test_every_place_that_names_the_exit_code_of_a_build_that_did_not_start_says_6(tmp_path: Path) -> None:
    """A build that never answers is exit 6 (BUILD_NOT_STARTED) now; --help's --build-timeout, the
    Action's exit-code output and docs/spec.md's "Never answers" still said 4 (or left 6 out)."""
    raw = run_here(["run", "--help"], _bare_env(), tmp_path).stdout
    help_text = " ".join(raw.split())
    found = re.search(r"--build-timeout SECONDS (.*?) --build-reuse", help_text)
    assert found and "exit 6" in found.group(1) and "exit 4" not in found.group(1), help_text
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    exit_output = re.search(r"^  exit-code:\n    description: (.*)$", action, re.MULTILINE)
    assert exit_output and "6 build not started" in exit_output.group(1), exit_output
    spec = " ".join((ROOT / "docs" / "spec.md").read_text(encoding="utf-8").split())
    never = re.search(r"\*\*Never answers:\*\*(.*?)\*\*Stopping:\*\*", spec)
    assert never and "exit 6" in never.group(1) and "exit 4" not in never.group(1), never
