"""Regular expressions and JSONPath with every match bounded in wall-clock time (assertions.py says
why and how: the `regex` module's timeout, a thread past INLINE_SECONDS, the attempt's budget).

Loaded with the first assertion that needs it: `regex` and python-jsonpath are a tenth of a second of
imports that a run of status-code and header assertions never pays.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

import jsonpath
import regex

from runner.checks.regex_budget import RegexBudget, budget_of


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, flags: int) -> Any:
    return regex.compile(pattern, flags)


# A match that needs more CPU time than this moves to a thread of its own (below); nearly every match
# of a sane pattern ends well within it, on the caller's thread, without a thread's cost.
INLINE_SECONDS = 0.05


def bounded(pattern: Any, method: str, text: str) -> Any:
    """pattern.search/fullmatch(text) within the budget; TimeoutError when it runs out. The GIL is
    released while it matches (concurrent=True): the process's deadline and signals keep working.

    The regex module's timeout counts the process's CPU time (C clock()), not the wall clock: on a
    loaded machine 1 s of it took 4-7 s. So a match that outgrows INLINE_SECONDS is run again on a
    daemon thread with the budget's CPU time, and waited for at most the budget's wall time; past that
    it is abandoned (its own CPU timeout ends it soon after) and the assertion fails at the bound."""
    if isinstance(pattern, re.Pattern):  # compiled by python-jsonpath with re: read again by regex
        pattern = _compiled(pattern.pattern, pattern.flags)
    call = getattr(pattern, method)
    budget = budget_of()
    left = budget.left()
    try:
        return call(text, timeout=min(left, INLINE_SECONDS), concurrent=True)
    except TimeoutError:
        if left <= INLINE_SECONDS:
            raise
    return _on_a_thread(call, text, budget)


def _on_a_thread(call: Any, text: str, budget: RegexBudget) -> Any:
    left = budget.left()
    outcome: list[tuple[bool, Any]] = []

    def match() -> None:
        try:
            outcome.append((True, call(text, timeout=left, concurrent=True)))
        except Exception as exc:  # TimeoutError, or anything the engine raises: handed back
            outcome.append((False, exc))

    worker = threading.Thread(target=match, name="assertion-regex", daemon=True)
    worker.start()
    worker.join(left)
    if not outcome:
        raise TimeoutError("regex timed out")  # the wall clock ran out first
    ok, value = outcome[0]
    if ok:
        return value
    raise value


class _Match(jsonpath.function_extensions.Match):
    """RFC 9535's match(), bounded."""

    def __call__(self, value: object, pattern: object) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        compiled = self.check_cache(pattern)
        return compiled is not None and bool(bounded(compiled, "fullmatch", value))


class _Search(jsonpath.function_extensions.Search):
    """RFC 9535's search(), bounded."""

    def __call__(self, value: object, pattern: object) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        compiled = self.check_cache(pattern)
        return compiled is not None and bool(bounded(compiled, "search", value))


class _BoundedJsonPath(jsonpath.JSONPathEnvironment):
    """python-jsonpath with every regex of a filter bounded: `=~ /re/` (which it compiles with `re`)
    and the match() and search() functions (which use `regex`, without a timeout)."""

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = _Match(thread_safe=True)
        self.function_extensions["search"] = _Search(thread_safe=True)

    def compare(self, left: object, operator: str, right: object) -> bool:
        if operator == "=~" and isinstance(right, re.Pattern) and isinstance(left, str):
            return bool(bounded(right, "fullmatch", left))
        return bool(super().compare(left, operator, right))


_JSONPATH = _BoundedJsonPath()


class BadPattern(Exception):
    """A pattern or JSONPath that does not compile; the text says why (its first line)."""


def findall(path: str, document: Any) -> list[Any]:
    """The nodes `path` selects; TimeoutError when a filter's regex runs out of the budget."""
    try:
        return list(_JSONPATH.findall(path, document))
    except jsonpath.JSONPathError as exc:
        raise BadPattern(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


_FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL}


def compile_pattern(pattern: str, flags: str = "") -> Any:
    """`pattern` compiled by the `regex` module with JavaScript's flags (i, m, s; g, u and y change
    nothing here); BadPattern when it does not compile."""
    value = 0
    for flag in flags:
        value |= _FLAGS.get(flag, 0)
    try:
        return _compiled(pattern, value)
    except regex.error as exc:
        raise BadPattern(str(exc)) from None
