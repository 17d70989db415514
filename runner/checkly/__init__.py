"""A Checkly project (`checkly.config.ts` and its check files) as a source of checks.

    load_project(path, variables) -> ProjectChecks   # path: the config file or its folder

The project's own `checkly` package synthesizes it (synth.py); its check resources become
production-shaped definitions with the group settings applied and stable ids (convert.py).
docs/checkly-project.md holds the rules.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from runner.checkly.convert import ProjectChecks, check_id, convert
from runner.checkly.synth import CONFIG_NAMES, find_config, synthesize
from runner.core.errors import UsageError

__all__ = ["CONFIG_NAMES", "ProjectChecks", "check_id", "find_config", "is_project", "load_project"]


def is_project(path: str | Path) -> bool:
    """`path` names a Checkly project: a checkly.config.* file, or a folder holding one."""
    return find_config(path) is not None


def load_project(
    path: str | Path,
    variables: Mapping[str, str],
    *,
    environ: Mapping[str, str] | None = None,
    hidden: tuple[str, ...] = (),
    stop: threading.Event | None = None,
) -> ProjectChecks:
    """The project's checks; UsageError (exit 2) with one line per problem when it cannot be used.
    `environ`: the job's environment, which the parse sees (synth.parse_environment); `hidden`: names
    of it withheld besides testsession's credentials and the CI's tokens."""
    config = find_config(path)
    if config is None:
        names = ", ".join(CONFIG_NAMES)
        raise UsageError(f"--checks {path}: not a Checkly project (expected one of {names}, or its folder)")
    project = convert(synthesize(config, variables, environ=environ, hidden=hidden, stop=stop))
    if project.problems:
        raise UsageError("\n".join(project.problems))
    return project
