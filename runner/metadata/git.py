"""Commit metadata from the local git repository, asked of the git command itself.

Three short git commands at most (the commit, the branch, origin's URL), each bounded by GIT_TIMEOUT;
none at all outside a repository. git finds the repository as it does for the user (from `cwd`
upwards, worktrees, `.git` files, safe.directory), and its answer is read as text: a name, a subject
or a URL can hold anything. (gitpython, used before, cost ~0.1 s of imports and two `git version`
runs before the first question: a tenth of a one-check run.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

Log = Callable[[str], None]

GIT_TIMEOUT = 10.0  # seconds per git command; a hung git must not hold up the run
MAX_OUTPUT = 64 * 1024  # bytes of a git answer that are read: a subject or a URL is far shorter
COMMIT_FIELDS = ("commitId", "commitOwner", "commitMessage")


class _GitFailed(Exception):
    """A git command that ran and refused: its exit code and what it said on stderr."""

    def __init__(self, code: int, stderr: str) -> None:
        super().__init__(stderr)
        self.code = code
        self.stderr = stderr


class _NoRepository(Exception):
    """git answers nothing about this repository (why, for every field asked)."""


def _say(log: Log, fields: Iterable[str], why: str) -> None:
    for name in fields:
        log(f"metadata: {name}: {why}")


def _may_be_in_repository(cwd: str | Path) -> bool:
    """False only when no directory at or above `cwd` can be a repository that git would find
    (no `.git` file or directory, none a bare repository itself): then no git command is needed to
    say so."""
    start = Path(cwd)
    if not start.is_dir():
        return True  # the caller names what is wrong with it
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / ".git").exists() or ((folder / "HEAD").is_file() and (folder / "objects").is_dir()):
            return True
    return False


def _git(executable: str, cwd: str | Path, *args: str) -> str:
    """stdout of `git ARGS` in `cwd`; _GitFailed when it exits non-zero. Never prompts (no terminal,
    GIT_TERMINAL_PROMPT=0), never pages, and the locale is C, so that its messages can be matched."""
    import subprocess  # here: a run outside a repository (or without git) starts no child

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}
    done = subprocess.run(
        [executable, "--no-optional-locks", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    stdout = done.stdout[:MAX_OUTPUT].decode("utf-8", "replace")
    if done.returncode == 0:
        return stdout
    stderr = done.stderr[:MAX_OUTPUT].decode("utf-8", "replace")
    if "dubious ownership" in stderr:
        where = _quoted_path(stderr) or str(cwd)
        raise _NoRepository(
            "git refuses a repository owned by another user (dubious ownership); allow it with "
            f"`git config --global --add safe.directory {where}`"
        )
    if "not a git repository" in stderr.lower():
        raise _NoRepository(f"not in a git repository ({cwd})")
    raise _GitFailed(done.returncode, stderr)


def from_git(cwd: str | Path, fields: list[str], log: Log) -> dict[str, str]:
    """The asked-for fields that the repository at or above `cwd` can give; never raises."""
    try:
        if not Path(cwd).is_dir():
            _say(log, fields, f"directory {cwd} does not exist")
            return {}
        if not _may_be_in_repository(cwd):
            _say(log, fields, f"not in a git repository ({cwd})")
            return {}
    except OSError:
        pass  # an unreadable parent: git decides
    from shutil import which

    executable = which("git")
    if executable is None:
        _say(log, fields, "git is not installed (no git executable on PATH)")
        return {}
    try:
        return _read(executable, cwd, fields, log)
    except _NoRepository as exc:
        _say(log, fields, str(exc))
        return {}
    except Exception as exc:  # a broken .git, a git that hangs: never the run's failure
        _say(log, fields, f"repository not readable ({type(exc).__name__})")
        return {}


def _read(git: str, cwd: str | Path, fields: list[str], log: Log) -> dict[str, str]:
    values: dict[str, str] = {}
    commit_fields = [f for f in fields if f in COMMIT_FIELDS]
    if commit_fields:
        values.update(_commit(git, cwd, commit_fields, log))
    if "branchName" in fields:
        try:
            values["branchName"] = _git(git, cwd, "symbolic-ref", "--quiet", "--short", "HEAD").strip()
        except _GitFailed as exc:
            if exc.code == 1:  # HEAD is no symbolic ref: a commit checked out
                log("metadata: branchName: detached HEAD (set metadata.branchName, or let CI give it)")
            else:
                log(f"metadata: branchName: not readable (git exit {exc.code})")
    if "repoUrl" in fields:
        try:
            values["repoUrl"] = _git(git, cwd, "config", "--get", "remote.origin.url").strip()
        except _GitFailed as exc:
            if exc.code == 1:  # the key is not set
                log("metadata: repoUrl: the repository has no remote named origin")
            else:
                log(f"metadata: repoUrl: origin URL not readable (git exit {exc.code})")
    return {k: v for k, v in values.items() if k in fields and v}


def _commit(git: str, cwd: str | Path, fields: list[str], log: Log) -> dict[str, str]:
    """The commit of HEAD, its author and subject: one git log (%x00: no name or subject holds a
    NUL); when that fails (a partial clone without the object), the id alone."""
    try:
        out = _git(git, cwd, "log", "-1", "--no-show-signature", "--format=%H%x00%an%x00%s", "HEAD", "--")
    except _GitFailed:
        pass
    else:
        sha, _, rest = out.strip("\n").partition("\x00")
        owner, _, subject = rest.partition("\x00")
        return {"commitId": sha.strip(), "commitOwner": owner.strip(), "commitMessage": subject.strip()}
    try:
        sha = _git(git, cwd, "rev-parse", "--verify", "--quiet", "HEAD").strip()
    except _GitFailed:
        _say(log, fields, "no commit yet (HEAD does not name a commit)")
        return {}
    _say(log, [f for f in fields if f != "commitId"], "git log failed")
    return {"commitId": sha}


def _quoted_path(stderr: str) -> str | None:
    """The repository git names in its dubious-ownership message ("... in repository at 'PATH'")."""
    for line in stderr.splitlines():
        start = line.find("'")
        end = line.rfind("'")
        if "repository at" in line and 0 <= start < end:
            return line[start + 1 : end]
    return None
