"""Known or new: was a failure already there before this run? Pure functions, no I/O.

The service keeps a test-session error group across sessions (same check, same cleaned message) with
`firstSeen` and `lastSeen`. A group first seen before this run's sessions started was there before this
build: the failure is `known`. Otherwise it is `new`.

What can be known and what cannot:
- `firstSeen` is exact and does not move: it answers "known or new".
- `lastSeen` is when the group was seen last. Once a session of this run has hit the group, the service
  moves it to now, and the time it was seen before this run is gone: no field keeps it. So
  `lastSeenBefore` is the group's `lastSeen` only while it is still before this run started (the
  service had not recorded this run's failure yet when the group was read); otherwise it is None.
  It is never guessed from `firstSeen`.
- Both times come from the service's clock, as do the sessions' `startedAt`: they are compared with
  each other, never with the runner's clock, so a skewed CI machine cannot turn new into known.
- "This run started" is the earliest `startedAt` of the run's sessions: a group first seen by a sibling
  session of the same run (another location) is new too.
- A group that was not read (beyond the groups read per session, or its read failed) has no times: a
  result whose groups are all known but one unread cannot be told, `known` is None, and the gate must
  never forgive it.

A local run (job/local.py) has no service: its groups are job/local_groups.py's, kept in the state
file, and their times and the sessions' `startedAt` all come from this machine's clock, so they are
still compared with each other only. Without a state file every group is this run's: new.

That is the error group's half. The baseline (runner/job/baseline.py) is the other; the policy's
`novelty` weighs the two once, and `history` below is what every output shows of it: the console,
the markdown, the JUnit and the comment only format a `History`, the digest carries one per failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import NamedTuple

from runner.core.words import span
from runner.job.outcome import BaselineMark, ErrorGroupOutcome, Outcome, ResultOutcome
from runner.job.policy import Novelty, failing_verdict, novelty


class Knowledge(NamedTuple):
    known: bool | None  # None: cannot be told
    firstSeen: datetime | None = None
    lastSeenBefore: datetime | None = None


UNKNOWN = Knowledge(known=None)

# What every output says of a failure whose history cannot be told, beside its counts of new and known.
UNTOLD = "cannot be told"


def _utc(moment: datetime) -> datetime:
    """The service writes UTC ("Z"); a time without a zone is taken as UTC, never as local time."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def classify(groups: Sequence[ErrorGroupOutcome], since: datetime | None) -> Knowledge:
    """Known or new for a failing result with these error groups, this run having started at `since`.

    New when any group was first seen at or after `since` (the result carries an error this run
    introduced); known when every group was first seen before it; unknown (None) without a start time,
    without groups, or when a group was not read and none is new.
    """
    if since is None or not groups:
        return UNKNOWN
    start = _utc(since)
    first_seen = [(_utc(g.firstSeen), g) for g in groups if g.firstSeen is not None]
    new = [seen for seen, _g in first_seen if seen >= start]
    if new:
        return Knowledge(known=False, firstSeen=min(new))
    if len(first_seen) < len(groups):
        return UNKNOWN
    before = [_utc(g.lastSeen) for _s, g in first_seen if g.lastSeen is not None and _utc(g.lastSeen) < start]
    return Knowledge(
        known=True,
        firstSeen=min(seen for seen, _g in first_seen),
        lastSeenBefore=max(before) if before else None,
    )


def run_start(outcome: Outcome) -> datetime | None:
    """The earliest `startedAt` of the run's sessions (the service's clock); None when none started."""
    starts = [_utc(s.startedAt) for s in outcome.sessions if s.startedAt is not None]
    return min(starts) if starts else None


def mark_known(outcome: Outcome) -> Outcome:
    """A copy of `outcome` with known, firstSeen and lastSeenBefore set on every failing result.

    Passing results keep `known: None`. Which results fail is the policy's `failing_verdict`. Only
    what changes is copied (a result whose knowledge is new, its session, the outcome): the rest is
    shared with `outcome`, whose results are values never changed in place (a deep copy of 10,000
    results took most of a second)."""
    since = run_start(outcome)
    sessions = []
    for session in outcome.sessions:
        groups = {group.id: group for group in session.errorGroups}
        results = []
        for result in session.results:
            if not failing_verdict(result, outcome.failOnDegraded):
                knowledge = Knowledge(known=None)
            else:
                read = [groups.get(gid) or ErrorGroupOutcome(id=gid) for gid in result.errorGroupIds]
                knowledge = classify(read, since)
            update = {
                "known": knowledge.known,
                "firstSeen": knowledge.firstSeen,
                "lastSeenBefore": knowledge.lastSeenBefore,
            }
            if any(getattr(result, name) != value for name, value in update.items()):
                result = result.model_copy(update=update)
            results.append(result)
        sessions.append(session.model_copy(update={"results": results}))
    return outcome.model_copy(update={"sessions": sessions})


class History(NamedTuple):
    """Known or new of one failing result, as every output shows it.

    `novelty` is the policy's decision; the rest are the facts it came from. `age` is how long
    before the run's start the error was first seen ("3 days", "1 second"), None when it was not
    first seen before it."""

    novelty: Novelty
    known: bool | None  # the error group's half: None when it cannot be told
    baseline: BaselineMark | None  # the baseline's half: None without a usable baseline
    first_seen: datetime | None = None
    last_seen_before: datetime | None = None
    age: str | None = None

    @property
    def label(self) -> str:
        """'known', 'new', or 'new or known' when it cannot be told."""
        return "new or known" if self.novelty == "untold" else self.novelty

    @property
    def tag(self) -> str:
        """The console's short mark beside a failure: 'known since 3 days', 'new'; '' when untold."""
        if self.novelty == "known":
            return f"known since {self.age}" if self.age else "known"
        return "new" if self.novelty == "new" else ""

    @property
    def reason(self) -> str:
        """Why, in one clause: 'its error was first seen 3 days before this run'."""
        if self.age:
            seen_before = f"its error was first seen {self.age} before this run"
        else:
            seen_before = "its error was seen before this run"
        if self.novelty == "untold":
            return f"{UNTOLD} (no error group with a history was read, and no baseline says)"
        if self.known is False:
            if self.baseline == "still-failing":
                return "its error was first seen in this run, though the check failed in the baseline too"
            if self.baseline == "newly-failing":
                return "its error was first seen in this run, and the check passed in the baseline"
            return "its error was first seen in this run"
        if self.baseline == "newly-failing":
            return "the check passed in the baseline" + (f" ({seen_before})" if self.known else "")
        if self.known and self.baseline == "still-failing":
            return f"{seen_before}, and the check failed in the baseline too"
        if self.known:
            return seen_before
        return "the check was already failing in the baseline"

    @property
    def sentence(self) -> str:
        """'Known failure: its error was first seen 3 days before this run.' (the JUnit's line)."""
        if self.novelty == "untold":
            return f"New or known: {self.reason}; the gate counts it as new."
        return f"{self.label.capitalize()} failure: {self.reason}."


def history(result: ResultOutcome, since: datetime | None) -> History:
    """The history of a failing result, the run having started at `since` (the service's clock)."""
    age = None
    if result.firstSeen is not None and since is not None:
        seconds = (_utc(since) - _utc(result.firstSeen)).total_seconds()
        # Under a second: seen earlier in this run (a retry), not an age worth a number.
        age = span(seconds) if seconds >= 1 else None
    return History(
        novelty=novelty(result),
        known=result.known,
        baseline=result.baseline,
        first_seen=result.firstSeen,
        last_seen_before=result.lastSeenBefore,
        age=age,
    )
