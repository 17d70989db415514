"""A run split over CI jobs (`--shard i/n`): which of the matched checks this part runs.

The matched set is what the service would run for each session of the spec: the account's checks that
the session's target selects (`Target.selects`, the emulator's own rule). Each (session, check) is a
unit; the units are split into n parts and part i is triggered as the sessions' own bodies with
`target.checkId` narrowed to its units (a session with none in this part is not triggered).

- Deterministic: the same set (and the same durations) gives the same split in every job, so a per-shard
  `--state` in a CI cache keeps seeing the same checks. Durations are rounded onto a ladder (steps of
  25%) so that most of a run's jitter does not move checks between parts (a duration that crosses a
  step does: pin the durations file, e.g. refresh it weekly, where the parts keep their own state).
- Balanced: longest first, each unit to the part with the least work so far (ties: the lowest part);
  with durations of an earlier run (a results.json, or a state file) the work is seconds, a
  check without one weighs the median; without durations every check weighs the same.
- Checked: each part records the set's size, a fingerprint of it, one of its own checks and one of the
  assignment (`ShardInfo`): `testsession merge` verifies each part's results against its own header
  and the parts against each other (runner/job/merge_check.py), and refuses a part that does not add up.
- A session whose target matches nothing is triggered unchanged by part 1 only, so the service's own
  no-match answer is judged once, as in a run that is not split.
"""

from __future__ import annotations

import hashlib
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.core.errors import UsageError
from runner.job.baseline import BaselineWarning, load_baseline
from runner.job.outcome import MAX_SHARDS, ResultOutcome, ShardInfo
from runner.job.source import ResultSource
from runner.models import Target, TriggerRequest
from runner.models.sessions import UUID_PATTERN

# GitLab's `parallel: N` sets these (1-based index); `--shard auto` reads them.
CI_NODE_INDEX = "CI_NODE_INDEX"
CI_NODE_TOTAL = "CI_NODE_TOTAL"
AUTO = "auto"
LADDER = 1.25  # durations are rounded to the nearest power of this: 1.0, 1.25, 1.56, 1.95, ...
SQLITE_HEADER = b"SQLite format 3\x00"
_PART = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*$")
_UUID = re.compile(UUID_PATTERN)


@dataclass(frozen=True)
class Shard:
    """Part `index` (1-based) of `total`."""

    index: int
    total: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text: str, environ: Mapping[str, str], where: str = "--shard") -> Shard:
    """'i/n', or 'auto': GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (`parallel: N`). UsageError naming `where`."""
    if text.strip() == AUTO:
        node, nodes = environ.get(CI_NODE_INDEX), environ.get(CI_NODE_TOTAL)
        if not node or not nodes:
            raise UsageError(
                f"{where} auto: {CI_NODE_INDEX} and {CI_NODE_TOTAL} are not set (GitLab sets them in a "
                "job with `parallel: N`); elsewhere give the part as i/n, e.g. --shard 2/4"
            )
        text, where = f"{node}/{nodes}", f"{where} auto ({CI_NODE_INDEX}={node}, {CI_NODE_TOTAL}={nodes})"
    found = _PART.match(text)
    if not found:
        raise UsageError(f"{where}: {text[:40]!r} is not a part: give i/n, e.g. 2/4, or auto")
    index, total = int(found.group(1)), int(found.group(2))
    if not 1 <= total <= MAX_SHARDS or not 1 <= index <= total:
        raise UsageError(f"{where}: {index}/{total}: the part must be 1 to n, and n 1 to {MAX_SHARDS}")
    return Shard(index, total)


@dataclass(frozen=True, order=True)
class Unit:
    """One check of one session of the spec: what is split."""

    session: int  # the session's index in the spec
    check_id: str
    key: str  # the session's name and location and the check id: what the fingerprint covers
    location: str


@dataclass(frozen=True)
class Durations:
    """Seconds a check took in an earlier run, by (check id, location) and by check id alone."""

    by_location: Mapping[tuple[str, str], float]
    by_check: Mapping[str, float]
    source: str | None = None
    warning: str | None = None

    def of(self, unit: Unit) -> float | None:
        found = self.by_location.get((unit.check_id, unit.location))
        return found if found is not None else self.by_check.get(unit.check_id)


NO_DURATIONS = Durations({}, {})


def durations_of(results: Sequence[ResultOutcome], source: str | None = None) -> Durations:
    by_location: dict[tuple[str, str], float] = {}
    by_check: dict[str, float] = {}
    for result in results:  # the last result of a check wins (the newest session of a state file)
        if result.checkId and result.durationSeconds is not None and result.durationSeconds >= 0:
            by_location[(result.checkId, result.runLocation or "")] = result.durationSeconds
            by_check[result.checkId] = result.durationSeconds
    return Durations(by_location, by_check, source)


def load_durations(path: str) -> Durations:
    """Durations from a results.json or a state file (`--state`); one that cannot be read gives a
    warning, and the split weighs every check the same (every part that cannot read it splits
    alike; one that can splits otherwise, which `testsession merge` refuses)."""
    from runner.core.files import read_regular

    try:  # a FIFO or device is refused before a byte is read (a FIFO nobody writes hung the run)
        header = read_regular(path, len(SQLITE_HEADER))[: len(SQLITE_HEADER)]
    except OSError as exc:
        return Durations({}, {}, path, f"shard durations {path}: {exc.strerror or exc}; split by count")
    if header == SQLITE_HEADER:
        from runner.job.verdicts import build_results
        from runner.state.store import recorded_sessions

        sessions = recorded_sessions(path)
        if isinstance(sessions, str):
            return Durations({}, {}, path, f"shard durations {path}: {sessions}; split by count")
        return durations_of([r for s in sessions for r in build_results(s, {})], path)
    loaded = load_baseline(path)
    if isinstance(loaded, BaselineWarning):
        why = loaded.warning.replace("; comparing without a baseline", "").removeprefix("baseline ")
        return Durations({}, {}, path, f"shard durations {why}; split by count")
    return durations_of(loaded.results, path)


def _rounded(seconds: float) -> float:
    """On the ladder: runs a little faster or slower than the last one split alike."""
    if seconds <= 0.01:
        return 0.01
    return round(LADDER ** round(math.log(seconds, LADDER)), 3)


def _digest(lines: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def _order(unit: Unit) -> str:
    return hashlib.sha256(unit.key.encode("utf-8")).hexdigest()


def weights(units: Sequence[Unit], durations: Durations) -> dict[Unit, float]:
    known = [d for u in units if (d := durations.of(u)) is not None]
    default = statistics.median(known) if known else 1.0
    return {u: _rounded(d if (d := durations.of(u)) is not None else default) for u in units}


def split(units: Sequence[Unit], total: int, durations: Durations = NO_DURATIONS) -> list[list[Unit]]:
    """The units in `total` parts: longest first (ties in the order of a hash of the unit, which
    spreads the checks of one session), each to the part with the least work so far."""
    weight = weights(units, durations)
    loads = [0.0] * total
    parts: list[list[Unit]] = [[] for _ in range(total)]
    for unit in sorted(set(units), key=lambda u: (-weight[u], _order(u))):
        part = min(range(total), key=lambda i: (round(loads[i], 6), i))
        parts[part].append(unit)
        loads[part] += weight[unit]
    return [sorted(part) for part in parts]


def fingerprint(units: Sequence[Unit]) -> str:
    return key_fingerprint([u.key for u in units])


def key_fingerprint(keys: Sequence[str]) -> str:
    """Of a set of unit keys: the whole matched set's, or one part's own (`ShardInfo.own`)."""
    return _digest(sorted(keys))


def split_fingerprint(parts: Sequence[Sequence[str]]) -> str:
    """Of the assignment: each part's unit keys, in part order. From keys alone, so that a merge can
    compute it again from the parts' results."""
    return _digest([f"{i}\t{key}" for i, part in enumerate(parts) for key in sorted(part)])


def unit_key(session: str, location: str, check_id: str) -> str:
    """What identifies a unit: the session's name and location and the id the run gives the check.
    A part's results name the same three (`SessionOutcome.name`, `.runLocation`, `.checkId`)."""
    return f"{session}\x1f{location}\x1f{check_id}"


@dataclass(frozen=True)
class ShardPlan:
    requests: list[TriggerRequest]  # this part's sessions, narrowed to its checks
    info: ShardInfo


def _unit(session: int, request: TriggerRequest, check_id: str) -> Unit:
    key = unit_key(request.name, request.runLocation, check_id)
    return Unit(session, check_id, key, request.runLocation)


def _listed_tags(requests: Sequence[TriggerRequest]) -> list[str]:
    """Tags to list by (the list's filter: a check with at least one of them): every tag of every
    group when each session's target has tag groups, so a listing holds a superset of the matched set
    (the target's own rule is applied after); none (every check) when a session has none."""
    tags: list[str] = []
    for request in requests:
        if request.target is None or not request.target.matchTags:
            return []
        tags += [tag for group in request.target.matchTags for tag in group]
    return list(dict.fromkeys(tags))


def _ids_are_uuids(units: Sequence[Unit]) -> None:
    """A part is triggered with `target.checkId`, which takes check ids (uuids): a world or checks file
    whose `id:` is another text cannot be split (a check without `id:` gets a uuid made from its name)."""
    others = sorted({u.check_id for u in units if not _UUID.match(u.check_id)})
    if others:
        shown = ", ".join(repr(i[:40]) for i in others[:3]) + (
            f" and {len(others) - 3} more" if len(others) > 3 else ""
        )
        raise UsageError(
            f"--shard: a part names its checks by id, a uuid, and these ids are not: {shown}; give each "
            "check a uuid as its id, or leave `id:` out of a checks file (an id is made from the name)"
        )


def plan_shard(
    source: ResultSource, requests: Sequence[TriggerRequest], shard: Shard, durations: Durations
) -> ShardPlan:
    """This part's trigger bodies and what its results.json records of the split."""
    checks = source.list_checks(tags=_listed_tags(requests))
    units: list[Unit] = []
    unmatched: list[int] = []
    for index, request in enumerate(requests):
        target = request.target or Target()
        matched = [c.id for c in checks if target.selects(c.id, c.tags, c.activated is not False)]
        if not matched:
            unmatched.append(index)
        units += [_unit(index, request, check_id) for check_id in dict.fromkeys(matched)]
    _ids_are_uuids(units)
    parts = split(units, shard.total, durations)
    mine = parts[shard.index - 1]
    narrowed: list[TriggerRequest] = []
    for index, request in enumerate(requests):
        ids = [u.check_id for u in mine if u.session == index]
        if ids:
            allow = request.target.allowDeactivated if request.target else False
            target = Target(checkId=ids, allowDeactivated=allow)
            narrowed.append(request.model_copy(update={"target": target}))
        elif index in unmatched and shard.index == 1:
            narrowed.append(request)
    info = ShardInfo(
        index=shard.index,
        total=shard.total,
        matched=len(units),
        checks=len(mine),
        fingerprint=fingerprint(units),
        split=split_fingerprint([[u.key for u in part] for part in parts]),
        own=fingerprint(mine),
    )
    return ShardPlan(narrowed, info)
