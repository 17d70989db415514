"""Quarantine: which entries hold for this run, decided once at its start. Pure functions, no I/O.

An entry (runner/models/quarantine.py) names a check by its name or id, an owner and the last day
it holds. At the run's start, with the run's day (the clock seam, runner/core/clock.py):
- an entry naming no check of the run, or ending more than MAX_QUARANTINE_DAYS ahead, is refused
  (SpecError, exit 2, every problem at once, a did-you-mean for names);
- an entry whose day has passed is expired: its check gates again, and the run says so in one line
  naming the owner;
- the others hold: their check runs as always, and its result carries `quarantined`, which the
  policy (runner/job/policy.py) reads: such a failure does not fail the gate.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from runner.core.errors import SpecError
from runner.core.text import for_line
from runner.job.outcome import ExpiredQuarantine, Outcome, QuarantineOutcome, ResultOutcome
from runner.models.quarantine import MAX_QUARANTINE_DAYS, QuarantineEntry


@dataclass(frozen=True)
class Quarantine:
    """The entries of one run: those that hold by the check names and ids they cover, and the expired."""

    holding: dict[str, QuarantineOutcome] = field(default_factory=dict)
    expired: tuple[ExpiredQuarantine, ...] = ()

    def of(self, result: ResultOutcome) -> QuarantineOutcome | None:
        if result.checkId and result.checkId in self.holding:
            return self.holding[result.checkId]
        return self.holding.get(result.name)

    def __bool__(self) -> bool:
        return bool(self.holding or self.expired)


NONE = Quarantine()


def resolve(
    entries: Sequence[QuarantineEntry],
    checks: Iterable[tuple[str | None, str]] | None,
    today: date,
    source: str,
) -> Quarantine:
    """The entries against the run's checks (id, name) on `today`; `checks` None when the run cannot
    know its checks before they ran (the service's): no entry is then refused for its name.
    SpecError naming `source` and the entry for every problem."""
    ids: set[str] = set()
    names: set[str] = set()
    for check_id, name in checks or ():
        if check_id:
            ids.add(check_id)
        names.add(name)
    last_day = today + timedelta(days=MAX_QUARANTINE_DAYS)
    problems: list[str] = []
    holding: dict[str, QuarantineOutcome] = {}
    expired: list[ExpiredQuarantine] = []
    first: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{source}: quarantine[{index}]"
        if entry.check in first:
            problems.append(
                f"{where}.check: {for_line(entry.check, 120)!r} is quarantined already by "
                f"quarantine[{first[entry.check]}]: one entry per check"
            )
        first.setdefault(entry.check, index)
        if checks is not None and entry.check not in ids and entry.check not in names:
            close = difflib.get_close_matches(entry.check, sorted(names | ids), n=1, cutoff=0.6)
            hint = f"; did you mean {for_line(close[0], 120)!r}?" if close else ""
            problems.append(
                f"{where}.check: {for_line(entry.check, 120)!r} names no check of this run "
                f"(give a check's name or id){hint}"
            )
        if entry.until > last_day:
            problems.append(
                f"{where}.until: {entry.until.isoformat()} is more than {MAX_QUARANTINE_DAYS} days ahead "
                f"(the latest allowed today is {last_day.isoformat()}): a quarantine ends, or the check "
                "is fixed or removed"
            )
        held = QuarantineOutcome(owner=entry.owner, reason=entry.reason, until=entry.until)
        if entry.until < today:
            expired.append(ExpiredQuarantine(check=entry.check, **held.model_dump()))
        else:
            holding[entry.check] = held
    if problems:
        raise SpecError(problems)
    return Quarantine(holding, tuple(expired))


def mark_quarantined(outcome: Outcome, quarantine: Quarantine) -> Outcome:
    """A copy of `outcome` whose results of quarantined checks carry their quarantine, with the
    expired entries recorded. Results marked already (a part of a merged run) keep their mark."""
    if not quarantine:
        return outcome
    sessions = []
    for session in outcome.sessions:
        results = []
        for result in session.results:
            held = quarantine.of(result)
            if held is not None and result.quarantined is None:
                result = result.model_copy(update={"quarantined": held})
            results.append(result)
        sessions.append(session.model_copy(update={"results": results}))
    return outcome.model_copy(
        update={"sessions": sessions, "expiredQuarantine": [*outcome.expiredQuarantine, *quarantine.expired]}
    )


def expired_line(entry: ExpiredQuarantine) -> str:
    """The one line a run prints of an expired entry (raw text: the output sanitises it)."""
    return (
        f"quarantine of {entry.check} (owner {entry.owner}, until {entry.until.isoformat()}) has expired: "
        "the check gates again; fix it, or renew the entry in review"
    )
