"""The time the regular expressions of one attempt's assertions may take together.

Apart from the matching (bounded.py), so that evaluating assertions sets a budget without loading
the `regex` module and python-jsonpath, which only regex and JSON assertions need.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

DEFAULT_REGEX_SECONDS = 5.0  # the budget when the caller gives none (Limits.regex_max_seconds)


@dataclass(frozen=True)
class RegexBudget:
    """The time the regexes of one attempt's assertions may take together (monotonic `until`)."""

    seconds: float
    until: float

    @classmethod
    def start(cls, seconds: float) -> RegexBudget:
        return cls(seconds, time.monotonic() + seconds)

    def left(self) -> float:
        # Never 0: the regex module would read a zero timeout as none at all.
        return max(self.until - time.monotonic(), 0.001)

    def exceeded(self, where: str = "") -> str:
        shown = f"{self.seconds:.1f}".removesuffix(".0")
        return (
            f"regex took longer than {shown} s{where} (the time this attempt had left for its "
            "regular expressions): a pattern that backtracks, such as a nested repeat like (a|aa)+, "
            "needs rewriting"
        )


# The budget of the assertions being evaluated on this thread; JSONPath's filter hooks read it.
_BUDGET: contextvars.ContextVar[RegexBudget | None] = contextvars.ContextVar("regex_budget", default=None)


def budget_of() -> RegexBudget:
    """The budget of the assertions being evaluated on this thread (a default one outside)."""
    return _BUDGET.get() or RegexBudget.start(DEFAULT_REGEX_SECONDS)


@contextmanager
def regex_budget(budget: RegexBudget) -> Iterator[None]:
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)
