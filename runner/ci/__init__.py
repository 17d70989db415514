"""The CI front ends: the console, the CI platform's outputs (`platform.py`: GitHub Actions, GitLab CI
or local), the pull-request comment.

Each is an observer of the run's events. The CI one acts on `Finished`: it never raises for I/O
problems: a CI file that cannot be written costs one error line on stderr, never the run's exit code
or its other outputs.
"""

from __future__ import annotations

import sys
from typing import TextIO

from runner.ci.console import Console
from runner.core.redact import Redactor
from runner.job.events import Event, Finished


class CiPublisher:
    """Hands the digest to the CI platform the job runs in (the console's): outputs, summaries,
    annotations."""

    def __init__(self, console: Console, redact: Redactor, errors: TextIO | None = None) -> None:
        self.console = console
        self.redact = redact
        self.errors = errors or sys.stderr

    def notify(self, event: Event) -> None:
        if not isinstance(event, Finished):
            return
        problems = self.console.platform.publish(event.digest, event.written, self.console, self.redact)
        for problem in problems:
            print(f"testsession: error: {self.redact(problem)}", file=self.errors)
