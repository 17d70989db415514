"""The wall clock of what a run records and decides by the day: the history's times (the state
file) and whether a quarantine still holds. One seam: `now` is read through this module, so a test
sets the day by replacing `clock.now` (e.g. pytest's monkeypatch), never by an environment variable
a user's runner would not have."""

from __future__ import annotations

from datetime import date, datetime, timezone


def now() -> datetime:
    """The current moment, in UTC."""
    return datetime.now(timezone.utc)


def today() -> date:
    """The current day in UTC: a quarantine's `until` is a day in UTC, the same on every runner."""
    return now().date()
