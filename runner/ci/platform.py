"""The CI platform a run is in, chosen once from the environment: GitHub Actions, GitLab CI, or local
(a terminal, or a CI system without a front end of its own).

One object owns everything that differs between them (pip-audit's style: an abstract base and one
class per platform): the log's collapsible sections, secret masking, what a finished run publishes
(GitHub: step outputs, step summary, annotations; GitLab: a dotenv file), and where the sticky
pull-request comment goes. Which one it is comes from `core/ciprovider.detect`, the tool's only
detection; nothing else reads GITHUB_ACTIONS or GITLAB_CI.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from runner.core import ciprovider
from runner.core.redact import Redactor

if TYPE_CHECKING:
    from runner.ci.comment_destination import Destination
    from runner.ci.common import Log
    from runner.job.digest import Digest


class CiPlatform(ABC):
    """What a run does differently in one CI platform. Built by `platform_for`."""

    name: ClassVar[str]  # as messages name it

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def section_start(self, name: str, title: str, collapsed: bool) -> str:
        """The line that opens a collapsible section of the log (plain: the title)."""
        return title

    def section_end(self, name: str) -> str | None:
        """The line that closes it, or None when nothing closes it."""
        return None

    def mask_commands(self, values: Iterable[str]) -> list[str]:
        """Lines that make the log hide these values from then on (none where the log cannot)."""
        return []

    @abstractmethod
    def publish(self, digest: Digest, written: Mapping[str, Path], log: Log, redact: Redactor) -> list[str]:
        """Hands the finished run to the platform; one error line per part that could not be written."""

    @abstractmethod
    def comment_destination(self, gitlab_token_variable: str) -> tuple[Destination, str]:
        """Where the sticky comment goes and the token that writes it; CommentError saying why not."""


class GitHubActions(CiPlatform):
    name = "GitHub"

    def section_start(self, name: str, title: str, collapsed: bool) -> str:
        return f"::group::{title}"  # GitHub shows every group collapsed

    def section_end(self, name: str) -> str | None:
        return "::endgroup::"

    def mask_commands(self, values: Iterable[str]) -> list[str]:
        return [f"::add-mask::{part}" for value in values for part in value.splitlines() if part.strip()]

    def publish(self, digest: Digest, written: Mapping[str, Path], log: Log, redact: Redactor) -> list[str]:
        from runner.ci.github import publish

        return publish(digest, written, self.environ, log, redact)

    def comment_destination(self, gitlab_token_variable: str) -> tuple[Destination, str]:
        from runner.ci.comment_destination import github_destination

        return github_destination(self.environ)


class GitLabCi(CiPlatform):
    name = "GitLab"

    def section_start(self, name: str, title: str, collapsed: bool) -> str:
        flag = "true" if collapsed else "false"
        return f"\033[0Ksection_start:{int(time.time())}:{name}[collapsed={flag}]\r\033[0K{title}"

    def section_end(self, name: str) -> str | None:
        return f"\033[0Ksection_end:{int(time.time())}:{name}\r\033[0K"

    def publish(self, digest: Digest, written: Mapping[str, Path], log: Log, redact: Redactor) -> list[str]:
        from runner.ci.gitlab import publish

        return publish(digest, written, self.environ, log, redact)

    def comment_destination(self, gitlab_token_variable: str) -> tuple[Destination, str]:
        from runner.ci.comment_destination import gitlab_destination

        return gitlab_destination(self.environ, gitlab_token_variable)


class Local(CiPlatform):
    name = "local"

    def publish(self, digest: Digest, written: Mapping[str, Path], log: Log, redact: Redactor) -> list[str]:
        return []  # the reports and the console are all there is

    def comment_destination(self, gitlab_token_variable: str) -> tuple[Destination, str]:
        from runner.ci.comment_destination import CommentError

        raise CommentError("not posted: not running in GitHub Actions or GitLab CI")


_PLATFORMS: dict[str | None, type[CiPlatform]] = {
    ciprovider.GITHUB: GitHubActions,
    ciprovider.GITLAB: GitLabCi,
}


def platform_for(environ: Mapping[str, str]) -> CiPlatform:
    """The platform of this environment; every other CI system (and none) is Local."""
    return _PLATFORMS.get(ciprovider.detect(environ), Local)(environ)
