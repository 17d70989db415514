"""`testsession merge`: the results.json of several jobs judged as one run. Pure, no I/O.

The parts are checked first, every problem at once, and a merge that cannot be whole fails closed
(exit 2, naming the part): a part of a split missing or given twice, parts of different check sets or
split differently (other durations), a check in two parts, parts judged by different gates, a part
only triggered (--detach), a part whose results are not the checks its header names (emptied, a result
deleted, copied or added: runner/job/merge_check.py), parts of different commits or builds of the
tool unless `allow_mixed`. Results of different runs (local checks and a cloud session, or two
sharded runs) are merged only when asked (`combine`); each session keeps where it ran (`origin`).

The merged outcome comes from `judge` (runner/job/run.py), the one path to a verdict: known or new
over the whole run (its start is the earliest session's), each session's code from its checks, the
run's code and verdict, all by runner/job/policy.py; a part that was cut short (timeout, signal)
makes the whole run so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner import __version__
from runner.core.errors import SpecError
from runner.core.exitcodes import ExitCode, most_severe
from runner.core.text import for_line
from runner.job.merge_check import (
    CUT_SHORT,
    common_commit,
    mixed_problems,
    part_problems,
    run_problems,
)
from runner.job.outcome import (
    BaselineOutcome,
    CheckRef,
    MergedPart,
    Origin,
    Outcome,
    ShardInfo,
    SlowerCheck,
)
from runner.job.policy import Gate
from runner.job.run import judge


@dataclass(frozen=True)
class Part:
    file: str
    outcome: Outcome

    @property
    def shard(self) -> ShardInfo | None:
        return self.outcome.shard

    @property
    def label(self) -> str:
        return f"{self.file} (shard {self.shard.label})" if self.shard else self.file


def _run_key(shard: ShardInfo) -> tuple[str, int]:
    return (shard.fingerprint, shard.total)


def problems(parts: Sequence[Part], combine: bool = False, allow_mixed: bool = False) -> list[str]:
    """Why these parts cannot be judged as one run; [] when they can."""
    found: list[str] = []
    if not parts:
        return ["merge: give at least one results.json"]
    runs: dict[tuple[str, int], list[Part]] = {}
    whole: list[Part] = []
    for part in parts:
        if part.outcome.verdict == "detached":
            found.append(f"{part.file}: a run only triggered (--detach): wait for it, then merge its results")
        if part.shard is None:
            whole.append(part)
        else:
            found += part_problems(part.label, part.outcome, part.shard)
            runs.setdefault(_run_key(part.shard), []).append(part)
    if not combine and (len(runs) > 1 or (runs and whole) or len(whole) > 1):
        described = ", ".join(_describe(p) for p in parts)
        found.append(
            f"merge: the files are not the parts of one sharded run ({described}); merge the parts of "
            "one run, or pass --combine to join different runs (each keeps where it ran)"
        )
    verified = not found
    for members in runs.values():
        split_found = _split_problems(members)
        found += split_found
        if verified and not split_found:  # every part of it once, each its own checks
            found += run_problems([(p.label, p.outcome, p.shard) for p in members if p.shard])
    found += _repeated_sessions(parts)
    if not allow_mixed:
        found += mixed_problems([(p.label, p.outcome) for p in parts])
    gates = {(p.outcome.failOn, p.outcome.failOnDegraded) for p in parts}
    if len(gates) > 1:
        described = ", ".join(
            f"{p.file}: failOn {p.outcome.failOn}, failOnDegraded {str(p.outcome.failOnDegraded).lower()}"
            for p in parts
        )
        found.append(f"merge: the parts were judged by different gates ({described}); run them with one gate")
    return list(dict.fromkeys(found))


def _describe(part: Part) -> str:
    if part.shard is None:
        if part.outcome.exitCode not in (ExitCode.OK, ExitCode.CHECKS_FAILED):  # ended before it split
            why = part.outcome.message or part.outcome.verdict
            return f"{part.file}: a run without a part, ended with exit code {part.outcome.exitCode}: {why}"
        return f"{part.file}: a whole run"
    s = part.shard
    return f"{part.file}: shard {s.label} of check set {s.fingerprint} ({s.matched} checks)"


def _split_problems(members: list[Part]) -> list[str]:
    """The parts of one sharded run: each part once, all parts, one split, each check in one part."""
    found: list[str] = []
    first = members[0].shard
    assert first is not None
    by_index: dict[int, list[Part]] = {}
    for part in members:
        assert part.shard is not None
        by_index.setdefault(part.shard.index, []).append(part)
    for index, holders in sorted(by_index.items()):
        if len(holders) > 1:
            files = ", ".join(p.file for p in holders)
            found.append(
                f"shard {index}/{first.total} of check set {first.fingerprint} is given twice: {files}"
            )
    missing = [i for i in range(1, first.total + 1) if i not in by_index]
    if missing:
        labels = ", ".join(f"{i}/{first.total}" for i in missing)
        have = ", ".join(p.label for p in sorted(members, key=lambda p: p.shard.index if p.shard else 0))
        found.append(
            f"shard {labels} of check set {first.fingerprint} ({first.matched} checks) "
            f"{'is' if len(missing) == 1 else 'are'} missing: given {have}; a merge without every part "
            "never passes"
        )
    splits = {p.shard.split for p in members if p.shard}
    if len(splits) > 1:
        files = ", ".join(f"{p.label}: split {p.shard.split}" for p in members if p.shard)
        found.append(
            f"the parts of check set {first.fingerprint} were split differently ({files}): each job read "
            "other durations (--shard-durations must name the same file in every job), so a check may "
            "have run twice or never"
        )
    seen: dict[tuple[str, str, str], Part] = {}
    for part in members:
        for session in part.outcome.sessions:
            for result in session.results:
                key = (session.name, result.runLocation or session.runLocation, result.checkId or result.name)
                other = seen.setdefault(key, part)
                if other is not part and not _same_part(other, part):
                    found.append(
                        f"check {result.name} ({key[1]}) ran in {other.label} and in {part.label}: "
                        "the parts overlap"
                    )
    return found


def _repeated_sessions(parts: Sequence[Part]) -> list[str]:
    """The same test session in two files: one run given twice (copied artifacts, a rerun job)."""
    found: list[str] = []
    owner: dict[str, Part] = {}
    for part in parts:
        for session in part.outcome.sessions:
            if not session.testSessionId:
                continue
            other = owner.setdefault(session.testSessionId, part)
            if other is not part and not _same_part(other, part):  # that one is said as "given twice"
                found.append(
                    f"{part.label} holds test session {session.testSessionId}, which {other.label} holds too:"
                    " the same run is given twice"
                )
    return found


def _same_part(one: Part, other: Part) -> bool:
    return one.shard is not None and other.shard is not None and one.shard.label == other.shard.label


def merge(parts: Sequence[Part], combine: bool = False, allow_mixed: bool = False) -> Outcome:
    """The parts as one judged run; SpecError (exit 2) with every problem when they cannot be one."""
    found = problems(parts, combine, allow_mixed)
    if found:  # file names and the parts' messages are text from outside: one clean line each
        raise SpecError([for_line(problem, 2000) for problem in found])
    gate = Gate.of(parts[0].outcome)
    sessions = []
    merged: list[MergedPart] = []
    for part in parts:
        shard = part.shard.label if part.shard else None
        origin = Origin(file=part.file, shard=shard, service=part.outcome.service)
        merged.append(
            MergedPart(**origin.model_dump(), verdict=part.outcome.verdict, exitCode=part.outcome.exitCode)
        )
        sessions += [s.model_copy(update={"origin": origin}) for s in part.outcome.sessions]
    services = {p.outcome.service for p in parts}
    starts = [p.outcome.startedAt for p in parts if p.outcome.startedAt is not None]
    draft = Outcome(
        toolVersion=__version__,
        startedAt=min(starts) if starts else None,
        commit=common_commit([p.outcome for p in parts]),
        sessions=sessions,
        service=services.pop() if len(services) == 1 else None,
        merged=merged,
        # Each part judged its quarantine on its day: a result keeps its `quarantined`, and an entry
        # one part saw expired is said once.
        expiredQuarantine=list({e.check: e for p in parts for e in p.outcome.expiredQuarantine}.values()),
    )
    cut = [p for p in parts if p.outcome.exitCode in CUT_SHORT]
    stop_code = most_severe([ExitCode(p.outcome.exitCode) for p in cut]) if cut else None
    reason = "; ".join(f"{p.label}: {p.outcome.message or p.outcome.verdict}" for p in cut) or None
    judged = judge(draft, gate, stop_code=stop_code, stop_reason=reason)
    baseline = _baseline([p.outcome.baseline for p in parts], len(parts))
    return judged.model_copy(update={"baseline": baseline}) if baseline else judged


def _ref_key(ref: CheckRef) -> tuple[str | None, str, str | None]:
    return (ref.checkId, ref.name, ref.runLocation)


def _baseline(summaries: list[BaselineOutcome | None], count: int) -> BaselineOutcome | None:
    """The parts' comparisons with one baseline as one: fixed and slower from every part, missing
    only what no part ran (each part misses the others' checks). None unless every part compared."""
    used = [s for s in summaries if s is not None]
    if not used or len(used) < count:
        return None
    if len({s.path for s in used}) > 1 or not all(s.used for s in used):
        first = used[0]
        why = next((s.warning for s in used if s.warning), None)
        why = why or "the parts compared with different baselines: no comparison"
        return BaselineOutcome(path=first.path, used=False, warning=why)
    missing = {_ref_key(r): r for r in used[0].missing}
    for summary in used[1:]:
        keys = {_ref_key(r) for r in summary.missing}
        missing = {k: r for k, r in missing.items() if k in keys}
    fixed = {_ref_key(r): r for s in used for r in s.fixed}
    slower: dict[tuple[str | None, str, str | None], SlowerCheck] = {
        _ref_key(r): r for s in used for r in s.slower
    }
    return BaselineOutcome(
        path=used[0].path,
        used=True,
        warning=next((s.warning for s in used if s.warning), None),
        missing=list(missing.values()),
        fixed=list(fixed.values()),
        slower=list(slower.values()),
    )
