"""Real check execution: API, URL, TCP and DNS checks in production's shape, run from this machine.

The public API (everything else in this package is its parts):

    run_check(check, *, max_run_seconds, variables=None, retry=None, on_attempt=None,
              stop=None, sleep=None, limits=DEFAULT_LIMITS) -> CheckRun

`check` comes from `runner.models.check_definitions.parse_check_definition`; `variables` is a
`VariableSources` (session, account, check, runtime; `variables_from()` reads models or dicts).
Every `Attempt` is a frozen value with its secrets masked. Decisions are written down in the
docstrings of run.py (outcomes), assertions.py, variables.py, http.py, tcp.py, dns.py and retry.py.
"""

from runner.emulator.core.checks.limits import DEFAULT_LIMITS, Limits
from runner.emulator.core.checks.outcome import (
    ASSERTION_FAILURE,
    CONFIGURATION_ERROR,
    ERROR_CLASSES,
    NETWORK_ERROR,
    TIMEOUT,
    AssertionResult,
    Attempt,
    RequestSummary,
    TimingPhases,
)
from runner.emulator.core.checks.retry import backoff_seconds, next_retry_delay
from runner.emulator.core.checks.run import AttemptCallback, CheckRun, Sleep, run_check
from runner.emulator.core.checks.variables import Variable, VariableSources, variables_from

__all__ = [
    "ASSERTION_FAILURE",
    "CONFIGURATION_ERROR",
    "DEFAULT_LIMITS",
    "ERROR_CLASSES",
    "NETWORK_ERROR",
    "TIMEOUT",
    "AssertionResult",
    "Attempt",
    "AttemptCallback",
    "CheckRun",
    "Limits",
    "RequestSummary",
    "Sleep",
    "TimingPhases",
    "Variable",
    "VariableSources",
    "backoff_seconds",
    "next_retry_delay",
    "run_check",
    "variables_from",
]
