"""The verdict of one attempt from what its protocol observed: the same rules for every check type.

In this order (run.py's docstring says why):
1. stopped: cancelled, not a result;
2. no usable answer (the protocol's failure, or a child's own verdict): failed as it says, unless a
   failed connection is what the check wants (TCP shouldFail);
3. the assertions are evaluated; an answer slower than maxResponseTime fails as TIMEOUT;
4. the first failing assertion fails it (an assertion on a truncated body cannot pass);
5. a failure the answer implies (a 4xx/5xx, a DNS error code) fails it;
6. passed, degraded when slower than degradedResponseTime or when the protocol says so (ICMP loss),
   with the threshold and the measure in `degraded` (a degraded result says why).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

from runner.checks.assertions import evaluate_all
from runner.checks.failures import Failure, FailureKind
from runner.checks.limits import Limits
from runner.checks.outcome import AssertionResult
from runner.checks.protocols.base import Bounds, Observation
from runner.checks.variables import Substitution
from runner.models.check_definitions import Assertion

BODY_SOURCES = frozenset({"TEXT_BODY", "JSON_BODY", "RESPONSE_DATA"})
CANCELLED = Failure(FailureKind.CANCELLED, "cancelled", network=False)


class Verdict(NamedTuple):  # one an attempt: a tuple is cheaper to make than a frozen dataclass
    passed: bool
    degraded: str | None = None  # why it passed degraded: the threshold and what was measured
    failure: Failure | None = None
    failed_assertion: AssertionResult | None = None
    assertions: tuple[AssertionResult, ...] = ()


def judge(
    seen: Observation,
    assertions: Sequence[Assertion],
    bounds: Bounds,
    limits: Limits,
    subst: Substitution,
) -> Verdict:
    if seen.cancelled:
        return Verdict(passed=False, failure=CANCELLED)
    failure = seen.failure
    if failure is not None:
        if seen.connection_failure_passes and failure.kind is not FailureKind.INVALID_DEFINITION:
            return Verdict(passed=True)
        return Verdict(passed=False, failure=failure)
    results = evaluate_all(assertions, seen.values, subst.cut, lambda: bounds.regex_budget(limits))
    unjudged: tuple[AssertionResult, ...] = ()
    if seen.truncated:
        results, unjudged = _cut_body(results, seen)
    elapsed_ms = seen.timing.total_ms
    if elapsed_ms > bounds.max_ms:
        where = (seen.request.remote_address or seen.request.target) if seen.request else ""
        message = (
            f"response time {elapsed_ms:.0f} ms exceeded the maxResponseTime of {bounds.max_ms:g} ms: {where}"
        )
        slow = Failure(FailureKind.MAX_RESPONSE_TIME, message, network=False)
        return Verdict(passed=False, failure=slow, assertions=results)
    failed = next((r for r in results if not r.passed), None)
    if failed is not None:
        kind = FailureKind.BODY_TRUNCATED if any(failed is u for u in unjudged) else FailureKind.ASSERTION
        return Verdict(
            passed=False,
            failure=Failure(kind, failed.describe(), network=False),
            failed_assertion=failed,
            assertions=results,
        )
    if seen.implicit is not None:
        return Verdict(passed=False, failure=seen.implicit, assertions=results)
    degraded = seen.degraded
    if degraded is None and elapsed_ms > bounds.degraded_ms:
        took, limit = f"{elapsed_ms:,.0f} ms", f"{bounds.degraded_ms:,g} ms"
        degraded = f"response time {took} exceeded the degradedResponseTime of {limit}"
    return Verdict(passed=True, degraded=degraded, assertions=results)


def _cut_body(
    results: tuple[AssertionResult, ...], seen: Observation
) -> tuple[tuple[AssertionResult, ...], tuple[AssertionResult, ...]]:
    """The results with each assertion on a truncated body failed, saying so; and those failed ones."""
    tcp = seen.request is not None and seen.request.kind == "TCP"
    what = "data" if tcp else "body"
    production = "" if tcp else "; production reads up to 25 MB"
    detail = (
        f"{what} truncated at {seen.body_bytes} bytes: this assertion cannot be judged on part of the "
        f"{what}; raise settings.executor.bodyBytes in the world (at most 64 MiB{production})"
    )
    unjudged = tuple(
        dataclasses.replace(r, passed=False, actual=None, detail=detail)
        for r in results
        if r.source in BODY_SOURCES
    )
    replaced = iter(unjudged)
    return tuple(next(replaced) if r.source in BODY_SOURCES else r for r in results), unjudged
