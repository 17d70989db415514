"""The verdict policy: which results fail the run.

A placeholder holding only `result_fails`, so that the baseline comparison (runner/job/baseline.py)
and the known/new classification (runner/job/known.py) already ask one function. The lead replaces
this module with the whole policy (failOn: any|new, exit codes) and keeps this function's meaning.
"""

from __future__ import annotations

from runner.job.outcome import ResultOutcome

_FAILING = frozenset({"failed", "error", "cancelled", "running"})


def result_fails(result: ResultOutcome, fail_on_degraded: bool) -> bool:
    """True for a failed, errored, cancelled or unfinished check, and a degraded one when asked."""
    return result.verdict in _FAILING or (fail_on_degraded and result.verdict == "degraded")
