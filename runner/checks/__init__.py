"""The check engine: API, URL, TCP, DNS, ICMP and TRACEROUTE checks in production's shape, run here.

The public API (everything else in this package is its parts):

    run_check(check, *, max_run_seconds, variables=None, retry=None, on_attempt=None,
              stop=None, sleep=None, limits=DEFAULT_LIMITS) -> CheckRun

`check` comes from `runner.models.check_definitions.parse_check_definition`; `variables` is a
`VariableSources` (session, account, check, runtime; `variables_from()` reads models or dicts).
Every `Attempt` is a frozen value with its secrets masked; why one failed is typed (failures.py:
`ErrorClass`, `FailureKind`). One protocol per check type (protocols/base.py: the contract and how
to add one; protocols/__init__.py: the registry). Decisions are written down in the docstrings of
run.py (outcomes), judge.py, assertions.py, variables.py, http.py, tcp.py, dns.py and retry.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.core.lazy import lazy_names

if TYPE_CHECKING:
    from runner.checks.failures import ErrorClass, Failure, FailureKind
    from runner.checks.limits import DEFAULT_LIMITS, Limits
    from runner.checks.outcome import AssertionResult, Attempt, RequestSummary, TimingPhases
    from runner.checks.retry import backoff_seconds, next_retry_delay
    from runner.checks.run import AttemptCallback, CheckRun, Sleep, run_check
    from runner.checks.variables import Variable, VariableSources, variables_from

# Lazy, so that the simulation's `import ...checks.retry` does not load libcurl, dnspython and JSONPath.
_HOME = {
    "DEFAULT_LIMITS": "limits",
    "Limits": "limits",
    "ErrorClass": "failures",
    "Failure": "failures",
    "FailureKind": "failures",
    "AssertionResult": "outcome",
    "Attempt": "outcome",
    "RequestSummary": "outcome",
    "TimingPhases": "outcome",
    "backoff_seconds": "retry",
    "next_retry_delay": "retry",
    "AttemptCallback": "run",
    "CheckRun": "run",
    "Sleep": "run",
    "run_check": "run",
    "Variable": "variables",
    "VariableSources": "variables",
    "variables_from": "variables",
}


__getattr__ = lazy_names(__name__, _HOME)


__all__ = [
    "DEFAULT_LIMITS",
    "AssertionResult",
    "Attempt",
    "AttemptCallback",
    "CheckRun",
    "ErrorClass",
    "Failure",
    "FailureKind",
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
