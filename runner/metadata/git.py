"""Commit metadata from the local git repository, via gitpython (imported only when needed: it is slow)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from git import Repo

Log = Callable[[str], None]

GIT_TIMEOUT = 10.0  # seconds per git command; a hung git must not hold up the run


def _say(log: Log, fields: Iterable[str], why: str) -> None:
    for name in fields:
        log(f"metadata: {name}: {why}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _may_be_in_repository(cwd: str | Path) -> bool:
    """False only when no directory at or above `cwd` can be a repository that gitpython would open
    (no `.git` file or directory, none a bare repository itself): then gitpython, ~0.1 s of imports
    and a `git --version` run, is not needed to say so."""
    start = Path(cwd)
    if not start.is_dir():
        return True  # gitpython names what is wrong with it
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / ".git").exists() or ((folder / "HEAD").is_file() and (folder / "objects").is_dir()):
            return True
    return False


def from_git(cwd: str | Path, fields: list[str], log: Log) -> dict[str, str]:
    """The asked-for fields that the repository at or above `cwd` can give; never raises."""
    try:
        if not _may_be_in_repository(cwd):
            _say(log, fields, f"not in a git repository ({cwd})")
            return {}
    except OSError:
        pass  # an unreadable parent: gitpython decides
    # Without a git binary, gitpython refuses to import unless told to stay quiet about it.
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    try:
        import git
    except ImportError as exc:
        _say(log, fields, f"gitpython unavailable ({_first_line(str(exc)) or type(exc).__name__})")
        return {}
    try:
        repo = git.Repo(cwd, search_parent_directories=True)
    except git.NoSuchPathError:
        _say(log, fields, f"directory {cwd} does not exist")
        return {}
    except git.InvalidGitRepositoryError:
        _say(log, fields, f"not in a git repository ({cwd})")
        return {}
    except Exception as exc:  # a broken .git must not fail the run
        _say(log, fields, f"repository not readable ({type(exc).__name__})")
        return {}
    with repo:
        return _read(repo, fields, log)


def _read(repo: Repo, fields: list[str], log: Log) -> dict[str, str]:
    import git as gitmodule

    values: dict[str, str] = {}
    commit_fields = [f for f in fields if f in ("commitId", "commitOwner", "commitMessage")]
    sha = ""
    try:
        sha = repo.git.rev_parse("--verify", "HEAD", kill_after_timeout=GIT_TIMEOUT).strip()
    except gitmodule.GitCommandNotFound:
        _say(log, fields, "git is not installed (no git executable on PATH)")
        return {}
    except gitmodule.GitCommandError as exc:
        stderr = str(exc.stderr or "")
        if "dubious ownership" in stderr:
            where = repo.working_tree_dir or repo.git_dir
            _say(
                log,
                fields,
                "git refuses a repository owned by another user (dubious ownership); allow it with "
                f"`git config --global --add safe.directory {where}`",
            )
            return {}
        _say(log, commit_fields, "no commit yet (HEAD does not name a commit)")
    except Exception as exc:
        _say(log, commit_fields, f"git rev-parse HEAD failed ({type(exc).__name__})")
    if sha:
        values["commitId"] = sha
        if "commitOwner" in fields or "commitMessage" in fields:
            values.update(_author_and_subject(repo, sha, log))
    if "branchName" in fields:
        try:
            if repo.head.is_detached:
                log("metadata: branchName: detached HEAD (set metadata.branchName, or let CI give it)")
            else:
                values["branchName"] = repo.active_branch.name
        except Exception as exc:
            log(f"metadata: branchName: not readable ({type(exc).__name__})")
    if "repoUrl" in fields:
        try:
            names = [remote.name for remote in repo.remotes]
            if "origin" in names:
                values["repoUrl"] = repo.remote("origin").url
            else:
                log("metadata: repoUrl: the repository has no remote named origin")
        except Exception as exc:
            log(f"metadata: repoUrl: origin URL not readable ({type(exc).__name__})")
    return {k: v for k, v in values.items() if k in fields and v}


def _author_and_subject(repo: Repo, sha: str, log: Log) -> dict[str, str]:
    try:
        out = repo.git.log("-1", "--format=%an%x00%s", sha, kill_after_timeout=GIT_TIMEOUT)
    except Exception as exc:  # a shallow or partial clone may lack the object
        _say(log, ("commitOwner", "commitMessage"), f"git log failed ({type(exc).__name__})")
        return {}
    owner, _, subject = str(out).partition("\x00")
    return {"commitOwner": owner.strip(), "commitMessage": subject.strip()}
