"""One verdict policy for a check, wherever its result comes from.

A service's rows (job/verdicts.py, SessionResult) and the engine's final attempt (job/local.py, an
Attempt of a checks file's run) each say the same facts in their own shape; both reach the verdict
through job/policy.py `verdict_of`. Here each fact is written in both shapes by hand, and both paths
must give the verdict of the table: a divergence of either mapping fails it.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import pytest

from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import Attempt
from runner.job import local
from runner.job.outcome import ResultVerdict
from runner.job.policy import CheckFacts, Failure, Ran, verdict_of
from runner.job.verdicts import CheckRows, check_verdict
from runner.models import SessionResult


class Facts(NamedTuple):
    """A check's facts as a person says them."""

    ran: str  # passed, failed, cancelled, unfinished
    failure: str = "none"  # none, assertion, error
    degraded: bool = False
    retried: bool = False  # an earlier attempt failed
    ended_by_us: bool = False  # the run cancelled it (deadline, signal)


# The policy, as a table: the facts and the verdict every output must read.
TABLE: list[tuple[Facts, ResultVerdict]] = [
    (Facts("passed"), "passed"),
    (Facts("passed", retried=True), "flaky"),
    (Facts("passed", degraded=True), "degraded"),
    (Facts("passed", degraded=True, retried=True), "degraded"),
    (Facts("failed", "assertion"), "failed"),
    (Facts("failed", "assertion", retried=True), "failed"),
    (Facts("failed", "assertion", degraded=True), "failed"),
    (Facts("failed", "error"), "error"),
    (Facts("failed", "error", retried=True), "error"),
    (Facts("cancelled", ended_by_us=True), "running"),  # the run's deadline or a signal ended it
    (Facts("cancelled", retried=True, ended_by_us=True), "running"),
    (Facts("unfinished"), "running"),
    (Facts("unfinished", retried=True), "running"),
    (Facts("unfinished", ended_by_us=True), "running"),
]
# Facts only a service's row can say (the engine never cancels a check but for the run, never passes
# one with a failure, always says a failure's class).
SERVICE_ONLY: list[tuple[Facts, ResultVerdict]] = [
    (Facts("cancelled"), "cancelled"),  # someone cancelled it in the service's UI
    (Facts("passed", "assertion"), "error"),  # PASSED with hasFailures: the answer contradicts itself
    (Facts("passed", "error"), "error"),
    (Facts("failed"), "failed"),  # FAILED, and nothing more said
    (Facts("not understood"), "error"),
]


def service_rows(facts: Facts) -> CheckRows:
    """The facts as a service's FINAL row (and a failed ATTEMPT row when retried)."""
    status = {"passed": "PASSED", "failed": "FAILED", "cancelled": "CANCELLED", "unfinished": "RUNNING"}
    row = SessionResult(
        testSessionResultId="r-1",
        status=status.get(facts.ran, "SKIPPED"),  # a status this version does not know
        resultType="PENDING" if facts.ran == "unfinished" else "FINAL",
        hasFailures=facts.failure == "assertion",
        hasErrors=facts.failure == "error",
        isDegraded=facts.degraded,
        checkId="c-1",
        name="Checkout API",
    )
    tries = []
    if facts.retried:
        tries.append(
            SessionResult(
                testSessionResultId="r-0",
                status="FAILED",
                resultType="ATTEMPT",
                hasFailures=True,
                checkId="c-1",
                name="Checkout API",
            )
        )
    return CheckRows(row, tries)


def final_attempt(facts: Facts) -> Attempt | None:
    """The facts as the engine's final attempt of a checks file's run (None: none ended yet)."""
    if facts.ran == "unfinished":
        return None
    kind = {"assertion": FailureKind.ASSERTION, "error": FailureKind.CONNECTION_REFUSED}.get(facts.failure)
    return Attempt(
        number=2 if facts.retried else 1,
        started_at=0.0,
        duration_ms=5.0,
        passed=facts.ran == "passed",
        degraded=facts.degraded,
        error_class=kind.error_class if kind else None,
        error_kind=kind,
        cancelled=facts.ran == "cancelled",
    )


def test_the_test_attempts_say_the_classes_the_table_means() -> None:
    assert FailureKind.ASSERTION.error_class is ErrorClass.ASSERTION_FAILURE
    assert FailureKind.CONNECTION_REFUSED.error_class.is_error


@pytest.mark.parametrize(("facts", "verdict"), TABLE, ids=[str(tuple(f)) for f, _ in TABLE])
def test_the_service_and_the_engine_reach_the_same_verdict(facts: Facts, verdict: ResultVerdict) -> None:
    said = {
        "service": check_verdict(service_rows(facts), ended_by_us=facts.ended_by_us),
        "engine": local._verdict(final_attempt(facts), retried=facts.retried),
    }
    assert said == {"service": verdict, "engine": verdict}


@pytest.mark.parametrize(("facts", "verdict"), SERVICE_ONLY, ids=[str(tuple(f)) for f, _ in SERVICE_ONLY])
def test_what_only_the_service_can_say(facts: Facts, verdict: ResultVerdict) -> None:
    assert check_verdict(service_rows(facts), ended_by_us=facts.ended_by_us) == verdict


def test_a_result_of_an_unknown_type_is_never_a_pass() -> None:
    row = SessionResult(testSessionResultId="r", status="PASSED", resultType="SOMETHING_NEW")
    assert check_verdict(CheckRows(row, [])) == "error"


RAN = {"passed": Ran.PASSED, "failed": Ran.FAILED, "cancelled": Ran.CANCELLED, "unfinished": Ran.UNFINISHED}
FAILURE = {"none": Failure.NONE, "assertion": Failure.ASSERTION, "error": Failure.ERROR}


@pytest.mark.parametrize(
    "facts",
    [
        Facts(ran, failure, degraded, retried, ended)
        for ran, failure, degraded, retried, ended in itertools.product(
            RAN, FAILURE, (False, True), (False, True), (False, True)
        )
    ],
)
def test_each_shape_says_its_facts_to_the_one_policy(facts: Facts) -> None:
    """Every combination each shape can say reaches the policy's verdict of those facts: neither
    mapping decides anything of its own."""
    expected = verdict_of(
        CheckFacts(RAN[facts.ran], FAILURE[facts.failure], facts.degraded, facts.retried, facts.ended_by_us)
    )
    assert check_verdict(service_rows(facts), ended_by_us=facts.ended_by_us) == expected
    # What the engine can say: a cancel is the run's own, a failure has a class, a pass none.
    engine_can = (
        (facts.ran != "cancelled" or facts.ended_by_us)
        and (facts.ran != "failed" or facts.failure != "none")
        and (facts.ran != "passed" or facts.failure == "none")
        and (facts.ran in ("passed", "failed") or facts.failure == "none")
    )
    if engine_can:
        assert local._verdict(final_attempt(facts), retried=facts.retried) == expected


def test_only_a_clean_passed_row_of_a_known_type_passes() -> None:
    """Every row shape a service can send (known and unknown statuses and types, each flag true,
    false or left out, retried or not, the run's cancel or another's): a passing verdict only for
    status PASSED of a known type with no failure, error or abort flag. Checked against ef60b9b's
    mapping too (every shape of 3-valued flags, no difference) when the policy moved to verdict_of."""
    statuses = ["PASSED", "FAILED", "CANCELLED", "RUNNING", "passed", "ERROR", "", " PASSED"]
    types = [None, "FINAL", "ATTEMPT", "PENDING", "final", "NEW"]
    flags = (False, True)  # a null flag is not a SessionResult (the read fails, never a pass)
    failed_try = SessionResult(testSessionResultId="a", status="FAILED", resultType="ATTEMPT")
    for status, kind, failures, errors, aborted, degraded, retried, ours in itertools.product(
        statuses, types, flags, flags, flags, flags, (False, True), (False, True)
    ):
        row = SessionResult(
            testSessionResultId="r", status=status, resultType=kind, hasFailures=failures,
            hasErrors=errors, aborted=aborted, isDegraded=degraded,
        )  # fmt: skip
        verdict = check_verdict(CheckRows(row, [failed_try] if retried else []), ended_by_us=ours)
        flagged = failures or errors or aborted
        clean = status == "PASSED" and kind in (None, "FINAL", "ATTEMPT") and not flagged
        assert (verdict in ("passed", "flaky", "degraded")) == clean, (row, retried, ours, verdict)
