"""The CI front ends: the console, GitHub Actions (GITHUB_ACTIONS=true) and GitLab CI (GITLAB_CI=true).

Each is an observer of the run's events. The CI one acts on `Finished`: it never raises for I/O
problems: a CI file that cannot be written costs one error line on stderr, never the run's exit code
or its other outputs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

from runner.ci.console import Console
from runner.core.redact import Redactor
from runner.job.events import Event, Finished


class CiPublisher:
    """Hands the digest to the CI system the job runs in: outputs, summaries, annotations."""

    def __init__(
        self,
        environ: Mapping[str, str],
        console: Console,
        redact: Redactor,
        errors: TextIO | None = None,
    ) -> None:
        self.environ = environ
        self.console = console
        self.redact = redact
        self.errors = errors or sys.stderr

    def notify(self, event: Event) -> None:
        if not isinstance(event, Finished):
            return
        if self.environ.get("GITHUB_ACTIONS") == "true":
            from runner.ci import github

            problems = github.publish(event.digest, event.written, self.environ, self.console, self.redact)
        elif self.environ.get("GITLAB_CI") == "true":
            from runner.ci import gitlab

            problems = gitlab.publish(event.digest, event.written, self.environ, self.console, self.redact)
        else:
            return
        for problem in problems:
            print(f"testsession: error: {self.redact(problem)}", file=self.errors)
