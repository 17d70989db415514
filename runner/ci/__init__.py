"""The CI systems a run reports to: GitHub Actions (GITHUB_ACTIONS=true) and GitLab CI (GITLAB_CI=true).

`publish()` is called after the reports are written. It never raises for I/O problems: a CI file that
cannot be written costs one error line on stderr, never the run's exit code or its other outputs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from runner.ci.console import Console
from runner.core.redact import Redactor
from runner.job.outcome import Outcome

# The last outcome published in this process: the GitHub Action's entry point reads it to know
# whether the outputs were written (a usage error ends the run before anything is published).
published: list[Outcome] = []


def publish(
    outcome: Outcome,
    written: Mapping[str, Path],
    environ: Mapping[str, str],
    console: Console,
    redact: Redactor,
) -> None:
    if environ.get("GITHUB_ACTIONS") == "true":
        from runner.ci import github

        problems = github.publish(outcome, written, environ, console, redact)
    elif environ.get("GITLAB_CI") == "true":
        from runner.ci import gitlab

        problems = gitlab.publish(outcome, written, environ, console, redact)
    else:
        return
    published.append(outcome)
    for problem in problems:
        print(f"testsession: error: {redact(problem)}", file=sys.stderr)
