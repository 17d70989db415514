"""Temporary git repositories for the metadata tests: an isolated git environment and a runner."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def isolate_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config (no safe.directory = *), a fixed identity, no repo above
    tmp_path, and no CI variables that would fill the metadata before git is asked."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in (
        "GIT_DIR", "GIT_WORK_TREE", "GIT_TEST_ASSUME_DIFFERENT_OWNER", "GITHUB_ACTIONS", "GITLAB_CI", "CI",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Jane Doe")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "jane@example.com")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.strip()
