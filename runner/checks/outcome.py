"""What one attempt of a real check run leaves behind: plain frozen values, secrets already masked.

These are the evidence the rest of the emulator reads (results, error groups, the analyser's
HTTP_REQUEST and TIMING_PHASES artifacts), so every text in them passed through `mask()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from runner.checks.failures import ErrorClass, FailureKind

MAX_ACTUAL_CHARS = 200  # how much of an assertion's actual value a message quotes


@dataclass(frozen=True)
class TimingPhases:
    """Milliseconds per phase of one request; None for a phase that did not happen (no TLS on http://,
    no first byte after a refused connect). `total_ms` is the whole request, redirects included."""

    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    first_byte_ms: float | None
    download_ms: float | None
    total_ms: float
    redirect_ms: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        """Production's result keys (CheckResultAPI.response.timingPhases: dns, tcp, firstByte, ...)."""
        return {
            "dns": self.dns_ms,
            "tcp": self.connect_ms,
            "tls": self.tls_ms,
            "firstByte": self.first_byte_ms,
            "download": self.download_ms,
            "total": self.total_ms,
        }


@dataclass(frozen=True)
class AssertionResult:
    source: str
    comparison: str
    property: str
    target: str
    regex: str | None
    passed: bool
    actual: str | None  # what came back, quoted for a message (capped, masked); None: nothing found
    detail: str  # "received 503", "the response body is not JSON", ...

    def label(self) -> str:
        """`JSON_BODY $.id EQUALS 5`: the assertion as a user wrote it."""
        parts = [self.source]
        if self.property:
            parts.append(self.property)
        if self.regex:
            parts.append(f"/{self.regex}/")
        parts.append(self.comparison)
        if self.target and self.comparison not in ("IS_EMPTY", "NOT_EMPTY", "IS_NULL", "NOT_NULL"):
            parts.append(self.target)
        return " ".join(parts)

    def describe(self) -> str:
        """`STATUS_CODE EQUALS 200: received 503`."""
        return f"{self.label()}: {self.detail}"


@dataclass(frozen=True)
class RequestSummary:
    """What was sent, for the HTTP_REQUEST evidence: never a password, secrets masked."""

    kind: str  # HTTP, TCP, DNS, ICMP or TRACEROUTE
    method: str  # GET, POST ...; "CONNECT" for TCP; the record type for DNS
    target: str  # the URL (credentials stripped), host:port, or "query @ server:port/UDP"
    headers: tuple[tuple[str, str], ...] = ()
    body_excerpt: str | None = None
    remote_address: str | None = None  # ip:port actually connected to, when known


@dataclass(frozen=True)
class Step:
    """One step of a child process's run (a Playwright test step, a ping's probe), as it reported it."""

    name: str
    passed: bool
    duration_ms: float | None = None
    detail: str | None = None  # why it failed, one line


@dataclass(frozen=True)
class SuiteTest:
    """One test of a Playwright check suite as Playwright ran it: its outcome (passed, failed, flaky:
    passed on a retry, skipped, timedOut, interrupted) and how many times it ran (1 + its retries)."""

    name: str
    status: str
    runs: int = 1

    def as_dict(self) -> dict[str, str | int]:
        """As a result lists it (its `tests` field: the emulator's rows, results.json)."""
        return {"name": self.name, "status": self.status, "runs": self.runs}


@dataclass(frozen=True)
class EvidenceFile:
    """A file a child process wrote as evidence (a trace, a screenshot, a video): its kind and path."""

    name: str
    kind: str  # TRACE, SCREENSHOT, VIDEO ... (the analysis's artifact types)
    path: str

    def as_dict(self) -> dict[str, str]:
        """As a result lists it (its `attachments` field: the emulator's rows, results.json)."""
        return {"name": self.name, "path": self.path}


# slots: a session keeps one a check (a __dict__ of 24 fields is ~0.6 KiB, the slots 0.25)
@dataclass(frozen=True, slots=True)
class Attempt:
    number: int  # 1 for the first run, 2 for the first retry ...
    started_at: float  # wall clock (epoch seconds)
    duration_ms: float  # the attempt's own wall time
    passed: bool
    degraded: bool = False
    error_class: ErrorClass | None = None  # always error_kind's class (failures.py)
    error_kind: FailureKind | None = None  # connection_refused, timeout, assertion, unknown_variable ...
    message: str | None = None
    network_failure: bool = False  # failed before any answer (what onlyOn: [NETWORK_ERROR] retries)
    response_time_ms: float | None = None
    status_code: int | None = None  # HTTP status of the (last) response
    response_code: str | None = None  # DNS rcode (NOERROR, NXDOMAIN ...)
    timing: TimingPhases | None = None
    body_excerpt: str | None = None  # first bytes of the body / TCP data / DNS answer text
    body_truncated: bool = False  # the body was longer than the read cap
    body_bytes: int | None = None  # bytes of the body (TCP: data) read; with body_truncated, where it was cut
    failed_assertion: AssertionResult | None = None
    assertions: tuple[AssertionResult, ...] = ()
    request: RequestSummary | None = None
    cancelled: bool = False
    # What the failure is, as one line (fingerprint.py): its error group's key; None when passed.
    fingerprint: str | None = None
    # A child process's own evidence (protocols/base.py Observation): masked like every other text.
    steps: tuple[Step, ...] = ()
    console: tuple[str, ...] = ()
    files: tuple[EvidenceFile, ...] = ()
    tests: tuple[SuiteTest, ...] = ()  # a Playwright check suite's tests, passed ones too
    # INTERNAL_ERROR: where the engine failed (a bug in the tool), for the run to print and exit 4.
    traceback: str | None = None

    @classmethod
    def not_run(
        cls,
        kind: FailureKind,
        message: str,
        *,
        number: int = 1,
        started_at: float = 0.0,
        duration_ms: float = 0.0,
    ) -> Attempt:
        """An attempt that sent nothing: the check cannot run as defined (CONFIGURATION_ERROR)."""
        return cls(
            number=number, started_at=started_at, duration_ms=duration_ms, passed=False,
            error_class=kind.error_class, error_kind=kind, message=message,
        )  # fmt: skip

    @classmethod
    def cancelled_before_start(cls, message: str = "cancelled") -> Attempt:
        """A check the run's stop reached before it started: cancelled by this run (a deadline, a
        signal), so it did not finish (verdict `running`), not an error of the check."""
        return cls(
            number=1, started_at=0.0, duration_ms=0.0, passed=False,
            error_class=FailureKind.CANCELLED.error_class, error_kind=FailureKind.CANCELLED,
            message=message, cancelled=True,
        )  # fmt: skip

    def as_kept_passed(self) -> Attempt:
        """A passed attempt as a session keeps it: what its row shows (whether the body was cut, the
        files) without the rest of its evidence (request, timing, assertions, excerpt, steps), which
        only an error group's analysis reads, and a pass has no group: ~0.9 KiB a check at 10,000.
        Built field by field, the left-out ones at their defaults: dataclasses.replace took twice as
        long (8.6 against 4 us, 10,000 times a run)."""
        return Attempt(
            number=self.number,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
            passed=self.passed,
            degraded=self.degraded,
            error_class=self.error_class,
            error_kind=self.error_kind,
            message=self.message,
            network_failure=self.network_failure,
            response_time_ms=self.response_time_ms,
            status_code=self.status_code,
            response_code=self.response_code,
            body_truncated=self.body_truncated,
            body_bytes=self.body_bytes,
            cancelled=self.cancelled,
            fingerprint=self.fingerprint,
            files=self.files,
            tests=self.tests,
        )

    # What a result shows of an attempt, one reading for every caller (the local run's results and
    # the emulator's rows say the same of the same attempt).

    @property
    def reported_ms(self) -> float:
        """The attempt's time as a result reports it: its response time, else its own duration (a
        check that got no answer, or sent nothing)."""
        return self.response_time_ms if self.response_time_ms is not None else self.duration_ms

    @property
    def failure_class(self) -> ErrorClass | None:
        """The class of a failed attempt; None when it passed. A failure with no class (a cancelled
        attempt) counts as CONFIGURATION_ERROR: an error, so a gate that reads it fails closed."""
        if self.passed:
            return None
        return self.error_class or ErrorClass.CONFIGURATION_ERROR

    @property
    def failure_message(self) -> str | None:
        """What a failed attempt says (its kind when the engine gave no message); None when it passed."""
        if self.passed:
            return None
        return self.message or str(self.error_kind or "failed")

    @property
    def truncation(self) -> str | None:
        """`body truncated at 1048576 bytes` when the body passed the read cap."""
        if not self.body_truncated:
            return None
        return f"body truncated at {self.body_bytes} bytes" if self.body_bytes else "body truncated"


T = TypeVar("T")


def mask(value: T, redact: Callable[[str], str]) -> T:
    """A copy of a value of this module with every string passed through `redact`."""
    return _mask(value, redact)  # type: ignore[no-any-return]


def _mask(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, Enum):  # a kind or a class: ours, never a secret
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, tuple):
        return tuple(_mask(item, redact) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _mask(getattr(value, f.name), redact) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


Cut = Callable[[str, int], str]  # the first `limit` characters of a text as it may be shown


def plain_cut(text: str, limit: int) -> str:
    return text[:limit]


def quote_actual(value: str, limit: int = MAX_ACTUAL_CHARS, cut: Cut = plain_cut) -> str:
    """A value for one message line: control characters and line breaks shown as spaces, capped.

    `cut` masks secrets before it cuts (Substitution.cut): a secret cut in half would not be masked."""
    flat = cut(value, limit)
    if not flat.isprintable():  # a line break, a tab or another control character (most values: none)
        flat = " ".join(flat.split()) if any(c in flat for c in "\r\n\t") else flat
        flat = "".join(c if c.isprintable() else " " for c in flat)
    return flat[: limit - 1] + "…" if len(value) > limit or len(flat) > limit else flat
