"""The outcome of a run: what the reporters render and what `results.json` stores.

This is the documented, stable JSON format (schemaVersion 1). Fields are only ever added.
"""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from runner.core.exitcodes import ExitCode
from runner.models.analyses import Analysis
from runner.models.base import empty_list

SCHEMA_VERSION = 1
MAX_SHARDS = 1000  # parts of a sharded run (`--shard i/n`, runner/job/shard.py)

# How one check result is judged, derived from the service's result fields.
ResultVerdict = Literal["passed", "failed", "degraded", "flaky", "error", "cancelled", "running"]
AnalysisState = Literal["completed", "pending", "unavailable", "error", "timeout", "skipped", "disabled"]
# Where a result stands against the baseline run (--baseline): see runner/job/baseline.py.
BaselineMark = Literal["newly-failing", "still-failing", "fixed", "still-passing", "new-check"]
FailOn = Literal["any", "new"]
RunVerdict = Literal[
    "passed",
    "failed",
    "no-match",
    "timeout",
    "service-error",
    "usage-error",
    "interrupted",
    "detached",
    "build-not-started",
]


def _exit_code(value: int) -> int:
    """A code of the contract (runner/core/exitcodes.py). A results.json read back (a part to merge, a
    baseline, `report`) is text from outside: another number is not a run's code, and judging it would
    crash (`ExitCode(99)`) or be ignored and pass."""
    if value not in ExitCode._value2member_map_:
        codes = ", ".join(str(int(code)) for code in ExitCode)
        raise ValueError(f"not an exit code of testsession ({codes})")
    return value


ExitCodeValue = Annotated[int, AfterValidator(_exit_code)]


class OutcomeModel(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class AnalysisOutcome(OutcomeModel):
    state: AnalysisState
    reason: str | None = None  # why it is not completed, for the reports
    id: str | None = None
    provider: str | None = None
    model: str | None = None
    analysis: Analysis | None = None


class ErrorGroupOutcome(OutcomeModel):
    id: str
    errorHash: str | None = None
    message: str | None = None  # rawErrorMessage
    cleanedMessage: str | None = None
    firstSeen: datetime | None = None  # the service's, across all sessions; None when unread
    lastSeen: datetime | None = None
    count: int = 0  # results of this session in the group
    # Results in the group over every session the service has seen (with the emulator's --state, over
    # every run sharing the file); None when the service does not count (production's groups carry no
    # count). `count` stays this session's: see docs/emulator.md.
    occurrences: int | None = None
    analysis: AnalysisOutcome | None = None


class AttemptOutcome(OutcomeModel):
    """A failed attempt that was retried (resultType ATTEMPT)."""

    id: str | None = None
    link: str | None = None
    status: str
    durationSeconds: float | None = None
    error: str | None = None


class Attachment(OutcomeModel):
    """A file a check's run left on this machine (a browser check's screenshot or trace.zip)."""

    name: str
    path: str  # relative to the working directory


class SuiteTestOutcome(OutcomeModel):
    """One test of a Playwright check suite: its outcome (passed, failed, flaky, skipped, timedOut,
    interrupted, not run) and how many times Playwright ran it (1 + its retries)."""

    name: str
    status: str
    runs: int = 1


class QuarantineOutcome(OutcomeModel):
    """A quarantine that held for this result: its failure did not fail the gate (job/quarantine.py)."""

    owner: str
    reason: str | None = None
    until: date


class ExpiredQuarantine(QuarantineOutcome):
    """A quarantine entry whose day has passed: its check gates again."""

    check: str


class LastFailure(OutcomeModel):
    at: datetime
    verdict: str
    error: str | None = None
    errorGroupId: str | None = None
    novelty: str | None = None  # new, known or untold, as the run that failed judged it
    commitId: str | None = None


class Streak(OutcomeModel):
    """The newest runs in a row with one outcome: 'passing' (passed, flaky, degraded) or 'failing'."""

    state: Literal["passing", "failing"]
    runs: int


class HistoryOutcome(OutcomeModel):
    """A check's recorded runs (the state file's history, runner/job/history.py), this run included:
    the newest `runs` of them. `failed` counts failed and error; `passRate` is the share that did not
    fail (0.75 for 3 of 4)."""

    runs: int
    passed: int = 0
    failed: int = 0
    degraded: int = 0
    flaky: int = 0
    passRate: float = 1.0
    medianMs: int | None = None
    p95Ms: int | None = None
    lastFailure: LastFailure | None = None
    streak: Streak | None = None
    recent: str = ""  # the newest runs, oldest first: '.' passed, 'f' flaky, 'd' degraded, 'X' failed
    unstable: bool = False  # failed in some runs and not in others, or passed only on a retry
    readyToLeaveQuarantine: bool = False  # quarantined, and passed its last READY_RUNS runs in a row


class ResultOutcome(OutcomeModel):
    id: str
    link: str | None = None
    checkId: str | None = None
    name: str
    checkType: str | None = None
    runLocation: str | None = None
    status: str  # the service's status: PASSED, FAILED, CANCELLED, RUNNING, or one it adds later
    verdict: ResultVerdict
    durationSeconds: float | None = None
    attempts: int = 1
    failedAttempts: list[AttemptOutcome] = Field(default_factory=empty_list)
    errorGroupIds: list[str] = Field(default_factory=empty_list)
    error: str | None = None  # the error message of its first error group
    # Known or new (runner/job/known.py): None on passing results and where it cannot be told.
    known: bool | None = None
    firstSeen: datetime | None = None  # of its error group(s), when known
    lastSeenBefore: datetime | None = None  # last seen before this run; None when not knowable
    baseline: BaselineMark | None = None  # None without a usable baseline
    attachments: list[Attachment] = Field(default_factory=empty_list)
    tests: list[SuiteTestOutcome] = Field(default_factory=empty_list)  # a Playwright check suite's
    # The local executor failed on the check (a bug in the tool): its traceback. Not in results.json:
    # the session's exit code (4) and problem say it there; the console prints the traceback.
    internalError: str | None = Field(default=None, exclude=True)
    # A quarantine that held (checks file or spec `quarantine:`): a failure here does not fail the gate.
    quarantined: QuarantineOutcome | None = None
    history: HistoryOutcome | None = None  # with --state: the check's recorded runs, this one included


class Origin(OutcomeModel):
    """Where a session of a merged run (`testsession merge`) came from: its file, its part of a
    sharded run, and the service that ran it ("local", "emulator", or the API's host)."""

    file: str
    shard: str | None = None  # "2/4"
    service: str | None = None

    @property
    def label(self) -> str:
        """'shard 2/4 on emulator', or 'local/results.json on api.example.com' for a whole run."""
        where = f"shard {self.shard}" if self.shard else self.file
        return f"{where} on {self.service}" if self.service else where


class SessionOutcome(OutcomeModel):
    name: str
    runLocation: str
    environment: str | None = None
    testSessionId: str | None = None
    link: str | None = None
    status: str | None = None  # the service's status; None when it was never triggered
    startedAt: datetime | None = None
    stoppedAt: datetime | None = None
    durationSeconds: float | None = None
    exitCode: ExitCodeValue = 0
    problem: str | None = None  # one line when the session could not run to the end
    noMatch: bool = False  # no check matched its target
    results: list[ResultOutcome] = Field(default_factory=empty_list)
    errorGroups: list[ErrorGroupOutcome] = Field(default_factory=empty_list)
    origin: Origin | None = None  # only in a merged run


class Counts(OutcomeModel):
    total: int = 0
    passed: int = 0
    failed: int = 0
    degraded: int = 0
    flaky: int = 0
    error: int = 0
    cancelled: int = 0
    running: int = 0


class CheckRef(OutcomeModel):
    checkId: str | None = None
    name: str
    runLocation: str | None = None


class SlowerCheck(CheckRef):
    baselineSeconds: float
    durationSeconds: float


class BaselineOutcome(OutcomeModel):
    """The comparison with an earlier run's results.json (--baseline)."""

    path: str
    used: bool = False  # False when the file could not be used: `warning` says why
    warning: str | None = None
    missing: list[CheckRef] = Field(default_factory=empty_list)  # in the baseline, not in this run
    fixed: list[CheckRef] = Field(default_factory=empty_list)
    slower: list[SlowerCheck] = Field(default_factory=empty_list)


class CommitInfo(OutcomeModel):
    commitId: str | None = None
    branchName: str | None = None
    commitOwner: str | None = None
    commitMessage: str | None = None
    repoUrl: str | None = None
    environment: str | None = None


class ShardInfo(OutcomeModel):
    """One part of a sharded run (`--shard i/n`, runner/job/shard.py): what `testsession merge` checks
    before it judges the parts as one run."""

    # Bounded as `--shard` allows (1 to MAX_SHARDS parts): a header read back is text from outside, and
    # a merge lists the parts it misses (a forged total of a billion was minutes and gigabytes).
    index: int = Field(ge=1, le=MAX_SHARDS)  # 1-based
    total: int = Field(ge=1, le=MAX_SHARDS)
    matched: int = Field(ge=0)  # checks of the whole matched set (a check in two sessions counts twice)
    checks: int = Field(ge=0)  # of them in this part
    fingerprint: str  # of the whole matched set: the same in every part of one run
    split: str  # of the assignment (the set and the durations that balanced it)
    # Of this part's own checks (session, location, check id): what its results must be, each once.
    # None in a part written by an older testsession, which did not record it: `merge` refuses it.
    own: str | None = None

    @model_validator(mode="after")
    def _index_in_total(self) -> "ShardInfo":
        if self.index > self.total:
            raise ValueError(f"index {self.index} is beyond its total of {self.total} parts")
        return self

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"


class MergedPart(Origin):
    """One results.json a merged run was made of, as it judged itself."""

    verdict: str
    exitCode: ExitCodeValue


class Outcome(OutcomeModel):
    schemaVersion: int = SCHEMA_VERSION
    tool: str = "testsession-runner"
    toolVersion: str = ""
    startedAt: datetime | None = None
    finishedAt: datetime | None = None
    verdict: RunVerdict = "passed"
    exitCode: ExitCodeValue = 0
    failOnDegraded: bool = False
    failOn: FailOn = "any"  # "new": known failed checks are forgiven (errors, unfinished still fail)
    partial: bool = False  # written after a timeout, interrupt or service error: what was known
    message: str | None = None  # one line explaining a non-zero exit code
    commit: CommitInfo = Field(default_factory=CommitInfo)
    counts: Counts = Field(default_factory=Counts)
    sessions: list[SessionOutcome] = Field(default_factory=empty_list)
    baseline: BaselineOutcome | None = None  # None when no baseline was asked for
    # Where the sessions ran: "local" (a checks file's, by the engine in the process), "emulator" (a
    # world's), or the API's host. Earlier files said "emulator" for a checks file's run too (`world`
    # tells it apart): reports/json_report.py load_outcome reads those as "local".
    service: str | None = None
    shard: ShardInfo | None = None  # this run is one part of a sharded run
    merged: list[MergedPart] = Field(default_factory=empty_list)  # `testsession merge`: the parts
    # Where the checks came from on a local run: "demo" (the shipped demo world: scripted results,
    # never the build's), "world" (a world file), "checks" (a checks file); None: the service.
    world: Literal["demo", "world", "checks"] | None = None
    # Quarantine entries whose day has passed: their checks gated again in this run.
    expiredQuarantine: list[ExpiredQuarantine] = Field(default_factory=empty_list)

    def all_results(self) -> list[ResultOutcome]:
        return [r for s in self.sessions for r in s.results]


def count_results(results: list[ResultOutcome]) -> Counts:
    # Counted in a plain dict: a pydantic attribute per result is slow over 100,000 of them.
    counts = dict.fromkeys(Counts.model_fields, 0)
    for result in results:
        counts[result.verdict] += 1
    counts["total"] = len(results)
    return Counts(**counts)
