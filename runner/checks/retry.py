"""The retry rule of a session's retryStrategy, one place for the simulation and the real executor.

Production's rules (constructs/retry-strategy.mdx, communicate/alerts/retries.mdx, the CLI's
RetryStrategy type):
- the wait before retry n: FIXED and SINGLE_RETRY `base`; LINEAR `base * n`; EXPONENTIAL `base ** n`
  (5 s gives 5, 25, 125 s: production's formula, not the usual doubling);
- at most `maxRetries` retries (SINGLE_RETRY: one);
- no retry whose planned end would fall beyond `maxDurationSeconds` after the first attempt started
  ("include the time your check needs to run"): the next run is expected to take as long as the last;
- `onlyOn: [NETWORK_ERROR]` retries only a failure that got no answer at all ("no response status
  code was received": refused, reset, DNS, TLS, a timeout before the answer); never an HTTP status,
  a failed assertion or anything else.
"""

from __future__ import annotations

import math

from runner.checks.failures import ErrorClass
from runner.models import RetryStrategy


def backoff_seconds(strategy: RetryStrategy, retry_number: int) -> float:
    """The wait before retry `retry_number` (1 for the first retry)."""
    base = float(strategy.baseBackoffSeconds)
    if strategy.type == "LINEAR":
        return base * retry_number
    if strategy.type == "EXPONENTIAL":
        try:
            return base**retry_number
        except OverflowError:  # a huge base: a wait no maxDurationSeconds allows
            return math.inf
    return base


def next_retry_delay(
    strategy: RetryStrategy | None,
    *,
    retries_done: int,
    network_failure: bool,
    elapsed: float,
    expected_duration: float,
) -> float | None:
    """Seconds to wait before the next attempt of a failed one, or None: no more attempts.

    `elapsed`: seconds from the first attempt's start to the end of the failed one;
    `expected_duration`: how long the next attempt is expected to run (the failed one's duration).
    """
    if strategy is None:
        return None
    if strategy.onlyOn and ErrorClass.NETWORK_ERROR in strategy.onlyOn and not network_failure:
        return None
    if retries_done >= (1 if strategy.type == "SINGLE_RETRY" else strategy.maxRetries):
        return None
    delay = backoff_seconds(strategy, retries_done + 1)
    if elapsed + delay + expected_duration > strategy.maxDurationSeconds:
        return None
    return delay
