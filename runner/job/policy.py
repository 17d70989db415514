"""The verdict policy: the one place that decides which results fail the gate and the run's exit code.

Every output reads it: the exit code, the console's verdict line, the markdown headline and counts,
the JUnit (a result that fails the gate is a failure or an error there, never a skip), results.json,
the GitHub and GitLab outputs, and the exit-code text of `--help`. Pure functions, no I/O.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Literal, NamedTuple

from runner.checks.failures import assert_never
from runner.core.exitcodes import ExitCode, most_severe
from runner.core.words import counted, first_of, plural

if TYPE_CHECKING:  # types only: `testsession --help` reads the gate text without loading pydantic
    from runner.job.outcome import Outcome, ResultOutcome, ResultVerdict, RunVerdict

FailOn = Literal["any", "new"]
JunitKind = Literal["passed", "failure", "error", "skipped"]

# Verdicts that fail the gate whatever the options: the check failed, could not run to a verdict,
# did not finish before the run ended, or was cancelled (from outside: nobody saw it pass).
ALWAYS_FAILING: frozenset[ResultVerdict] = frozenset({"failed", "error", "running", "cancelled"})

_FAILING_WITH_DEGRADED: frozenset[str] = ALWAYS_FAILING | {"degraded"}
# Verdicts nobody saw the end of. They fail the gate; in a baseline they never make a failure now
# known (`failOn: new` forgives only what was seen failing before).
UNFINISHED: frozenset[ResultVerdict] = frozenset({"running", "cancelled"})

# What each verdict is called where people read it.
LABELS: dict[str, str] = {
    "passed": "passed",
    "failed": "failed",
    "degraded": "degraded",
    "flaky": "flaky",
    "error": "error",
    "cancelled": "cancelled",
    "running": "did not finish",
}


# --- a check's verdict ---------------------------------------------------------------------------
#
# One rule for every check, wherever its result comes from: job/verdicts.py maps a service's rows
# (SessionResult) to CheckFacts, job/local.py the engine's final Attempt; both call `verdict_of`,
# and every output reads the verdict it gives. tests/test_verdict_one_policy.py holds both paths to
# one table.


class Ran(Enum):
    """What a check's final result says of its run."""

    PASSED = "passed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNFINISHED = "unfinished"  # still running, or retrying: no final result yet
    NOT_UNDERSTOOD = "not understood"  # a status or kind of result this version does not know


class Failure(Enum):
    """What the result says went wrong: the service's hasFailures, hasErrors and aborted, the engine's
    error class (an assertion's failure, or an error: the check could not be judged)."""

    NONE = "none"
    ASSERTION = "assertion"  # an assertion failed (hasFailures)
    ERROR = "error"  # no assertion could be judged: a network error, a timeout, a script (hasErrors, aborted)


class CheckFacts(NamedTuple):
    """What decides a check's verdict, in the words of neither source (a tuple: made per result)."""

    ran: Ran
    failure: Failure = Failure.NONE
    degraded: bool = False  # passed, but over a degraded threshold
    retried: bool = False  # an earlier attempt did not pass
    ended_by_us: bool = False  # this run cancelled it (deadline, signal): it did not finish in time


def verdict_of(facts: CheckFacts) -> ResultVerdict:
    """The verdict of one check. A gate fails closed: a result not understood, or a pass that also
    says something failed (the answer contradicts itself), is an error, never a pass."""
    match facts.ran:
        case Ran.PASSED:
            if facts.failure is not Failure.NONE:
                return "error"
            if facts.degraded:
                return "degraded"
            return "flaky" if facts.retried else "passed"
        case Ran.FAILED:
            match facts.failure:
                case Failure.ERROR:
                    return "error"
                case Failure.ASSERTION | Failure.NONE:  # NONE: the service said FAILED, and no more
                    return "failed"
                case other:
                    assert_never(other)
        case Ran.CANCELLED:
            # Cancelled by this run: it did not finish before the run ended; else by someone else.
            return "running" if facts.ended_by_us else "cancelled"
        case Ran.UNFINISHED:
            return "running"
        case Ran.NOT_UNDERSTOOD:
            return "error"
        case other_ran:
            assert_never(other_ran)


# The run's verdict for each exit code (results.json `verdict`, GitHub `status`, GitLab dotenv).
RUN_VERDICTS: dict[ExitCode, RunVerdict] = {
    ExitCode.OK: "passed",
    ExitCode.CHECKS_FAILED: "failed",
    ExitCode.USAGE: "usage-error",
    ExitCode.TIMEOUT: "timeout",
    ExitCode.SERVICE: "service-error",
    ExitCode.NO_MATCH: "no-match",
    ExitCode.BUILD_NOT_STARTED: "build-not-started",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "interrupted",
}

# Exit codes after which the reports show only what was known when the run ended.
PARTIAL_CODES = frozenset({ExitCode.TIMEOUT, ExitCode.SERVICE, ExitCode.INTERRUPTED, ExitCode.TERMINATED})


class Gate(NamedTuple):
    """The gate options of a run (spec `gate`, flags), as results.json records them (a value made
    on every run's start-up path: a NamedTuple, not a dataclass, is cheap to create)."""

    fail_on_degraded: bool = False
    fail_on_no_match: bool = True
    fail_on: FailOn = "any"

    @classmethod
    def of(cls, outcome: Outcome) -> Gate:
        return cls(fail_on_degraded=outcome.failOnDegraded, fail_on=outcome.failOn)


# Known or new (see runner/job/known.py): "untold" when no history says either.
Novelty = Literal["new", "known", "untold"]


def novelty(result: ResultOutcome) -> Novelty:
    """Whether a failure was there before this build, decided here once for the gate and every output.

    Two histories answer it: the result's error group (`known`: first seen before this run or in
    it) and the baseline (`baseline`: failing there too, or newly failing). A gate fails closed, so
    a failure is known only when one of them says known and neither says new: an error first seen in
    this run is new even on a check that failed in the baseline (with another error), and a check
    that passed in the baseline is newly failing even with an error seen before. With neither, it
    cannot be told: never forgiven, counted as new."""
    if result.known is False or result.baseline == "newly-failing":
        return "new"
    if result.known is True or result.baseline == "still-failing":
        return "known"
    return "untold"


def is_known(result: ResultOutcome) -> bool:
    """A failure that was there before this build (see `novelty`)."""
    return novelty(result) == "known"


def forgiven(result: ResultOutcome, gate: Gate) -> bool:
    """With `failOn: new`, a failed check whose failure is known does not fail the gate. Errors,
    unfinished and cancelled checks are never forgiven: nobody knows what they would have shown."""
    return gate.fail_on == "new" and result.verdict == "failed" and is_known(result)


def failing_verdicts(fail_on_degraded: bool) -> frozenset[str]:
    """The verdicts that fail a gate that forgives nothing (failOn: any)."""
    return _FAILING_WITH_DEGRADED if fail_on_degraded else ALWAYS_FAILING


def failing_verdict(result: ResultOutcome, fail_on_degraded: bool) -> bool:
    """The result's verdict fails a gate that forgives nothing (failOn: any): what known/new and the
    baseline compare."""
    return result.verdict in failing_verdicts(fail_on_degraded)


def quarantined(result: ResultOutcome, gate: Gate) -> bool:
    """A result whose verdict fails the gate but whose check is quarantined (an entry that holds
    today, runner/job/quarantine.py): it ran as always, and does not fail the gate whatever it shows.
    An expired entry never marks a result, so its check gates again."""
    return result.quarantined is not None and failing_verdict(result, gate.fail_on_degraded)


def result_fails(result: ResultOutcome, gate: Gate) -> bool:
    return (
        failing_verdict(result, gate.fail_on_degraded)
        and not forgiven(result, gate)
        and result.quarantined is None
    )


def junit_kind(result: ResultOutcome, gate: Gate) -> JunitKind:
    """How a JUnit reader must count the result, so that it agrees with the gate: a forgiven or
    quarantined failure is skipped (with its message), never a pass nor a failure."""
    if not result_fails(result, gate):
        return "skipped" if forgiven(result, gate) or quarantined(result, gate) else "passed"
    return "failure" if result.verdict in ("failed", "degraded") else "error"


def checks_exit_code(results: list[ResultOutcome], gate: Gate) -> ExitCode:
    return ExitCode.CHECKS_FAILED if any(result_fails(r, gate) for r in results) else ExitCode.OK


def no_match_exit_code(gate: Gate) -> ExitCode:
    """Only for a no-match: the service's own signals (the trigger's 403 ERR_NO_MATCHING_CHECKS, or a
    session that PASSED with no results), or a target that selects no check of a checks file (a
    local run). Every other refusal is an error, never this."""
    return ExitCode.NO_MATCH if gate.fail_on_no_match else ExitCode.OK


# A gate fails closed: a session that judged no check, and that the service did not call a no-match
# (and that was not only triggered, --detach), never passes. Nobody saw anything pass.
NOTHING_JUDGED_CODE = ExitCode.SERVICE
NOTHING_JUDGED = "the session ended without any check result and the service did not say no check matched"


# Only `results: []`, said, is a session's no-match; a final answer without the field said nothing.
NO_RESULTS_FIELD = (
    "the service's final answer has no results field: which checks ran, and how, was never said"
)


def unexplained_end(
    status: str, results: list[ResultOutcome], *, vanished: int, changed: int = 0
) -> str | None:
    """Why a session that ended on its own (not by this run) cannot pass on the results it gave, or
    None. A final answer that does not add up is an answer not understood (NOTHING_JUDGED_CODE):
    results seen while it ran that are missing now, a FAILED session none of whose results failed,
    a session cancelled on the service whose unfinished checks have no result, a FINAL result whose
    status changed. A failing result
    explains a FAILED or cancelled session: it fails the gate by itself."""
    if vanished:
        return (
            f"{counted(vanished, 'check result')} seen while the session ran {plural(vanished, 'is')} "
            "missing from its final answer: the answer is incomplete, and what is missing was never judged"
        )
    if changed:
        return (
            f"{counted(changed, 'check result')} seen final while the session ran changed status in its "
            "final answer: a final result does not change, so the answer is not understood"
        )
    if any(failing_verdict(r, fail_on_degraded=True) for r in results):
        return None
    if status == "FAILED":
        return (
            "the service says the session FAILED but none of its results shows a failure: "
            "the answer is incomplete or not understood"
        )
    if status == "CANCELLED":
        return (
            "the session was cancelled on the service before it finished, not by this run: "
            "the checks without a result were never judged"
        )
    return None


def shared_session(session_ids: list[str | None], names: list[str]) -> dict[int, str]:
    """Sessions of one run that got a test session an earlier one of the run already has, with the
    problem to report: two triggers make two sessions, so the later one's checks never ran (a proxy
    that cached the trigger's answer, a confused service). Never a pass: NOTHING_JUDGED_CODE."""
    first: dict[str, int] = {}
    shared: dict[int, str] = {}
    for index, session_id in enumerate(session_ids):
        if session_id is None:
            continue
        if session_id in first:
            shared[index] = (
                f"the trigger answered with test session {session_id}, which {names[first[session_id]]} "
                "of this run got too: the checks of this session never ran"
            )
        else:
            first[session_id] = index
    return shared


# A check the target named by id that has no result was never judged: the user must act (the id is
# wrong, the check deleted or deactivated), and the session never passes.
UNRUN_NAMED_CODE = ExitCode.USAGE


def unrun_named_checks(named: list[str], results: list[ResultOutcome]) -> str | None:
    """The problem when check ids named in target.checkId (without tags, which may leave a named
    check out by design) have no result in the session, else None."""
    ran = {r.checkId for r in results if r.checkId}
    missing = list(dict.fromkeys(c for c in named if c not in ran))
    if not missing:
        return None
    return (
        f"{plural(len(missing), 'check')} {first_of(missing, 5)} named in target.checkId never ran in this "
        "session: no such check in this account, or deactivated (target.allowDeactivated); nothing about "
        "it was judged"
    )


def session_exit_code(
    code: ExitCode,
    results: list[ResultOutcome],
    gate: Gate,
    *,
    no_match: bool,
    problem: bool,
    detached: bool,
) -> ExitCode:
    """A session's code as the run counts it: from its checks when it ran to the end, its own code
    when it did not (a problem, a no-match), and never OK for an answer nothing was judged from."""
    if no_match:
        return code
    if not results and not detached and code == ExitCode.OK:
        return NOTHING_JUDGED_CODE
    if code in (ExitCode.OK, ExitCode.CHECKS_FAILED) and not problem:
        return checks_exit_code(results, gate)
    return code


def run_exit_code(session_codes: list[ExitCode], stop_code: ExitCode | None) -> ExitCode:
    """A signal decides the code; else the most severe code of the sessions."""
    return stop_code if stop_code is not None else most_severe(session_codes)


def run_verdict(code: ExitCode, *, detached: bool, all_no_match: bool) -> RunVerdict:
    if detached and code == ExitCode.OK:
        return "detached"
    if code == ExitCode.OK and all_no_match:
        return "no-match"
    return RUN_VERDICTS[code]


def is_partial(code: ExitCode) -> bool:
    return code in PARTIAL_CODES


def describe_gate() -> str:
    """The gate rule in words, for `--help` and the README: derived from the policy above."""
    always = [LABELS[v] for v in ("failed", "error", "cancelled", "running") if v in ALWAYS_FAILING]
    return (
        f"a check that {', '.join(always[:-1])} or {always[-1]} fails the gate; a degraded one only "
        "with gate.failOnDegraded; with gate.failOn: new, a failed check whose failure is known "
        "(its error seen before this run, or failing in the baseline, and neither says new) does not; "
        "nor does a check quarantined (quarantine:, with an owner and an end date) until its end date"
    )
