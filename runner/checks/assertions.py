"""Production's assertions: a source, an optional property or regex, a comparison and a target.

Decisions, each read from production's docs (detect/assertions.mdx, the API check's configuration
page, the DNS monitor's configuration page, and the CLI's AssertionBuilder, packages/cli/src/
constructs/*-assertion.ts) and, where they are silent, ours:

Sources and what they give
- STATUS_CODE: the HTTP status of the final response (after redirects, when followed), a number.
- RESPONSE_TIME: the whole request in ms, rounded to a whole number ("parsed as an integer").
- JSON_BODY / JSON_ANSWER: `property` is a JSONPath that must start with `$` (production: "must
  start with a `$`"). Evaluated with python-jsonpath (RFC 9535, which production cites, plus the
  filter syntax of its examples: `?(@.price<10 && @.category=="fiction")`). Production's extra
  `.length` at the end of a path gives the length of the array (or string) it selects, and `$.[1]`
  (written in production's docs) is read as `$[1]`. An empty property compares the whole document.
  The body is JSON only when the response's Content-Type says so (`application/json` or `+json`,
  production: "the Content-Type header of the response should be set to application/json") and it
  parses; otherwise the assertion fails saying why.
- HEADERS: `property` is the header name (any case); several headers of that name are joined with
  ", " as HTTP allows; `regex` then extracts a part. No property: the headers as a mapping of
  lower-case names (for HAS_KEY / NOT_HAS_KEY).
- TEXT_BODY / TEXT_ANSWER / RESPONSE_DATA: the text; a regular expression in `regex`, or in
  `property` where production's builders put it (`textBody(property)`, `textAnswer(regex)`),
  extracts a part.
- RESPONSE_CODE: the DNS rcode as text (NOERROR, NXDOMAIN ...).
- LATENCY (ICMP) and a traceroute's RESPONSE_TIME: one RTT statistic in ms, named by `property`
  (avg, min, max, stdDev; a traceroute's defaults to avg, its builder's). JSON_RESPONSE (ICMP): a
  JSONPath into production's ICMP response document, as JSON_BODY. HOP_COUNT, PACKET_LOSS: numbers.

Regular expressions: the first capture group of the first match, the whole match when the pattern
has no group ("We do not use the /g modifier and return the first matched group"). `/pattern/flags`
is accepted as written in production's examples (flags i, m, s). No match: nothing was found (see
below). The `regex` module reads them (re's syntax, which shares the common JavaScript syntax), because
the pattern is the user's and the text is the build's: a pattern that backtracks catastrophically
(`^(a|aa)+$` on a long body) would run for ever in `re`, holding the GIL, so that neither the run's
deadline nor SIGTERM nor Ctrl-C could end the process. With `regex` every match has a timeout and
releases the GIL: all the regexes of one attempt's assertions (JSONPath filters' `=~`, `match()` and
`search()` included) share a budget, the time left of the attempt's bound, at least
`Limits.regex_min_seconds` and at most `Limits.regex_max_seconds`, in wall-clock time (see
`bounded.bounded`); a regex that runs out fails its assertion with `regex took longer than N s` (ours).

Comparisons (14)
- Numbers compare as numbers: when both the value and the target read as numbers, EQUALS,
  NOT_EQUALS and HAS_VALUE compare their values (`200` equals `"200.0"`); GREATER_THAN and LESS_THAN
  need two numbers and fail, saying so, otherwise. Text compares exactly (case matters).
- A value that is not text is compared as production's JavaScript writes it: true/false, null,
  numbers without a trailing `.0`, objects and arrays as compact JSON.
- An array (a path selecting several values, or one array) is compared element by element for
  EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN, CONTAINS and NOT_CONTAINS, all of which must hold
  (production: "Checkly will perform the comparison for every element of the array, chaining them
  with a logical AND"). So `$.tags CONTAINS beta` on ["alpha", "beta"] fails: use HAS_VALUE for
  "the array holds this value". An empty array passes them (as JavaScript's every()).
- IS_EMPTY: nothing found, null, "", [] or {}. IS_NULL: nothing found or null. HAS_KEY: an object
  with that key. HAS_VALUE: an object or array holding a value equal to the target, or a value
  equal to it.
- Each NOT_ comparison is the opposite of its positive one; nothing found therefore passes
  NOT_EQUALS, NOT_CONTAINS, NOT_HAS_KEY, NOT_HAS_VALUE, IS_EMPTY and IS_NULL, and fails the others.
- Assertions run from top to bottom, all of them (each is evidence); the first that fails is the
  check's failure ("If one assertion fails, the full check is considered as failed").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.outcome import AssertionResult, Cut, plain_cut, quote_actual
from runner.checks.regex_budget import DEFAULT_REGEX_SECONDS, RegexBudget, budget_of, regex_budget
from runner.models.check_definitions import Assertion

TEXT_SOURCES = frozenset({"TEXT_BODY", "TEXT_ANSWER", "RESPONSE_DATA", "TEXT_RESPONSE"})
JSON_SOURCES = frozenset({"JSON_BODY", "JSON_ANSWER", "JSON_RESPONSE", "GRPC_RESPONSE"})
_PATTERN_SOURCES = TEXT_SOURCES | JSON_SOURCES | {"HEADERS"}  # where an assertion may run a regex
ELEMENTWISE = frozenset({"EQUALS", "NOT_EQUALS", "GREATER_THAN", "LESS_THAN", "CONTAINS", "NOT_CONTAINS"})
NEGATIONS = {
    "NOT_EQUALS": "EQUALS",
    "NOT_HAS_KEY": "HAS_KEY",
    "NOT_HAS_VALUE": "HAS_VALUE",
    "NOT_EMPTY": "IS_EMPTY",
    "NOT_CONTAINS": "CONTAINS",
    "NOT_NULL": "IS_NULL",
}
# Linear on any text: `\d+\.?\d*` (two ways to split a run of digits) took 48 s on 40,000 digits
# followed by a letter, and a build's body is compared as a number by EQUALS and GREATER_THAN.
_NUMBER = re.compile(r"^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$")
_SLASHED = re.compile(r"^/(.*)/([a-z]*)$", re.DOTALL)


class _Missing:
    """Nothing found: a path that selects nothing, an absent header, a regex without a match."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class NotJson:
    """A body that is not JSON; `reason` says why (for the assertion's message)."""

    reason: str


@dataclass(frozen=True)
class Elements:
    """Several values to compare one by one (a path matching several nodes, or an array)."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class ByProperty:
    """A source whose value the assertion's `property` picks (ICMP LATENCY: avg, min, max, stdDev);
    `default` when the property is empty. A name not in `values` is nothing found."""

    values: Mapping[str, Any]
    default: str | None = None


@dataclass(frozen=True)
class Ranked:
    """A value on an ordered scale that is not a number (SSL's tlsVersion, TLS1.0 < TLS1.1 < TLS1.2 <
    TLS1.3: production's "ordered" comparisons): GREATER_THAN and LESS_THAN compare places on `scale`,
    the other comparisons the text."""

    text: str
    scale: tuple[str, ...]


class _Problem(Exception):
    """The assertion cannot be evaluated (invalid JSONPath, not JSON ...): it fails with this text."""


# --- regular expressions, bounded -------------------------------------------------------------------


def parse_json_body(body: str, content_type: str | None) -> Any:
    """The document, or NotJson saying why not (the Content-Type rule of production's docs)."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if not (kind == "application/json" or kind.endswith("+json")):
        shown = kind or "none"
        return NotJson(f"the response is not JSON (Content-Type: {shown})")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return NotJson("the response body is not valid JSON")


def evaluate(
    assertion: Assertion,
    values: Mapping[str, Any],
    cut: Cut = plain_cut,
    budget: RegexBudget | None = None,
) -> AssertionResult:
    """One assertion against the values of one response, by source name; `cut` shows a value, its
    regexes share `budget` (default: DEFAULT_REGEX_SECONDS from now)."""
    try:
        if needs_budget(assertion):
            with regex_budget(budget or RegexBudget.start(DEFAULT_REGEX_SECONDS)):
                actual = _extract(assertion, values)
        else:  # a status code, a response time: no pattern to bound
            actual = _extract(assertion, values)
        passed, detail, shown = _compare(assertion.comparison, actual, assertion.target, cut)
    except _Problem as problem:
        passed, detail, shown = False, str(problem), None
    return AssertionResult(
        source=assertion.source,
        comparison=assertion.comparison,
        property=assertion.property,
        target=assertion.target,
        regex=assertion.regex or None,
        passed=passed,
        actual=shown,
        detail=detail,
    )


def needs_budget(assertion: Assertion) -> bool:
    """Whether the assertion may run a regex (its own, or a JSONPath filter's): only then is its time
    bounded by a budget."""
    return bool(assertion.regex) or assertion.source in _PATTERN_SOURCES


def evaluate_all(
    assertions: Sequence[Assertion],
    values: Mapping[str, Any],
    cut: Cut = plain_cut,
    budget: RegexBudget | Callable[[], RegexBudget] | None = None,
) -> tuple[AssertionResult, ...]:
    """Every assertion, top to bottom; their regexes share one `budget` (a callable: made when the
    first assertion that needs one comes, none for a status code or a response time)."""
    if budget is None or callable(budget):
        start = budget or (lambda: RegexBudget.start(DEFAULT_REGEX_SECONDS))
        budget = start() if any(needs_budget(a) for a in assertions) else None
    return tuple(evaluate(a, values, cut, budget) for a in assertions)


# --- what the assertion looks at --------------------------------------------------------------------


def _extract(assertion: Assertion, values: Mapping[str, Any]) -> Any:
    source = assertion.source
    if source not in values:
        raise _Problem(f"{source} is not an assertion source of this check type")
    raw = values[source]
    if source in JSON_SOURCES:
        if isinstance(raw, NotJson):
            raise _Problem(raw.reason)
        path = assertion.property.strip()
        value = json_path(raw, path) if path else raw
        return _regex(value, assertion.regex) if assertion.regex else value
    if source == "HEADERS":
        value = _header(raw, assertion.property.strip())
        return _regex(value, assertion.regex) if assertion.regex else value
    if source in TEXT_SOURCES:
        pattern = assertion.regex or assertion.property
        return _regex(raw, pattern) if pattern else raw
    if isinstance(raw, ByProperty):
        name = assertion.property.strip() or raw.default
        return raw.values.get(name, MISSING) if name else MISSING
    return raw


def json_path(document: Any, path: str) -> Any:
    """What `path` selects: one value, Elements for several, MISSING for none."""
    if not path.startswith("$"):
        raise _Problem(f"the JSONPath {path!r} must start with $")
    normalized = _dot_bracket(path)
    matches = _findall(normalized, document)
    if not matches and normalized.endswith(".length"):
        selected = _findall(normalized[: -len(".length")] or "$", document)
        matches = [len(v) for v in selected if isinstance(v, (list, str))]
    if not matches:
        return MISSING
    return matches[0] if len(matches) == 1 else Elements(tuple(matches))


def _findall(path: str, document: Any) -> list[Any]:
    # Loaded with the first JSON assertion: python-jsonpath and regex are a tenth of a second of
    # imports that a run of status and header assertions never needs.
    from runner.checks.bounded import BadPattern, findall

    try:
        return findall(path, document)
    except TimeoutError:
        raise _Problem(budget_of().exceeded(" in the JSONPath's filter")) from None
    except BadPattern as exc:
        raise _Problem(f"invalid JSONPath {path!r}: {exc}") from None


def _dot_bracket(path: str) -> str:
    """`$.[1].key` (production's docs) -> `$[1].key`; quoted names are left alone."""
    out, quote = [], ""
    for i, char in enumerate(path):
        if quote:
            quote = "" if char == quote and path[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char == "." and path[i + 1 : i + 2] == "[" and path[i - 1 : i] != ".":
            continue
        out.append(char)
    return "".join(out)


def _header(headers: Sequence[tuple[str, str]], name: str) -> Any:
    if not name:
        merged: dict[str, str] = {}
        for key, value in headers:
            low = key.lower()
            merged[low] = f"{merged[low]}, {value}" if low in merged else value
        return merged
    found = [value for key, value in headers if key.lower() == name.lower()]
    return ", ".join(found) if found else MISSING


def compile_regex(pattern: str) -> Any:
    """The user's pattern (`/re/flags` too) compiled by the `regex` module (a regex.Pattern)."""
    from runner.checks.bounded import BadPattern, compile_pattern

    flags = ""
    slashed = _SLASHED.match(pattern)
    if slashed and all(f in "gimsuy" for f in slashed.group(2)):
        pattern, flags = slashed.group(1), slashed.group(2)
    try:
        return compile_pattern(pattern, flags)
    except BadPattern as exc:
        raise _Problem(f"invalid regular expression {pattern!r}: {exc}") from None


def _regex(value: Any, pattern: str) -> Any:
    if value is MISSING:
        return MISSING
    from runner.checks.bounded import bounded

    compiled = compile_regex(pattern)
    try:
        match = bounded(compiled, "search", as_text(value))
    except TimeoutError:
        raise _Problem(budget_of().exceeded()) from None
    if match is None:
        return MISSING
    if compiled.groups:
        return match.group(1) if match.group(1) is not None else ""
    return match.group(0)


# --- comparing -------------------------------------------------------------------------------------


def as_text(value: Any) -> str:
    """A value as production's JavaScript would write it."""
    if isinstance(value, str):
        return value
    if isinstance(value, Ranked):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Elements):
        return json.dumps(list(value.values), separators=(",", ":"), ensure_ascii=False)
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None or value is MISSING:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and _NUMBER.match(value):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def _equal(value: Any, target: str) -> bool:
    left, right = as_number(value), as_number(target)
    if left is not None and right is not None:
        return left == right
    return value is not MISSING and as_text(value) == target


def _one(comparison: str, value: Any, target: str) -> bool:
    """A positive comparison of one value (not an array to split)."""
    if comparison == "EQUALS":
        return _equal(value, target)
    if comparison in ("GREATER_THAN", "LESS_THAN") and isinstance(value, Ranked):
        if value.text not in value.scale or target not in value.scale:
            return False
        place, wanted = value.scale.index(value.text), value.scale.index(target)
        return place > wanted if comparison == "GREATER_THAN" else place < wanted
    if comparison in ("GREATER_THAN", "LESS_THAN"):
        left, right = as_number(value), as_number(target)
        if left is None or right is None:
            return False
        return left > right if comparison == "GREATER_THAN" else left < right
    if comparison == "CONTAINS":
        return value is not MISSING and target in as_text(value)
    if comparison == "IS_NULL":
        return value is MISSING or value is None
    if comparison == "IS_EMPTY":
        return value is MISSING or value is None or value in ("", [], {}) or value == Elements(())
    if comparison == "HAS_KEY":
        return isinstance(value, dict) and target in value
    if comparison == "HAS_VALUE":
        if isinstance(value, dict):
            return any(_equal(v, target) for v in value.values())
        if isinstance(value, (list, Elements)):
            items = value.values if isinstance(value, Elements) else value
            return any(_equal(v, target) for v in items)
        return _equal(value, target)
    raise _Problem(f"unknown comparison {comparison}")


def _holds(comparison: str, value: Any, target: str) -> bool:
    negated = comparison in NEGATIONS
    positive = NEGATIONS.get(comparison, comparison)
    if comparison in ELEMENTWISE and isinstance(value, (list, Elements)):
        items = value.values if isinstance(value, Elements) else tuple(value)
        return all(_one(positive, item, target) != negated for item in items)
    return _one(positive, value, target) != negated


def _compare(comparison: str, value: Any, target: str, cut: Cut) -> tuple[bool, str, str | None]:
    """(passed, detail, the value as shown: None when nothing was found)."""
    passed = _holds(comparison, value, target)
    if value is MISSING:
        return passed, "found nothing", None
    shown = quote_actual(as_text(value), cut=cut)
    if not passed and comparison in ("GREATER_THAN", "LESS_THAN") and isinstance(value, Ranked):
        if target not in value.scale:
            scale = " < ".join(value.scale)
            return False, f"the target {quote_actual(target, cut=cut)} is not one of {scale}", shown
        return False, f"received {shown}", shown
    if not passed and comparison in ("GREATER_THAN", "LESS_THAN"):
        if as_number(target) is None:
            return False, f"the target {quote_actual(target, cut=cut)} is not a number", shown
        if not isinstance(value, (list, Elements)) and as_number(value) is None:
            return False, f"received {shown}, not a number", shown
    return passed, f"received {shown}", shown
