"""Counted words, the same in every output: "1 check", "2 checks", "1 second", "3 days".

One helper so that no message says "1 checks" or "1 seconds" again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"analysis": "analyses", "is": "are", "was": "were", "it": "they"}

# The units of `span`, largest first.
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`noun` for a count of 1, else its plural: `nouns` when given, else the last word made plural
    ("root cause analysis" -> "root cause analyses", "known failure" -> "known failures")."""
    if count == 1:
        return noun
    if nouns:
        return nouns
    head, _, last = noun.rpartition(" ")
    many = _IRREGULAR.get(last) or f"{last}s"
    return f"{head} {many}" if head else many


def counted(count: int, noun: str, nouns: str | None = None) -> str:
    """'1 check', '0 checks', '2 analyses'."""
    return f"{count} {plural(count, noun, nouns)}"


def first_of(items: Sequence[str], most: int) -> str:
    """'a, b, c and 4 more': the first `most` items, then how many were left out."""
    more = len(items) - most
    return ", ".join(items[:most]) + (f" and {more} more" if more > 0 else "")


def span(seconds: float) -> str:
    """'3 days', '5 hours', '1 minute', '1 second', '0 seconds': in the largest whole unit."""
    value = seconds if math.isfinite(seconds) and seconds > 0 else 0.0
    for unit, size in _UNITS:
        if value >= size:
            return counted(int(value // size), unit)
    return counted(0, "second")
