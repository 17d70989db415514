"""Commit metadata from real temporary git repositories, and every way git can be unavailable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import git, isolate_git
from helpers import child_env

from runner.metadata import resolve_metadata
from runner.models import SessionMetadata

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is needed to build repos")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(tmp_path, monkeypatch)


def make_repo(path: Path, message: str = "Add checkout flow\n\nWith a body.") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "feature/checkout")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", message)
    git(path, "remote", "add", "origin", "https://deploy:t0ken-s3cr3t@git.example.com/acme/shop.git")
    return path


def resolve(cwd: Path, own: SessionMetadata | None = None) -> tuple[SessionMetadata, list[str]]:
    logs: list[str] = []
    return resolve_metadata(own, {}, cwd, logs.append), logs


def test_normal_repository_gives_every_field(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    metadata, logs = resolve(repo / "sub")  # found from a subdirectory too
    assert metadata.commitId == git(repo, "rev-parse", "HEAD")
    assert metadata.branchName == "feature/checkout"
    assert metadata.commitOwner == "Jane Doe"
    assert metadata.commitMessage == "Add checkout flow"
    assert metadata.repoUrl == "https://git.example.com/acme/shop.git"
    assert all("t0ken" not in line for line in logs)


def test_precedence_spec_then_ci_then_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    environ = {"CIRCLECI": "true", "CIRCLE_BRANCH": "from-ci", "CIRCLE_USERNAME": "ci-user"}
    own = SessionMetadata(commitOwner="spec-owner", environment="preview")
    metadata = resolve_metadata(own, environ, repo, lambda _: None)
    assert metadata.commitOwner == "spec-owner"  # spec
    assert metadata.branchName == "from-ci"  # CI over git
    assert metadata.commitMessage == "Add checkout flow"  # git fills what CI lacks
    assert metadata.environment == "preview"


def test_long_commit_message_is_cut_to_its_first_line_and_512_chars(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", message="x" * 700 + "\n\nbody")
    metadata, _ = resolve(repo)
    assert metadata.commitMessage == "x" * 511 + "…"


def test_detached_head_leaves_the_branch_empty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "--detach")
    metadata, logs = resolve(repo)
    assert metadata.branchName is None
    assert metadata.commitId == git(repo, "rev-parse", "HEAD")
    assert any(line.startswith("metadata: branchName: detached HEAD") for line in logs), logs


def test_shallow_clone(tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    (origin / "b.txt").write_text("b\n")
    git(origin, "add", "b.txt")
    git(origin, "commit", "-q", "-m", "Second commit")
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", "shallow")
    shallow = tmp_path / "shallow"
    assert (shallow / ".git" / "shallow").exists()
    metadata, _ = resolve(shallow)
    assert metadata.commitId == git(origin, "rev-parse", "HEAD")
    assert (metadata.branchName, metadata.commitMessage) == ("feature/checkout", "Second commit")
    assert metadata.repoUrl == f"file://{origin}"


def test_no_repository(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    metadata, logs = resolve(empty)
    assert metadata == SessionMetadata()
    assert f"metadata: commitId: not in a git repository ({empty})" in logs
    assert len(logs) == 5


def test_missing_directory(tmp_path: Path) -> None:
    metadata, logs = resolve(tmp_path / "gone")
    assert metadata == SessionMetadata() and logs


def test_repository_without_commits_or_origin(tmp_path: Path) -> None:
    repo = tmp_path / "new"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    metadata, logs = resolve(repo)
    assert metadata.commitId is None and metadata.branchName == "main"
    assert "metadata: commitId: no commit yet (HEAD does not name a commit)" in logs
    assert "metadata: repoUrl: the repository has no remote named origin" in logs


def test_repository_owned_by_another_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    probe = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    if "dubious ownership" not in probe.stderr:
        pytest.skip("this git does not honour GIT_TEST_ASSUME_DIFFERENT_OWNER")
    metadata, logs = resolve(repo)
    assert metadata == SessionMetadata()
    assert any("dubious ownership" in line and "safe.directory" in line for line in logs), logs
    assert {line.split(":")[1].strip() for line in logs} == {
        "commitId", "branchName", "commitOwner", "commitMessage", "repoUrl",
    }  # fmt: skip


def test_git_not_on_path(tmp_path: Path) -> None:
    """In a fresh process with no git on PATH at all."""
    repo = make_repo(tmp_path / "repo")
    nothing = tmp_path / "no-bin"
    nothing.mkdir()
    script = (
        "import json, sys\n"
        "from runner.metadata import resolve_metadata\n"
        "logs = []\n"
        "m = resolve_metadata(None, {}, sys.argv[1], logs.append)\n"
        "print(json.dumps({'metadata': m.model_dump(exclude_none=True), 'logs': logs}))\n"
    )
    drop = ("GIT_PYTHON_REFRESH", "GIT_PYTHON_GIT_EXECUTABLE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PATH=str(nothing))
    done = subprocess.run(
        [sys.executable, "-c", script, str(repo)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["metadata"] == {}
    assert "metadata: commitId: git is not installed (no git executable on PATH)" in result["logs"]


def test_gitpython_is_imported_only_when_git_is_asked() -> None:
    code = (
        "import sys\n"
        "from runner.metadata import resolve_metadata\n"
        "assert 'git' not in sys.modules\n"
        "env = {'GITLAB_CI': 'true', 'CI_COMMIT_SHA': 'a' * 40, 'CI_COMMIT_REF_NAME': 'main',\n"
        "       'CI_COMMIT_AUTHOR': 'J <j@x>', 'CI_COMMIT_TITLE': 't', 'CI_PROJECT_URL': 'https://x'}\n"
        "resolve_metadata(None, env, '.', print)\n"
        "print('git' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False"


def test_a_repository_costs_three_git_commands_and_no_gitpython(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every field from one repository: three short git commands (the commit with its author and
    subject, the branch, origin's URL), no `git version` first, and gitpython (~0.1 s of imports)
    is not loaded."""
    repo = make_repo(tmp_path / "repo")
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "shim"
    shim.mkdir()
    calls = tmp_path / "calls.txt"
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ.get('PATH', '')}")
    metadata, _ = resolve(repo)
    assert len(calls.read_text(encoding="utf-8").splitlines()) == 3
    assert metadata.commitId == git(repo, "rev-parse", "HEAD") and metadata.repoUrl
    assert "git" not in sys.modules
