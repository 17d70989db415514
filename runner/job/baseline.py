"""The baseline: this run's results against an earlier run's results.json. Pure, but for reading the file.

A baseline that cannot be used (missing, unreadable, not JSON, another schema version, not a results
file) gives one warning line and the run goes on without it: it never changes the exit code by itself.

Results are matched by (checkId, runLocation); a result without a checkId is matched by (name,
runLocation). Which results count as failing, here and now, is the policy's `failing_verdict`, applied to
both runs with this run's failOnDegraded: the question is "did it fail then by today's rule".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from runner.core.files import NotRegularFile, read_regular
from runner.job.outcome import (
    SCHEMA_VERSION,
    BaselineMark,
    BaselineOutcome,
    CheckRef,
    Outcome,
    ResultOutcome,
    SlowerCheck,
)
from runner.job.policy import UNFINISHED, failing_verdict

MAX_BASELINE_BYTES = 64 * 1024 * 1024  # a results.json of 10,000 checks with analyses is ~20 MB
SLOWER_MIN_SECONDS = 1.0  # below this, both runs are too fast for a ratio to mean anything
SLOWER_RATIO = 1.5


@dataclass(frozen=True)
class Baseline:
    path: str
    results: list[ResultOutcome]
    warning: str | None = None  # usable, but with a caveat (a partial run)


@dataclass(frozen=True)
class BaselineWarning:
    """A baseline that cannot be used: `warning` is the one line to show."""

    path: str
    warning: str


@dataclass
class Comparison:
    marks: list[BaselineMark]  # one per result, in order
    summary: BaselineOutcome
    missing: list[ResultOutcome] = field(default_factory=list)


def _unusable(path: str, why: str) -> BaselineWarning:
    return BaselineWarning(path, f"baseline {path}: {why}; comparing without a baseline")


def _read(path: str) -> bytes | BaselineWarning:
    try:
        data = read_regular(path, MAX_BASELINE_BYTES)
    except NotRegularFile:  # a FIFO nobody writes to would hold the run before the trigger
        return _unusable(path, "not a regular file, expected a results.json file")
    except FileNotFoundError:
        return _unusable(path, "no such file")
    except IsADirectoryError:
        return _unusable(path, "is a directory, expected a results.json file")
    except OSError as exc:
        return _unusable(path, f"cannot read it ({exc.strerror or exc})")
    if len(data) > MAX_BASELINE_BYTES:
        return _unusable(path, f"larger than {MAX_BASELINE_BYTES // (1024 * 1024)} MiB")
    return data


def load_baseline(path: str) -> Baseline | BaselineWarning:
    """The results of an earlier run's results.json, or a BaselineWarning saying why not."""
    data = _read(path)
    if isinstance(data, BaselineWarning):
        return data
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        return _unusable(path, f"not UTF-8 text (bad byte at offset {exc.start})")
    except ValueError as exc:
        return _unusable(path, f"not valid JSON ({str(exc).splitlines()[0]})")
    if not isinstance(document, dict):
        return _unusable(path, "not a testsession results file (expected a JSON object)")
    version = document.get("schemaVersion")
    if "schemaVersion" not in document:
        return _unusable(path, "not a testsession results file (no schemaVersion)")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        shown = json.dumps(version)[:40]
        return _unusable(path, f"schemaVersion {shown}; this testsession reads {SCHEMA_VERSION}")
    if not isinstance(document.get("sessions"), list):
        return _unusable(path, "not a testsession results file (no sessions list)")
    try:
        outcome = Outcome.model_validate(document)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return _unusable(path, f"not a testsession results file: {where}: {first['msg']}{more}")
    warning = None
    if outcome.partial:
        warning = (
            f"baseline {path} is a partial run ({outcome.verdict}): "
            "its unfinished checks count as failing (a failure now is new, not known), checks it never "
            "reached as new"
        )
    return Baseline(path=path, results=outcome.all_results(), warning=warning)


def _match(results: Sequence[ResultOutcome], earlier: Sequence[ResultOutcome]) -> list[int | None]:
    """For each result, the index of its baseline result (each used at most once), or None.

    By (checkId, runLocation) first, so that a renamed check still matches; then by (name,
    runLocation) where either side has no checkId. Two results with different check ids never match.
    """
    by_id: dict[tuple[str, str | None], list[int]] = {}
    for index, then in enumerate(earlier):
        if then.checkId:
            by_id.setdefault((then.checkId, then.runLocation), []).append(index)
    pairs: list[int | None] = [None] * len(results)
    for i, now in enumerate(results):
        free = by_id.get((now.checkId, now.runLocation)) if now.checkId else None
        if free:
            pairs[i] = free.pop(0)
    used = {index for index in pairs if index is not None}
    by_name: dict[tuple[str, str | None], list[int]] = {}
    for index, then in enumerate(earlier):
        if index not in used:
            by_name.setdefault((then.name, then.runLocation), []).append(index)
    for i, now in enumerate(results):
        if pairs[i] is not None:
            continue
        free = by_name.get((now.name, now.runLocation), [])
        found = next((j for j in free if not (now.checkId and earlier[j].checkId)), None)
        if found is not None:
            free.remove(found)
            pairs[i] = found
    return pairs


def _ref(result: ResultOutcome) -> CheckRef:
    return CheckRef(checkId=result.checkId, name=result.name, runLocation=result.runLocation)


def mark(now_fails: bool, then_fails: bool | None) -> BaselineMark:
    """The mark of one result; `then_fails` None when the baseline has no such check."""
    if then_fails is None:
        return "new-check"
    if now_fails:
        return "still-failing" if then_fails else "newly-failing"
    return "fixed" if then_fails else "still-passing"


def is_slower(now: float | None, then: float | None) -> bool:
    if now is None or then is None:
        return False
    return now >= SLOWER_MIN_SECONDS and then >= SLOWER_MIN_SECONDS and now >= SLOWER_RATIO * then


def compare(
    results: Sequence[ResultOutcome], baseline: Baseline, fail_on_degraded: bool = False
) -> Comparison:
    """Marks for this run's results, plus the checks missing now, the fixed ones and the slower ones."""
    pairs = _match(results, baseline.results)
    summary = BaselineOutcome(path=baseline.path, used=True, warning=baseline.warning)
    marks: list[BaselineMark] = []
    for result, index in zip(results, pairs, strict=True):
        then = baseline.results[index] if index is not None else None
        then_fails = failing_verdict(then, fail_on_degraded) if then is not None else None
        marks.append(mark(failing_verdict(result, fail_on_degraded), then_fails))
        if marks[-1] == "still-failing" and then is not None and then.verdict in UNFINISHED:
            # Unfinished then, seen failing now: nobody saw it fail before, so it is not known.
            marks[-1] = "still-failing" if result.verdict in UNFINISHED else "newly-failing"
        if marks[-1] == "fixed":
            summary.fixed.append(_ref(result))
        if then is not None and is_slower(result.durationSeconds, then.durationSeconds):
            assert result.durationSeconds is not None and then.durationSeconds is not None
            summary.slower.append(
                SlowerCheck(
                    **_ref(result).model_dump(),
                    baselineSeconds=then.durationSeconds,
                    durationSeconds=result.durationSeconds,
                )
            )
    matched = {index for index in pairs if index is not None}
    missing = [r for i, r in enumerate(baseline.results) if i not in matched]
    summary.missing = [_ref(r) for r in missing]
    return Comparison(marks=marks, summary=summary, missing=missing)


def mark_baseline(outcome: Outcome, loaded: Baseline | BaselineWarning | None) -> Outcome:
    """A copy of `outcome` with every result's `baseline` mark and `outcome.baseline` set.

    None (no --baseline): unchanged. A BaselineWarning: `outcome.baseline` carries the warning, the
    results no mark.
    """
    if loaded is None:
        return outcome
    marked = outcome.model_copy(deep=True)
    if isinstance(loaded, BaselineWarning):
        marked.baseline = BaselineOutcome(path=loaded.path, used=False, warning=loaded.warning)
        return marked
    results = marked.all_results()
    comparison = compare(results, loaded, marked.failOnDegraded)
    for result, result_mark in zip(results, comparison.marks, strict=True):
        result.baseline = result_mark
    marked.baseline = comparison.summary
    return marked
