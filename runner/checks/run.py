"""One check run for real: its attempts under the session's retry strategy, each judged like production.

Outcome rules (production: constructs/api-check.mdx, api-checks/configuration.mdx and
response-limits.mdx, url-monitor.mdx, tcp-monitors/configuration.mdx, dns-monitor.mdx):
- Each attempt is cut off at its bound: the check's maxResponseTime, or the check type's maximum run
  time (a world setting) when that is shorter. Cut off, or answered slower than maxResponseTime:
  failed as TIMEOUT. Answered slower than degradedResponseTime: passed, degraded.
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
- A body longer than the read cap (`Limits.body_cap_bytes`, the world's settings.executor.bodyBytes)
  is cut there. An assertion that reads the body (TEXT_BODY, JSON_BODY; TCP's RESPONSE_DATA) cannot be
  judged on part of it: a NOT_CONTAINS would pass on what it never read. So each such assertion fails,
  saying `body truncated at N bytes` and how to raise the cap (ours; production reads 25 MB).
- The regexes of the assertions (assertions.py) share the time left of the attempt's bound, within
  `Limits.regex_min_seconds` and `Limits.regex_max_seconds`.
- Each failed attempt carries its fingerprint (fingerprint.py): what the failure is, its group's key.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import runner.checks.protocols.dns as dns
import runner.checks.protocols.http as http
import runner.checks.protocols.socket_fields as socket_fields
import runner.checks.protocols.tcp as tcp
from runner.checks.assertions import RegexBudget, evaluate_all, parse_json_body
from runner.checks.fingerprint import fingerprint
from runner.checks.limits import DEFAULT_LIMITS, Limits
from runner.checks.outcome import (
    ASSERTION_FAILURE,
    CONFIGURATION_ERROR,
    TIMEOUT,
    AssertionResult,
    Attempt,
    Cut,
    Failure,
    RequestSummary,
    TimingPhases,
    mask,
    plain_cut,
)
from runner.checks.retry import next_retry_delay
from runner.checks.script_hooks import Teardown, has_scripts, run_setup, teardown_for
from runner.checks.scripts import ScriptRunner
from runner.checks.variables import Substitution, VariableError, VariableSources, variables_from
from runner.models import RetryStrategy
from runner.models.check_definitions import (
    ApiCheckDefinition,
    CheckDefinition,
    DnsCheckDefinition,
    TcpCheckDefinition,
    UrlCheckDefinition,
)

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

    `max_run_seconds`: the check type's maximum run time (the world's maxRunSeconds); None (a world's
    `never`): only the check's maxResponseTime bounds an attempt, which every definition has.
    `on_attempt(attempt, final)` is called after each finished attempt, before any wait.
    `scripts`: runs an API check's setup and teardown scripts (scripts.py); None: such a check fails
    closed as not runnable here.
    """
    stop = stop if stop is not None else threading.Event()
    wait: Sleep = sleep if sleep is not None else stop.wait
    subst = Substitution(_with_runtime(variables or VariableSources(), check))
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
        if not attempt.passed and attempt.error_class != CONFIGURATION_ERROR:
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


def _with_runtime(sources: VariableSources, check: CheckDefinition) -> VariableSources:
    builtins = {"CHECK_NAME": check.name, "CHECK_TYPE": check.checkType}
    if check.id:
        builtins["CHECK_ID"] = check.id
    own = tuple(variables_from(check.environmentVariables))  # the definition's environmentVariables
    return VariableSources(
        session=sources.session, account=sources.account, check=sources.check + own,
        runtime={**builtins, **sources.runtime},
    )  # fmt: skip


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
    """One attempt, its secrets masked."""
    started_at, start = time.time(), time.monotonic()
    fields = _execute(check, subst, max_run_seconds, limits, stop, start, scripts)
    duration_ms = round((time.monotonic() - start) * 1000, 3)
    attempt = mask(
        Attempt(number=number, started_at=started_at, duration_ms=duration_ms, **fields), subst.redact
    )
    # Made of the masked attempt: a secret never reaches its group's key or cleaned message.
    return dataclasses.replace(attempt, fingerprint=fingerprint(attempt))


# --- one attempt --------------------------------------------------------------------------------------


@dataclass
class _Bounds:
    seconds: float
    text: str  # which bound, for a timeout's message
    degraded_ms: float
    max_ms: float
    deadline: float = 0.0  # monotonic: the attempt's start + seconds

    def regex_budget(self, limits: Limits) -> RegexBudget:
        """What the assertions' regexes may take: the time left, within the limits' floor and cap."""
        left = self.deadline - time.monotonic()
        return RegexBudget.start(min(limits.regex_max_seconds, max(limits.regex_min_seconds, left)))


def _bounds(check: CheckDefinition, max_run_seconds: float | None, start: float) -> _Bounds:
    degraded_ms, max_ms = check.response_limits_ms()
    if max_run_seconds is None or max_ms / 1000 <= max_run_seconds:
        seconds = max(max_ms / 1000, 0.001)
        return _Bounds(seconds, f"the maxResponseTime of {max_ms:g} ms", degraded_ms, max_ms, start + seconds)
    text = f"the maximum run time of {max_run_seconds:g} s for {check.checkType} checks"
    return _Bounds(max_run_seconds, text, degraded_ms, max_ms, start + max_run_seconds)


def _not_run(kind: str, message: str, request: RequestSummary | None = None) -> dict[str, Any]:
    return {"passed": False, "error_class": CONFIGURATION_ERROR, "error_kind": kind, "message": message,
            "request": request}  # fmt: skip


def _execute(
    check: CheckDefinition,
    subst: Substitution,
    max_run: float | None,
    limits: Limits,
    stop: threading.Event | None,
    start: float,
    scripts: ScriptRunner | None = None,
) -> dict[str, Any]:
    reason = check.local_support(scripts=scripts is not None)
    if reason:
        return _not_run("not_runnable_locally", reason)
    if isinstance(check, (TcpCheckDefinition, DnsCheckDefinition)):
        try:  # before problems(): a port given as {{VAR}} is checked once it is a number
            check = socket_fields.rendered(check, subst)
        except VariableError as exc:
            return _not_run(exc.kind, exc.message)
    problems = check.problems()
    if problems:
        return _not_run("invalid_definition", "; ".join(problems))
    bounds = _bounds(check, max_run, start)
    try:
        if isinstance(check, ApiCheckDefinition) and scripts is not None and has_scripts(check):
            return _http_with_scripts(check, subst, bounds, limits, stop, scripts)
        if isinstance(check, (ApiCheckDefinition, UrlCheckDefinition)):
            return _http(check, subst, bounds, limits, stop)
        if isinstance(check, TcpCheckDefinition):
            return _tcp(check, subst.cut, bounds, limits, stop)
        if isinstance(check, DnsCheckDefinition):
            return _dns(check, subst.cut, bounds, limits, stop)
    except VariableError as exc:
        return _not_run(exc.kind, exc.message)
    return _not_run("not_runnable_locally", f"{check.checkType} checks cannot run locally")


@dataclass
class _Observed:
    """What a request brought back, ready to be judged."""

    request: RequestSummary
    timing: TimingPhases
    failure: Failure | None
    cancelled: bool = False
    excerpt: str | None = None
    truncated: bool = False
    body_bytes: int | None = None
    status_code: int | None = None
    response_code: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    implicit_failure: str | None = None  # a 4xx/5xx status, a DNS error code
    implicit_kind: str = ""
    connection_failure_passes: bool = False  # TCP shouldFail
    cut: Cut = plain_cut  # how a value is shown (secrets masked before a cut)


def _http(
    check: ApiCheckDefinition | UrlCheckDefinition,
    subst: Substitution,
    bounds: _Bounds,
    limits: Limits,
    stop: threading.Event | None,
    teardown: Teardown | None = None,
) -> dict[str, Any]:
    try:
        request = http.prepare_request(check, subst)
    except ValueError as exc:
        return _not_run("invalid_definition", str(exc))
    cut = subst.cut
    response = http.perform(
        request, bound_seconds=bounds.seconds, limits=limits, stop=stop, timeout_text=bounds.text
    )
    text = response.body.decode("utf-8", "replace")
    script_failure: str | None = None
    if teardown is not None and response.failure is None and not response.cancelled:
        text, script_failure = teardown(request, response, text)
    values: dict[str, Any] = {"STATUS_CODE": response.status_code}
    implicit = None
    if isinstance(check, ApiCheckDefinition):
        values.update(
            RESPONSE_TIME=round(response.timing.total_ms), TEXT_BODY=text, HEADERS=response.headers,
        )  # fmt: skip
        if any(a.source == "JSON_BODY" for a in check.request.assertions):
            values["JSON_BODY"] = parse_json_body(text, response.content_type)
    status = response.status_code
    shown = http.summary(request, limits, response.remote_address, cut)
    if status is not None and status >= 400 and not check.shouldFail:
        implicit = (
            f"received HTTP {status} from {shown.method} {shown.target}: 4xx and 5xx responses fail "
            "the check unless shouldFail is set"
        )
    failure = response.failure
    if script_failure is not None:
        failure = Failure(CONFIGURATION_ERROR, "teardown_script", script_failure, network=False)
    observed = _Observed(
        request=shown,
        timing=response.timing,
        failure=failure,
        cancelled=response.cancelled,
        excerpt=cut(text, limits.excerpt_chars) if text else None,
        truncated=response.truncated,
        body_bytes=len(response.body),
        status_code=status,
        values=values,
        implicit_failure=implicit,
        implicit_kind="http_status",
        cut=cut,
    )
    return _judge(check, check.request.assertions, observed, bounds, limits)


def _http_with_scripts(
    check: ApiCheckDefinition,
    subst: Substitution,
    bounds: _Bounds,
    limits: Limits,
    stop: threading.Event | None,
    scripts: ScriptRunner,
) -> dict[str, Any]:
    """The request between the check's setup and teardown scripts (script_hooks.py)."""
    prepared = run_setup(check, subst, scripts, stop)
    if isinstance(prepared, Failure):
        kind_class = {"timeout": TIMEOUT}.get(prepared.kind, CONFIGURATION_ERROR)
        return {"passed": False, "error_class": kind_class, "error_kind": "setup_script",
                "message": prepared.message}  # fmt: skip
    check, subst = prepared
    return _http(check, subst, bounds, limits, stop, teardown_for(check, subst, scripts, stop))


def _tcp(
    check: TcpCheckDefinition, cut: Cut, bounds: _Bounds, limits: Limits, stop: threading.Event | None
) -> dict[str, Any]:
    read = any(a.source == "RESPONSE_DATA" for a in check.request.assertions)
    response = tcp.perform(check, read_reply=read, bound_seconds=bounds.seconds, limits=limits, stop=stop,
                           timeout_text=bounds.text)  # fmt: skip
    text = response.data.decode("utf-8", "replace")
    observed = _Observed(
        request=tcp.summary(check, limits, response.remote_address, cut),
        timing=response.timing,
        failure=response.failure,
        cancelled=response.cancelled,
        excerpt=cut(text, limits.excerpt_chars) if text else None,
        truncated=response.truncated,
        body_bytes=len(response.data) if read else None,
        values={"RESPONSE_DATA": text, "RESPONSE_TIME": round(response.response_time_ms)},
        connection_failure_passes=check.shouldFail,
        cut=cut,
    )
    return _judge(check, check.request.assertions, observed, bounds, limits)


def _dns(
    check: DnsCheckDefinition, cut: Cut, bounds: _Bounds, limits: Limits, stop: threading.Event | None
) -> dict[str, Any]:
    response = dns.perform(check, bound_seconds=bounds.seconds, stop=stop, timeout_text=bounds.text)
    r = check.request
    implicit = None
    asserts_code = any(a.source == "RESPONSE_CODE" for a in r.assertions)
    if response.rcode not in (None, "NOERROR") and not asserts_code and not check.shouldFail:
        where = f"{response.server}/{r.protocol.upper()}"
        implicit = f"DNS answer {response.rcode} for {r.query} {r.recordType}: {where}"
    observed = _Observed(
        request=dns.summary(check, response.server, r.protocol.upper()),
        timing=response.timing,
        failure=response.failure,
        cancelled=response.cancelled,
        excerpt=cut(response.text, limits.excerpt_chars) or None,
        response_code=response.rcode,
        values={
            "RESPONSE_CODE": response.rcode,
            "TEXT_ANSWER": response.text,
            "JSON_ANSWER": response.json,
            "RESPONSE_TIME": round(response.response_time_ms),
        },
        implicit_failure=implicit,
        implicit_kind="dns_response_code",
        cut=cut,
    )
    return _judge(check, r.assertions, observed, bounds, limits)


def _judge(
    check: CheckDefinition, assertions: Any, seen: _Observed, bounds: _Bounds, limits: Limits
) -> dict[str, Any]:
    base: dict[str, Any] = {
        "request": seen.request,
        "timing": seen.timing,
        "body_excerpt": seen.excerpt,
        "body_truncated": seen.truncated,
        "body_bytes": seen.body_bytes,
        "status_code": seen.status_code,
        "response_code": seen.response_code,
        "response_time_ms": seen.timing.total_ms,
    }
    if seen.cancelled:
        return {**base, "passed": False, "cancelled": True, "error_kind": "cancelled", "message": "cancelled"}
    failure = seen.failure
    if failure is not None:
        if seen.connection_failure_passes and failure.kind != "invalid_definition":
            return {**base, "passed": True}
        return {**base, "passed": False, "error_class": failure.error_class, "error_kind": failure.kind,
                "message": failure.message, "network_failure": failure.network}  # fmt: skip
    results: tuple[AssertionResult, ...] = evaluate_all(
        assertions, seen.values, seen.cut, bounds.regex_budget(limits)
    )
    unjudged: tuple[AssertionResult, ...] = ()
    if seen.truncated:
        results, unjudged = _cut_body(results, seen)
    base["assertions"] = results
    elapsed_ms = seen.timing.total_ms
    if elapsed_ms > bounds.max_ms:
        message = (
            f"response time {elapsed_ms:.0f} ms exceeded the maxResponseTime of {bounds.max_ms:g} ms: "
            f"{seen.request.remote_address or seen.request.target}"
        )
        return {**base, "passed": False, "error_class": TIMEOUT, "error_kind": "max_response_time",
                "message": message}  # fmt: skip
    failed = next((r for r in results if not r.passed), None)
    if failed is not None:
        kind = "body_truncated" if any(failed is u for u in unjudged) else "assertion"
        return {**base, "passed": False, "error_class": ASSERTION_FAILURE, "error_kind": kind,
                "message": failed.describe(), "failed_assertion": failed}  # fmt: skip
    if seen.implicit_failure:
        return {**base, "passed": False, "error_class": ASSERTION_FAILURE, "error_kind": seen.implicit_kind,
                "message": seen.implicit_failure}  # fmt: skip
    return {**base, "passed": True, "degraded": elapsed_ms > bounds.degraded_ms}


BODY_SOURCES = frozenset({"TEXT_BODY", "JSON_BODY", "RESPONSE_DATA"})


def _cut_body(
    results: tuple[AssertionResult, ...], seen: _Observed
) -> tuple[tuple[AssertionResult, ...], tuple[AssertionResult, ...]]:
    """The results with each assertion on a truncated body failed, saying so; and those failed ones."""
    what = "data" if seen.request.kind == "TCP" else "body"
    production = "" if seen.request.kind == "TCP" else "; production reads up to 25 MB"
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
