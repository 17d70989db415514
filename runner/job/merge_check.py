"""What `testsession merge` verifies of each part of a sharded run before it judges them. Pure, no I/O.

A part's results.json is text from outside (a CI artifact or cache): a damaged or edited part must
never turn into exit 0. Each part is checked against its own header (`ShardInfo`, runner/job/shard.py):
its results are exactly its own checks, each once (their count and fingerprint; a result without a
check id or of a check the header does not name is refused), and the parts against each other: one
check set, one split, every check of the set in exactly one part (the fingerprints of the whole set and
of the split, computed again from the parts' results), and one commit and build of the tool.

A check is named by the id the run gives it (`ResultOutcome.checkId`) in its session (name and
location), as the split names it (`unit_key`). A part cut short (timeout, signal) may hold fewer
results than its header: its own exit code makes the merged run fail, so only what it holds is checked.

This is a check of consistency, not a signature: whoever rewrites every part and every fingerprint
consistently (the fingerprints are plain SHA-256) can still forge a run; the merge then judges what
the parts say. docs/reliability.md lists what is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from runner.core.exitcodes import ExitCode
from runner.core.words import counted
from runner.job.outcome import CommitInfo, Outcome, ShardInfo
from runner.job.shard import key_fingerprint, split_fingerprint, unit_key

# A part whose run was cut short: the merged run was too (its checks' results are not all there).
CUT_SHORT = (ExitCode.TIMEOUT, ExitCode.INTERRUPTED, ExitCode.TERMINATED)
_SHOWN = 3  # ids named in one problem; the rest are counted


def cut_short(outcome: Outcome) -> bool:
    return outcome.exitCode in CUT_SHORT


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def result_keys(outcome: Outcome) -> tuple[list[str], list[str]]:
    """The unit keys of a part's results, and the names of results that have no check id."""
    keys: list[str] = []
    unnamed: list[str] = []
    for session in outcome.sessions:
        for result in session.results:
            if result.checkId:
                keys.append(unit_key(session.name, session.runLocation, result.checkId))
            else:
                unnamed.append(result.name)
    return keys, unnamed


def part_problems(label: str, outcome: Outcome, shard: ShardInfo) -> list[str]:
    """What is wrong with one part against its own header; [] when its results are its checks."""
    found: list[str] = []
    if shard.own is None:
        return [
            f"{label}: its shard header does not name its own checks (written by an older testsession): "
            "run every part again with this version"
        ]
    if not 0 <= shard.checks <= shard.matched:
        found.append(f"{label}: its header says {shard.checks} of {shard.matched} checks: not a part")
    keys, unnamed = result_keys(outcome)
    if unnamed:
        found.append(f"{label}: {counted(len(unnamed), 'result')} without a check id: {_ids(unnamed)}")
    twice = [key for key, count in Counter(keys).items() if count > 1]
    if twice:
        named = [k.rsplit("\x1f", 1)[-1] for k in twice]
        found.append(f"{label}: a check holds more than one result (check {_ids(named)})")
    held = len(keys) + len(unnamed)
    if cut_short(outcome):
        if held > shard.checks:
            found.append(f"{label}: holds {held} results, more than the {shard.checks} checks of its header")
        return found
    if held != shard.checks:
        ended = outcome.exitCode not in (ExitCode.OK, ExitCode.CHECKS_FAILED)
        said = outcome.message or outcome.verdict
        why = f" (the part ended with exit code {outcome.exitCode}: {said})" if ended else ""
        found.append(
            f"{label}: holds {counted(held, 'result')}, but its header says the part ran "
            f"{counted(shard.checks, 'check')}{why}"
        )
    if not found and key_fingerprint(keys) != shard.own:
        found.append(
            f"{label}: its results are not the checks its header names (fingerprint "
            f"{key_fingerprint(keys)}, header {shard.own}): a result of another check is in it"
        )
    return found


def run_problems(members: Sequence[tuple[str, Outcome, ShardInfo]]) -> list[str]:
    """The parts of one sharded run (every part present once, each consistent with its header)
    against each other: together exactly the whole set, split as the header says."""
    first = members[0][2]
    counts = sum(s.checks for _, _, s in members)
    if {s.matched for _, _, s in members} != {first.matched} or counts != first.matched:
        described = ", ".join(f"{label}: {s.checks} of {s.matched}" for label, _, s in members)
        return [
            f"the parts of check set {first.fingerprint} do not add up to its {first.matched} checks "
            f"({described})"
        ]
    if any(cut_short(outcome) for _, outcome, _ in members):
        return []  # what a part cut short did not run is unknown; the merged run fails as cut short
    by_index = sorted(members, key=lambda m: m[2].index)
    keys = [result_keys(outcome)[0] for _, outcome, _ in by_index]
    found: list[str] = []
    if key_fingerprint([k for part in keys for k in part]) != first.fingerprint:
        found.append(
            f"the results of the parts together are not check set {first.fingerprint}: a part's results "
            "and header were changed together"
        )
    elif split_fingerprint(keys) != first.split:
        found.append(
            f"the parts' results are not split as their headers say (split {first.split}): a check was "
            "moved from one part to another"
        )
    return found


def _commit(outcome: Outcome) -> tuple[str | None, str | None]:
    return (outcome.commit.commitId, outcome.commit.repoUrl)


def mixed_problems(parts: Sequence[tuple[str, Outcome]]) -> list[str]:
    """Parts of different commits or made by different builds of testsession."""
    found: list[str] = []
    if len({_commit(o) for _, o in parts}) > 1:
        described = ", ".join(f"{label}: {o.commit.commitId or 'no commit'}" for label, o in parts)
        found.append(
            f"merge: the parts are of different commits ({described}); merge the parts of one commit, "
            "or pass --allow-mixed-commits"
        )
    if len({o.toolVersion for _, o in parts}) > 1:
        described = ", ".join(f"{label}: {o.toolVersion or 'unknown'}" for label, o in parts)
        found.append(
            f"merge: the parts were made by different versions of testsession ({described}); run every "
            "part with one version, or pass --allow-mixed-commits"
        )
    return found


def common_commit(outcomes: Sequence[Outcome]) -> CommitInfo:
    """The commit every part names; where they differ (--allow-mixed-commits), only what they share."""
    fields = CommitInfo.model_fields
    shared = {
        name: values.pop()
        for name in fields
        if len(values := {getattr(o.commit, name) for o in outcomes}) == 1
    }
    return CommitInfo(**shared)
