"""One check run for real: its attempts under the session's retry strategy, each judged like production.

Outcome rules (production: constructs/api-check.mdx, api-checks/configuration.mdx and
response-limits.mdx, url-monitor.mdx, tcp-monitors/configuration.mdx, dns-monitor.mdx):
- Each attempt is cut off at its bound: the check's maxResponseTime, or the check type's maximum run
  time (`max_run_seconds`: declared.DEFAULT_MAX_RUN_SECONDS, or a world's setting) when that is
  shorter. Cut off, or answered slower than maxResponseTime: failed as TIMEOUT. Answered slower than
  degradedResponseTime: passed, degraded.
- The first failing assertion fails the attempt (ASSERTION_FAILURE, `STATUS_CODE EQUALS 200:
  received 503`). An API or URL response with a 4xx or 5xx status fails it too, unless the check
  has shouldFail; a DNS answer other than NOERROR fails it unless an assertion looks at
  RESPONSE_CODE (or shouldFail is set: our reading for DNS, where production's docs are silent).
- shouldFail is production's, not a plain inversion: for API and URL checks a 4xx/5xx response
  passes, "successful responses still pass" and "only failed assertions will cause the check to
  fail"; for TCP checks a failed connection (refused, timed out) passes. So a shouldFail check that
  asserts STATUS_CODE EQUALS 401 passes on 401 and fails on 200, as production's example intends.
- Connection refused, DNS failure, TLS error, reset, empty reply: NETWORK_ERROR, the message naming
  the kind and the address (`connection refused: 127.0.0.1:9`).
- A check that cannot run (unknown variable, invalid definition, a type or script that cannot run
  locally): CONFIGURATION_ERROR, never retried (the next attempt would fail the same way).
- Retries: `retry.next_retry_delay`, the rule the simulation uses too. The waits go through `sleep`
  (default: the stop event's wait), so a cancelled session stops during a wait and during a request.
- A body longer than the read cap (`Limits.body_cap_bytes`: 5 MiB for a local run, job/local.py; the
  world's settings.executor.bodyBytes in the emulator) is cut there. An assertion that reads the body
  (TEXT_BODY, JSON_BODY; TCP's RESPONSE_DATA) cannot be judged on part of it: a NOT_CONTAINS would
  pass on what it never read. So each such assertion fails, saying `body truncated at N bytes` and
  how to raise the cap (ours; production reads 25 MB).
- The regexes of the assertions (assertions.py) share the time left of the attempt's bound, within
  `Limits.regex_min_seconds` and `Limits.regex_max_seconds`.
- Each failed attempt carries its fingerprint (fingerprint.py): what the failure is, its group's key.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.checks.failures import ErrorClass, FailureKind, NotRun
from runner.checks.fingerprint import fingerprint
from runner.checks.judge import judge
from runner.checks.limits import DEFAULT_LIMITS, Limits
from runner.checks.outcome import Attempt, mask
from runner.checks.protocols import protocol_for
from runner.checks.protocols.base import Bounds, Job
from runner.checks.retry import next_retry_delay
from runner.checks.variables import Substitution, VariableSources, variables_from
from runner.models import RetryStrategy
from runner.models.check_definitions import CheckDefinition

if TYPE_CHECKING:
    from runner.checks.scripts import ScriptRunner

AttemptCallback = Callable[[Attempt, bool], None]  # (attempt, final): after each finished attempt
Sleep = Callable[[float], bool]  # waits up to the seconds given; True when the run is to stop


@dataclass(frozen=True)
class CheckRun:
    attempts: tuple[Attempt, ...]
    cancelled: bool = False  # stopped during an attempt or a wait: the last attempt is not final

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    @property
    def passed(self) -> bool:
        return not self.cancelled and self.final.passed

    @property
    def flaky(self) -> bool:
        """Passed after failed attempts."""
        return self.passed and len(self.attempts) > 1


def run_check(
    check: CheckDefinition,
    *,
    max_run_seconds: float | None,
    variables: VariableSources | None = None,
    retry: RetryStrategy | None = None,
    on_attempt: AttemptCallback | None = None,
    stop: threading.Event | None = None,
    sleep: Sleep | None = None,
    limits: Limits = DEFAULT_LIMITS,
    scripts: ScriptRunner | None = None,
) -> CheckRun:
    """Runs `check` until it passes, the retry strategy ends, or `stop` is set.

    `max_run_seconds`: the check type's maximum run time (declared.DEFAULT_MAX_RUN_SECONDS, or a
    world's maxRunSeconds); None (a world's `never`): only the check's maxResponseTime bounds an
    attempt, which every definition has.
    `on_attempt(attempt, final)` is called after each finished attempt, before any wait.
    `scripts`: runs an API check's setup and teardown scripts (scripts.py); None: such a check fails
    closed as not runnable here.
    """
    stop = stop if stop is not None else threading.Event()
    retry = retry if check.retries_apply() else None  # a Playwright suite: Playwright's own retries
    wait: Sleep = sleep if sleep is not None else stop.wait
    subst = _substitution(variables or _NO_VARIABLES, check)
    attempts: list[Attempt] = []
    elapsed = 0.0
    while True:
        attempt = run_attempt(check, number=len(attempts) + 1, subst=subst, max_run_seconds=max_run_seconds,
                              limits=limits, stop=stop, scripts=scripts)  # fmt: skip
        attempts.append(attempt)
        if attempt.cancelled or stop.is_set():
            return CheckRun(tuple(attempts), cancelled=True)
        duration = attempt.duration_ms / 1000
        elapsed += duration
        delay = None
        if not attempt.passed and attempt.error_class is not ErrorClass.CONFIGURATION_ERROR:
            delay = next_retry_delay(
                retry,
                retries_done=len(attempts) - 1,
                network_failure=attempt.network_failure,
                elapsed=elapsed,
                expected_duration=duration,
            )
        if on_attempt is not None:
            on_attempt(attempt, delay is None)
        if delay is None:
            return CheckRun(tuple(attempts))
        if wait(delay) or stop.is_set():
            return CheckRun(tuple(attempts), cancelled=True)
        elapsed += delay


_NO_VARIABLES = VariableSources()


def _substitution(sources: VariableSources, check: CheckDefinition) -> Substitution:
    """The check's variables: the run's (read once for all its checks: sources.substitution), its
    own environmentVariables after theirs, and the built-ins under the run's runtime values."""
    builtins = {"CHECK_NAME": check.name, "CHECK_TYPE": check.checkType}
    if check.id:
        builtins["CHECK_ID"] = check.id
    own = variables_from(check.environmentVariables)  # the definition's environmentVariables
    return sources.substitution.for_check(own, builtins)


def run_attempt(
    check: CheckDefinition,
    *,
    number: int,
    subst: Substitution,
    max_run_seconds: float | None,
    limits: Limits = DEFAULT_LIMITS,
    stop: threading.Event | None = None,
    scripts: ScriptRunner | None = None,
) -> Attempt:
    """One attempt by the check type's protocol, judged, its secrets masked."""
    started_at, start = time.time(), time.monotonic()
    # Whether the type runs here is the definition's to say (CHECK_KINDS, read by local_support):
    # a type it lets through has a protocol, the same table's.
    reason = check.local_support(scripts=scripts is not None)
    protocol = protocol_for(check.checkType) if reason is None else None
    try:
        if reason is not None or protocol is None:
            raise NotRun(FailureKind.NOT_RUNNABLE_LOCALLY, reason or f"{check.checkType} has no protocol")
        check = protocol.fill(check, subst)  # before problems(): a port given as {{VAR}} is a number then
        problems = check.problems()
        if problems:
            raise NotRun(FailureKind.INVALID_DEFINITION, "; ".join(problems))
        # From now: the protocol's work is what the check's bound measures, not the fill before it.
        bounds = _bounds(check, max_run_seconds, time.monotonic())
        seen = protocol.perform(check, Job(subst, bounds, limits, stop, scripts, number))
    except NotRun as exc:
        duration_ms = round((time.monotonic() - start) * 1000, 3)
        attempt = Attempt.not_run(exc.kind, exc.message, number=number, started_at=started_at,
                                  duration_ms=duration_ms)  # fmt: skip
    else:
        verdict = judge(seen, protocol.assertions(check), bounds, limits, subst)
        failure = verdict.failure
        attempt = Attempt(
            number=number,
            started_at=started_at,
            duration_ms=round((time.monotonic() - start) * 1000, 3),
            passed=verdict.passed,
            degraded=verdict.degraded is not None,
            error_class=failure.error_class if failure else None,
            error_kind=failure.kind if failure else None,
            message=failure.message if failure else verdict.degraded,  # a pass's: why it is degraded
            network_failure=failure.network if failure else False,
            response_time_ms=seen.timing.total_ms,
            status_code=seen.status_code,
            response_code=seen.response_code,
            timing=seen.timing,
            body_excerpt=seen.excerpt,
            body_truncated=seen.truncated,
            body_bytes=seen.body_bytes,
            failed_assertion=verdict.failed_assertion,
            assertions=verdict.assertions,
            request=seen.request,
            cancelled=seen.cancelled,
            steps=seen.steps,
            console=seen.console,
            files=seen.files,
            tests=seen.tests,
        )
    if not subst.redact.empty:  # a copy of every string of the attempt: only when there is a secret
        attempt = mask(attempt, subst.redact)
    # Made of the masked attempt: a secret never reaches its group's key or cleaned message.
    key = fingerprint(attempt)
    return attempt if key is None else dataclasses.replace(attempt, fingerprint=key)


def _bounds(check: CheckDefinition, max_run_seconds: float | None, start: float) -> Bounds:
    degraded_ms, max_ms = check.response_limits_ms()
    own, own_text = check.attempt_limit()  # maxResponseTime, or the type's own (ICMP, TRACEROUTE)
    if max_run_seconds is None or own <= max_run_seconds:
        seconds = max(own, 0.001)
        return Bounds(seconds, own_text, degraded_ms, max_ms, start + seconds)
    text = f"the maximum run time of {max_run_seconds:g} s for {check.checkType} checks"
    return Bounds(max_run_seconds, text, degraded_ms, max_ms, start + max_run_seconds)
