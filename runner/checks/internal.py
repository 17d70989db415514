"""A bug of the executor as a check's attempt: one shape for every caller of the engine (the local
run, job/local.py; the emulator's real checks, emulator/core/realruns.py)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from runner.checks.failures import FailureKind
from runner.checks.outcome import Attempt, mask
from runner.checks.variables import VariableSources, variables_from

if TYPE_CHECKING:
    from runner.models.check_definitions import CheckDefinition

MAX_TRACEBACK = 16_000  # characters of an internal error's traceback kept (its end: where it failed)


def internal_error(
    exc: BaseException, variables: VariableSources | None = None, check: CheckDefinition | None = None
) -> Attempt:
    """A bug of the executor as the check's attempt: INTERNAL_ERROR, with its traceback. Not the
    user's configuration: the run ends with exit 4 and prints the traceback (job/session.py
    `with_internal_errors`). Masked with the check's secrets, as every attempt: the run's and the
    check's own environmentVariables (a message can hold the URL they filled)."""
    import traceback

    message = (
        f"internal error of the local executor: {type(exc).__name__}: {str(exc)[:300]} "
        "(a bug in testsession, not in the check or the build)"
    )
    text = "".join(traceback.format_exception(exc)).rstrip()[-MAX_TRACEBACK:]
    attempt = dataclasses.replace(Attempt.not_run(FailureKind.INTERNAL_ERROR, message), traceback=text)
    sources = variables if variables is not None else VariableSources()
    own = variables_from(check.environmentVariables) if check is not None else []
    redact = sources.substitution.for_check(own, {}).redact
    return attempt if redact.empty else mask(attempt, redact)
