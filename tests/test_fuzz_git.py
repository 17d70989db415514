"""Odd git states never fail a run: resolve_metadata never raises, credentials in a remote URL never
appear in the metadata, the service's stored session or a report, and `testsession run` in such a
directory ends with the checks' own exit code."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gitrepo import git, isolate_git
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli.main import main
from runner.metadata import resolve_metadata

PASSWORD = "Cr3dLEAK9x"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is needed to build repos")


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(tmp_path, monkeypatch)


def commit(repo: Path, message: str = "change", name: str = "a.txt") -> None:
    (repo / name).write_text(message[:50] + "\n", encoding="utf-8")
    git(repo, "add", name)
    message_file = repo.parent / f"{repo.name}.message"  # -F: a 100 kB message is too long for argv
    message_file.write_text(message, encoding="utf-8")
    git(repo, "commit", "-q", "--allow-empty-message", "--cleanup=verbatim", "-F", str(message_file))


def init(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    return path


# --- the states ---------------------------------------------------------------------------------------


def no_repo(path: Path) -> None:
    path.mkdir()


def empty_repo(path: Path) -> None:
    init(path)
    git(path, "remote", "add", "origin", f"https://ci:{PASSWORD}@git.example.com/acme/shop.git")


def detached(path: Path) -> None:
    init(path)
    commit(path, "one")
    commit(path, "two", "b.txt")
    git(path, "checkout", "-q", "--detach", "HEAD~1")


def shallow(path: Path, tmp: Path) -> None:
    source = init(tmp / "source")
    for n in range(3):
        commit(source, f"commit {n}", f"f{n}.txt")
    git(tmp, "clone", "-q", "--depth", "1", source.as_uri(), str(path))
    git(path, "remote", "set-url", "origin", f"https://oauth2:{PASSWORD}@gitlab.example.com/x.git")


def corrupt_git_file(path: Path) -> None:
    path.mkdir()
    (path / ".git").write_bytes(b"\x00\xffgarbage: not a gitdir line\n" * 10)


def corrupt_git_dir(path: Path) -> None:
    init(path)
    commit(path, "one")
    (path / ".git" / "HEAD").write_text("ref: refs/heads/\x00broken\n")
    (path / ".git" / "config").write_text(
        '[core\n\tbroken = = =\n[remote "origin"]\n\turl = https://u:' + PASSWORD
    )


def gitdir_points_nowhere(path: Path) -> None:
    path.mkdir()
    (path / ".git").write_text("gitdir: /nonexistent/worktree/.git\n")


def credentials_in_remote(path: Path) -> None:
    init(path)
    commit(path, "with a remote")
    git(path, "remote", "add", "origin", f"https://deploy:{PASSWORD}@git.example.com/acme/shop.git")


def credentials_in_unparsable_remote(path: Path) -> None:
    init(path)
    commit(path, "with a broken remote")
    git(path, "remote", "add", "origin", f"https://deploy:{PASSWORD}@[git.example.com/acme/shop.git")


def token_only_remote(path: Path) -> None:
    init(path)
    commit(path, "token as user")
    git(path, "remote", "add", "origin", f"ssh://{PASSWORD}@git.example.com:2222/acme/shop.git")


def unicode_branch(path: Path) -> None:
    init(path, "fëature/ünïcode-😀-分支")
    commit(path, "unicode branch")


def long_message(path: Path) -> None:
    init(path)
    commit(path, "Ä" * 100_000 + "\n\nbody " * 1000)


def control_characters(path: Path) -> None:
    init(path, "weird-\u00a0-nbsp")
    commit(path, "\x1b[31mred\x1b[0m \x07 bell \u202e rtl")


STATES: dict[str, Callable[..., None]] = {
    "no_repo": no_repo,
    "empty_repo": empty_repo,
    "detached": detached,
    "shallow": shallow,
    "corrupt_git_file": corrupt_git_file,
    "corrupt_git_dir": corrupt_git_dir,
    "gitdir_points_nowhere": gitdir_points_nowhere,
    "credentials_in_remote": credentials_in_remote,
    "credentials_in_unparsable_remote": credentials_in_unparsable_remote,
    "token_only_remote": token_only_remote,
    "unicode_branch": unicode_branch,
    "long_message": long_message,
    "control_characters": control_characters,
}


def build(state: str, tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    builder = STATES[state]
    if state == "shallow":
        builder(path, tmp_path)
    else:
        builder(path)
    return path


def resolve(cwd: Path) -> tuple[Any, list[str]]:
    logs: list[str] = []
    return resolve_metadata(None, {}, cwd, logs.append), logs


@pytest.mark.parametrize("state", list(STATES))
def test_resolve_metadata_never_raises_or_leaks(state: str, tmp_path: Path) -> None:
    repo = build(state, tmp_path)
    metadata, logs = resolve(repo)
    text = metadata.model_dump_json() + "\n".join(logs)
    assert PASSWORD not in text
    assert len(metadata.commitMessage or "") <= 512
    for value in (metadata.branchName, metadata.commitOwner, metadata.repoUrl, metadata.commitId):
        assert value is None or ("\n" not in value and "\t" not in value)
    if state in ("credentials_in_remote", "shallow", "token_only_remote"):
        assert metadata.repoUrl and metadata.repoUrl.endswith((".git", "shop.git"))
    if state == "unicode_branch":
        assert metadata.branchName == "fëature/ünïcode-😀-分支"
    if state == "detached":
        assert metadata.branchName is None and metadata.commitId
    if state == "long_message":
        assert metadata.commitMessage and metadata.commitMessage.startswith("ÄÄÄ")
    if state in ("no_repo", "corrupt_git_file", "gitdir_points_nowhere"):
        assert metadata.commitId is None and logs


@pytest.mark.parametrize(
    "state", ["corrupt_git_file", "detached", "credentials_in_remote", "credentials_in_unparsable_remote",
              "unicode_branch", "long_message"],
)  # fmt: skip
def test_run_in_an_odd_repository_succeeds_without_credentials(
    state: str, tmp_path: Path, emulator: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    repo = build(state, tmp_path)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("TESTSESSION_API_KEY", emulator.api_key)
    argv = [
        "run", "--location", "eu-west-1", "--tag", "smoke", "--verbose",
        "--base-url", emulator.url, "--account-id", emulator.account_id,
        "--json", "out/results.json", "--junit", "out/junit.xml", "--markdown", "out/summary.md",
    ]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert PASSWORD not in out + err
    for report in (repo / "out").iterdir():
        assert PASSWORD not in report.read_text(encoding="utf-8")
    (session,) = emulator.backend.snapshot().sessions.values()
    assert PASSWORD not in json.dumps(session.metadata)
    results = json.loads((repo / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["verdict"] == "passed"


branch_names = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zs"], exclude_characters="~^:?*[\\ @{}."),
    min_size=1,
    max_size=40,
)
messages = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=2000)


@settings(
    max_examples=examples(8),  # each makes a repository with git: ~10 processes
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(branch=branch_names, message=messages, user=st.text(min_size=1, max_size=20))
def test_any_branch_message_and_remote_user(
    tmp_path_factory: Any, branch: str, message: str, user: str
) -> None:
    repo = tmp_path_factory.mktemp("fuzz") / "repo"
    try:
        init(repo, branch)
    except subprocess.CalledProcessError:
        return  # a name git itself refuses
    commit(repo, message)
    quoted = "".join(ch if ch.isalnum() else "_" for ch in user)
    git(repo, "remote", "add", "origin", f"https://{quoted}:{PASSWORD}@git.example.com/x.git")
    metadata, logs = resolve(repo)
    assert PASSWORD not in metadata.model_dump_json() + "\n".join(logs)
    assert metadata.repoUrl == "https://git.example.com/x.git"
    assert metadata.commitId and len(metadata.commitMessage or "") <= 512
