"""The contract of a protocol: how one check type performs one attempt and what it observed.

The engine (run.py) does everything that is the same for every check type, once: the attempt's
bounds, the stop event, retries, variables, the assertions, secret masking, the verdict (judge.py)
and the fingerprint. A protocol does only what differs: it fills the check's fields with variables,
performs the request (or runs the child process), and hands back an `Observation`, a frozen value.

The contract:
- `fill(check, subst)`: the definition with variables filled in where `problems()` must see the
  result (TCP's port); default: the check as it is. Raise `NotRun` (or `VariableError`, a `NotRun`)
  when it cannot be.
- `perform(check, job)`: one attempt, within `job.bounds` (seconds from `job.bounds.deadline` back:
  nothing may outlive the deadline) and stoppable by `job.stop`: once the event is set, `perform`
  returns within ~50 ms an `Observation` with `cancelled=True`. It never raises for anything the
  target did (refused, reset, garbage, a child that crashed): that is a `Failure` in the observation.
  It raises `NotRun` (kind and message) for a definition that cannot be run before anything is sent.
- `assertions(check)`: what the engine evaluates against `Observation.values` (default: the
  request's assertions). A protocol that judges for itself (a Playwright script's `expect`) returns
  none and puts its verdict in `Observation.failure`; the response-time rules still apply.

What an `Observation` carries: the request as evidence (`RequestSummary`, secrets masked later by
the engine: every string of the attempt passes through the session's redaction), the timing phases,
the failure if there was no usable answer (or the child's own verdict), the values the assertions
read by source (STATUS_CODE, TEXT_BODY, RESPONSE_DATA ...), an excerpt of the answer, a failure the
answer implies when no assertion failed first (`implicit`: a 4xx/5xx, a DNS error code), and for a
child process its `steps`, `console` lines and the evidence `files` it wrote (trace, screenshots).

A child process (BROWSER and MULTI_STEP running a Playwright script in Node, ICMP ping): start it
with `runner/checks/child.py` `run_child(argv, deadline=job.bounds.deadline, stop=job.stop, ...)`,
which starts it in its own process group, reads its output up to a cap, and ends the whole group
(and anything it started detached) at the deadline or when `job.stop` is set; the observation is
then `cancelled` (stopped) or carries a TIMEOUT failure (deadline).

Adding a check type:
1. a module (or a folder with an `__init__.py`) under `runner/checks/protocols/` defining a subclass
   of `CheckProtocol` and an instance of it named `PROTOCOL`;
2. one line in `protocols/__init__.py` `REGISTRY`: `"BROWSER": "browser"` (checkType -> module);
3. the check type's definition model in `runner/models/check_definitions.py` (parse_check_definition
   gives it to `perform`; the type must be one `local_support()` allows), and its kinds of failure in
   `runner/checks/failures.py` if it needs new ones (mypy then names the analyser's match that does
   not handle them). Test it against a real local server (tests/checks_servers.py).
Nothing in run.py changes.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from runner.checks.failures import Failure, NotRun
from runner.checks.limits import Limits
from runner.checks.outcome import Cut, EvidenceFile, RequestSummary, Step, SuiteTest, TimingPhases
from runner.checks.regex_budget import RegexBudget
from runner.checks.variables import Substitution
from runner.models.check_definitions import Assertion, CheckDefinition

if TYPE_CHECKING:
    from runner.checks.scripts import ScriptRunner

__all__ = ["Bounds", "CheckProtocol", "Job", "NotRun", "Observation"]

C = TypeVar("C", bound=CheckDefinition)
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})  # a default shared by every Observation: read-only


# Bounds, Job and Observation are NamedTuples: one of each is made for every attempt, and a frozen
# dataclass's __init__ (object.__setattr__ per field) costs several times a tuple's.


class Bounds(NamedTuple):
    """How long one attempt may take, and its response-time limits."""

    seconds: float
    text: str  # which bound, for a timeout's message (`the maxResponseTime of 2000 ms`)
    degraded_ms: float
    max_ms: float
    deadline: float  # time.monotonic(): the attempt's start + seconds

    def left(self) -> float:
        """Seconds left until the deadline (0 once it passed)."""
        return max(0.0, self.deadline - time.monotonic())

    def regex_budget(self, limits: Limits) -> RegexBudget:
        """What the assertions' regexes may take: the time left, within the limits' floor and cap."""
        left = self.deadline - time.monotonic()
        return RegexBudget.start(min(limits.regex_max_seconds, max(limits.regex_min_seconds, left)))


class Job(NamedTuple):
    """What a protocol gets to perform one attempt."""

    subst: Substitution  # renders {{VARIABLES}}; knows the secrets to mask
    bounds: Bounds
    limits: Limits
    stop: threading.Event | None = None
    scripts: ScriptRunner | None = None  # runs an API check's setup and teardown scripts (Node)
    # The attempt's number in its check's run (1 first): a browser check's evidence folder, attempt-<n>.
    attempt: int = 1

    @property
    def cut(self) -> Cut:
        """The first characters of a text as it may be shown (secrets masked before the cut)."""
        return self.subst.cut

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()


class Observation(NamedTuple):
    """What one attempt brought back, ready to be judged (judge.py); `seen._replace(...)` for a copy."""

    request: RequestSummary | None
    timing: TimingPhases
    failure: Failure | None = None  # no usable answer; or a child's own verdict
    cancelled: bool = False  # stopped by job.stop: the attempt is not a result
    excerpt: str | None = None  # the first characters of the answer (body, TCP data, DNS text)
    truncated: bool = False  # the answer was longer than the read cap
    body_bytes: int | None = None  # bytes read (with truncated: where it was cut)
    status_code: int | None = None  # HTTP
    response_code: str | None = None  # DNS
    values: Mapping[str, Any] = _NO_VALUES  # what each assertion source reads
    implicit: Failure | None = None  # fails the attempt unless an assertion failed first (a 4xx/5xx)
    connection_failure_passes: bool = False  # TCP shouldFail: a refused connection passes
    # Why the answer itself is degraded, whatever its time (ICMP: packet loss at
    # degradedPacketLossThreshold); None: it is not.
    degraded: str | None = None
    # A child process's own evidence (BROWSER, MULTI_STEP, ICMP).
    steps: tuple[Step, ...] = ()
    console: tuple[str, ...] = ()
    files: tuple[EvidenceFile, ...] = ()
    tests: tuple[SuiteTest, ...] = ()  # a Playwright check suite's tests (protocols/playwright)


class CheckProtocol(ABC, Generic[C]):
    """How one check type runs (see the module's docstring)."""

    def fill(self, check: C, subst: Substitution) -> C:
        """`check` with the variables filled in that `problems()` must see; NotRun when it cannot be."""
        return check

    def assertions(self, check: C) -> Sequence[Assertion]:
        request = check.request
        return tuple(getattr(request, "assertions", None) or ())

    @abstractmethod
    def perform(self, check: C, job: Job) -> Observation:
        """One attempt within job.bounds, stopped by job.stop (see the module's docstring)."""
