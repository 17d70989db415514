"""From the service's results to one verdict per check. Pure functions, no I/O.

A row's verdict is not decided here: its fields become the policy's CheckFacts (`result_facts`), and
runner/job/policy.py `verdict_of` decides, as it does for a checks file's run (job/local.py); which
verdicts fail the gate is decided there too."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from runner.core.text import for_line
from runner.job.known import UNKNOWN, classify
from runner.job.outcome import (
    Attachment,
    AttemptOutcome,
    ErrorGroupOutcome,
    ResultOutcome,
    ResultVerdict,
    SuiteTestOutcome,
)
from runner.job.policy import CheckFacts, Failure, Ran, verdict_of
from runner.models import SessionResult, TestSession
from runner.models.sessions import RESULT_TYPES, SESSION_STATUSES

# A file's path as the reports may show it: relative, plain characters, no way up. The service (or an
# emulator) says where the files are; a report names a file only when the path is harmless to a reader
# (GitLab uploads what `[[ATTACHMENT|path]]` names).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._@+-]+(/[A-Za-z0-9._@+-]+)*")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,40}")
MAX_ATTACHMENTS = 10
MAX_ROW_MESSAGE = 8192  # characters of a result row's own errorMessage kept (a group's is the service's)


def attachments(result: SessionResult) -> list[Attachment]:
    return checked_attachments((result.model_extra or {}).get("attachments") or [])


def checked_attachments(items: Iterable[object]) -> list[Attachment]:
    """The files a report may name, of those a check's run says it left ({name, path} each)."""
    out: list[Attachment] = []
    for item in items:
        if not isinstance(item, dict) or len(out) >= MAX_ATTACHMENTS:
            continue
        name, path = item.get("name"), item.get("path")
        if not isinstance(name, str) or not isinstance(path, str) or not _NAME.fullmatch(name):
            continue
        if len(path) <= 500 and _PLAIN_PATH.fullmatch(path) and ".." not in path.split("/"):
            out.append(Attachment(name=name, path=path))
    return out


_STATUS = re.compile(r"[a-zA-Z][a-zA-Z ]{0,20}")
MAX_TESTS = 500


def checked_suite_tests(items: Iterable[object]) -> list[SuiteTestOutcome]:
    """A Playwright check suite's tests as its run listed them ({name, status, runs} each): a name in
    one line, a status word, a count of runs; anything else left out."""
    out: list[SuiteTestOutcome] = []
    for item in items:
        if not isinstance(item, dict) or len(out) >= MAX_TESTS:
            continue
        name, status, runs = item.get("name"), item.get("status"), item.get("runs")
        if not isinstance(name, str) or not isinstance(status, str) or not _STATUS.fullmatch(status):
            continue
        count = runs if isinstance(runs, int) and not isinstance(runs, bool) and 0 <= runs <= 1000 else 1
        out.append(SuiteTestOutcome(name=for_line(name, 300), status=status, runs=count))
    return out


def _duration(result: SessionResult) -> float | None:
    if result.responseTime is not None:
        return round(result.responseTime / 1000.0, 3)
    if result.startedAt and result.stoppedAt:
        return round(max(0.0, (result.stoppedAt - result.startedAt).total_seconds()), 3)
    return None


def result_facts(result: SessionResult, retried: bool, ended_by_us: bool = False) -> CheckFacts:
    """What a service's row says, in the words of the verdict policy (job/policy.py `verdict_of`)."""
    status = result.status
    if result.resultType is not None and result.resultType not in RESULT_TYPES:
        # A kind of result this version does not know (not FINAL, ATTEMPT or PENDING): whatever its
        # status says, nobody can tell it is the check's final pass.
        ran = Ran.NOT_UNDERSTOOD
    elif status == "CANCELLED":
        ran = Ran.CANCELLED
    elif status == "RUNNING" or result.resultType == "PENDING":
        ran = Ran.UNFINISHED
    else:
        ran = _RAN.get(status, Ran.NOT_UNDERSTOOD)  # a status this version does not know: never a pass
    if result.aborted or (result.hasErrors and not result.hasFailures):
        failure = Failure.ERROR
    else:
        failure = Failure.ASSERTION if result.hasFailures else Failure.NONE
    return CheckFacts(ran, failure, bool(result.isDegraded), retried, ended_by_us)


_RAN = {"PASSED": Ran.PASSED, "FAILED": Ran.FAILED}


def result_verdict(result: SessionResult, retried: bool, ended_by_us: bool = False) -> ResultVerdict:
    """`ended_by_us`: the run cancelled the session (deadline, signal), so a check it shows as
    cancelled did not finish in time; it was not cancelled by someone else."""
    return verdict_of(result_facts(result, retried, ended_by_us))


def _contradiction(result: SessionResult) -> str | None:
    """A PASSED result that also says it failed, errored or was aborted: the answer contradicts itself,
    and a gate does not pick the reading that lets a deploy through."""
    if result.status != "PASSED" or not (result.hasFailures or result.hasErrors or result.aborted):
        return None  # nearly every row: read without a list of its flags (judged 20,000 times at 10,000)
    flags = [name for name in ("hasFailures", "hasErrors", "aborted") if getattr(result, name)]
    said = " and ".join(f"{name}: true" for name in flags)
    return f"result status PASSED but {said}: not counted as a pass"


def _not_understood(result: SessionResult) -> str | None:
    """Why a result became an error without the service saying so: a type or status not known here."""
    if result.resultType is not None and result.resultType not in RESULT_TYPES:
        return f"result type {result.resultType[:40]!r} is not one this version knows: not counted as a pass"
    if result.status not in SESSION_STATUSES:
        return f"result status {result.status[:40]!r} is not one this version knows: not counted as a pass"
    return _contradiction(result)


def _degraded_reason(result: SessionResult) -> str:
    """Why a result passed degraded: the threshold and the measure where the service says (the
    emulator's `degradedReason`); else what the run knows, its response time."""
    said = (result.model_extra or {}).get("degradedReason")
    if isinstance(said, str) and said.strip():
        return said[:MAX_ROW_MESSAGE]
    took = f" (response time {result.responseTime:,.0f} ms)" if result.responseTime is not None else ""
    return f"the service marked the result degraded{took} and did not say which threshold it passed"


MAX_TRACEBACK = 16_000


def _internal_error(result: SessionResult) -> str | None:
    """The emulator's `internalError` of a failed row: its executor failed on the check (a bug)."""
    said = (result.model_extra or {}).get("internalError") if result.status == "FAILED" else None
    return said[-MAX_TRACEBACK:] if isinstance(said, str) and said.strip() else None


def _first_message(group_ids: list[str], groups: Mapping[str, ErrorGroupOutcome]) -> str | None:
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is not None and group.message:
            return group.message
    return None


def failure_message(result: SessionResult, groups: Mapping[str, ErrorGroupOutcome]) -> str | None:
    """Why a result failed, however many error groups the run has: its group's message when the run
    read the group; else the row's own `errorMessage` where the service gives one (the emulator);
    else which group holds it (a run reads at most job/analyses.py's MAX_GROUPS_READ groups)."""
    found = _first_message(result.errorGroupIds, groups)
    if found:
        return found
    said = (result.model_extra or {}).get("errorMessage")
    if isinstance(said, str) and said.strip():
        return said[:MAX_ROW_MESSAGE]
    unread = [g for g in result.errorGroupIds if g not in groups]
    if unread:
        return f"the reason is in error group {unread[0][:100]}; its message was not read"
    return None


class CheckRows(NamedTuple):
    """One check's rows in a read of a session: its FINAL result (while it still retries, its last
    attempt as a RUNNING placeholder) and the ATTEMPT results that fold into it. A tuple: a read of
    a big session makes one per result."""

    row: SessionResult
    tries: list[SessionResult]

    @property
    def id(self) -> str:
        return self.row.testSessionResultId


def check_rows(session: TestSession) -> list[CheckRows]:
    """One entry per check and location, in the order of the FINAL results, then those still retrying."""
    attempts: dict[tuple[str | None, str | None, str], list[SessionResult]] = {}
    finals: list[SessionResult] = []
    for result in session.results:
        if result.resultType == "ATTEMPT":
            attempts.setdefault((result.checkId, result.runLocation, result.name), []).append(result)
        else:
            finals.append(result)
    if not attempts:  # no check retried (most reads): one entry per FINAL row, in their order
        return [CheckRows(result, []) for result in finals]
    seen = set()
    checks = []
    for result in finals:
        key = (result.checkId, result.runLocation, result.name)
        seen.add(key)
        checks.append(CheckRows(result, attempts.get(key, [])))
    for key, tries in attempts.items():
        if key not in seen:  # still retrying: no FINAL result yet
            last = tries[-1]
            pending = last.model_copy(update={"status": "RUNNING", "resultType": "PENDING"})
            checks.append(CheckRows(pending, tries))
    return checks


# --- a row kept between reads, without the row -----------------------------------------------------
#
# A running session is read again and again; between two reads the last one's rows are only needed
# to compare with the next (OutcomeMemo) and, when the wait ends without a final answer (a deadline,
# a signal, a failed read), to judge what it showed. Kept as models, a read of 10,000 rows (~11 MiB)
# was still held while the next one was parsed. A RowValue is the row's field values in field order,
# its extra fields and its set of given fields: equal rows give equal values (what the memo compares),
# and `row_of` gives the row back when it is needed.

_ROW_FIELDS = tuple(SessionResult.model_fields)
RowValue = tuple[tuple[object, ...], dict[str, Any] | None, AbstractSet[str]]


def row_value(row: SessionResult) -> RowValue:
    return tuple(row.__dict__.values()), row.__pydantic_extra__ or None, row.__pydantic_fields_set__


def row_of(value: RowValue) -> SessionResult:
    values, extra, given = value
    fields: dict[str, Any] = dict(zip(_ROW_FIELDS, values, strict=True))
    row = SessionResult.model_construct(set(given), **fields)
    # Not as keywords: an extra field may be named as model_construct's own parameters (`cls`).
    object.__setattr__(row, "__pydantic_extra__", dict(extra) if extra else {})
    return row


class KeptRead:
    """The last read of a session, its rows as RowValues: `read` gives the session back."""

    def __init__(self, session: TestSession) -> None:
        self.head = session.model_copy(update={"results": []})
        self.rows = tuple(row_value(row) for row in session.results)
        # While the read is judged: each row's value, by the row (its id, and the row to be sure).
        self._by_row: dict[int, tuple[SessionResult, RowValue]] | None = {
            id(row): (row, value) for row, value in zip(session.results, self.rows, strict=True)
        }

    def value(self, row: SessionResult) -> RowValue:
        held = self._by_row.get(id(row)) if self._by_row is not None else None
        # Not one of the read's rows (a placeholder made from one, a later read): made here.
        return held[1] if held is not None and held[0] is row else row_value(row)

    def release(self) -> None:
        """The read's rows are let go: ids may be reused from here."""
        self._by_row = None

    def read(self) -> TestSession:
        return self.head.model_copy(update={"results": [row_of(value) for value in self.rows]})


class OutcomeMemo:
    """`check_outcome` of the checks whose rows did not change since the last read of a session.

    A running session is read again and again, and each read would judge every check again: at
    10,000 checks that was the largest share of the run's CPU. A check's outcome depends only on its
    rows, the groups those rows name, the session's start and `ended_by_us`; when all of these equal
    the last read's, the last outcome is that check's outcome (the rows are compared by value)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[tuple[object, ...], ResultOutcome]] = {}

    def outcome(
        self,
        session: TestSession,
        check: CheckRows,
        groups: Mapping[str, ErrorGroupOutcome],
        ended_by_us: bool = False,
        kept: KeptRead | None = None,
    ) -> ResultOutcome:
        """`kept`: this session's KeptRead, whose values of the rows are used rather than made again."""
        value = row_value if kept is None else kept.value
        row, tries = check.row, check.tries
        if tries:
            rows = (value(row), *map(value, tries))
            ids = [g for r in (row, *tries) for g in r.errorGroupIds]
        else:  # most checks: one row, and a pass names no group
            rows, ids = (value(row),), row.errorGroupIds
        read = tuple(map(groups.get, ids)) if ids else ()
        key = (rows, read, session.startedAt, ended_by_us)
        last = self._last.get(check.id)
        result = (
            last[1]
            if last is not None and last[0] == key
            else check_outcome(session, check, groups, ended_by_us)
        )
        # Kept with this read's values, not the equal ones of an earlier read (KeptRead holds them).
        self._last[check.id] = (key, result)
        return result


def check_verdict(check: CheckRows, ended_by_us: bool = False) -> ResultVerdict:
    return result_verdict(check.row, any(t.status != "PASSED" for t in check.tries), ended_by_us)


def build_results(
    session: TestSession,
    groups: Mapping[str, ErrorGroupOutcome],
    ended_by_us: bool = False,
) -> list[ResultOutcome]:
    """One outcome per check and location; ATTEMPT results fold into their FINAL result (see
    `result_verdict` for `ended_by_us`)."""
    return [check_outcome(session, check, groups, ended_by_us) for check in check_rows(session)]


def check_outcome(
    session: TestSession,
    check: CheckRows,
    groups: Mapping[str, ErrorGroupOutcome],
    ended_by_us: bool = False,
) -> ResultOutcome:
    """The check's outcome, its messages and known/new from the `groups` read so far."""
    result, tries = check.row, check.tries
    failed_tries = [t for t in tries if t.status != "PASSED"]
    verdict = result_verdict(result, bool(failed_tries), ended_by_us)
    knowledge = UNKNOWN
    if verdict in ("failed", "error", "degraded"):
        read = [groups[g] for g in result.errorGroupIds if g in groups]
        if len(read) == len(result.errorGroupIds):
            knowledge = classify(read, session.startedAt)
    outcome = ResultOutcome(
        id=result.testSessionResultId,
        link=result.testSessionResultLink,
        checkId=result.checkId,
        name=result.name or result.checkId or result.testSessionResultId,
        checkType=result.checkType,
        runLocation=result.runLocation,
        status=result.status,
        verdict=verdict,
        durationSeconds=_duration(result),
        attempts=1 + len(tries),
        failedAttempts=[
            AttemptOutcome(
                id=t.testSessionResultId,
                link=t.testSessionResultLink,
                status=t.status,
                durationSeconds=_duration(t),
                error=failure_message(t, groups),
            )
            for t in failed_tries
        ],
        errorGroupIds=list(result.errorGroupIds),
        error=(
            _degraded_reason(result)
            if verdict == "degraded"
            else failure_message(result, groups) or _not_understood(result)
        ),
        known=knowledge.known,
        firstSeen=knowledge.firstSeen,
        lastSeenBefore=knowledge.lastSeenBefore,
        attachments=attachments(result),
        tests=checked_suite_tests((result.model_extra or {}).get("tests") or []),
        internalError=_internal_error(result),
    )
    return outcome
