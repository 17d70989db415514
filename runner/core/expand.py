"""`${VAR}` and `${VAR:-default}` in the string values of a spec, world or checks file: the one expander.

The environment is passed in (never read here), so a caller decides what a run sees.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

Loc = tuple[str | int, ...]

# `$${` is a literal `${`; a `${` that is not a well-formed reference is reported, not passed on.
_TOKEN = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_REFERENCE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


class Expansion:
    """What expanding a file's `${VAR}`s found. A slots class (made on every run's start-up path; a
    dataclass's methods are compiled when its class is made)."""

    __slots__ = ("keep_unset", "problems", "unset")

    def __init__(self, keep_unset: bool = False) -> None:
        self.problems: list[tuple[Loc, str]] = []
        self.unset: list[tuple[Loc, str]] = []  # (where, variable) without a default
        self.keep_unset = keep_unset  # leave `${VAR}` as written instead of "" (offline checks)

    @property
    def touched(self) -> set[Loc]:
        """Fields whose value is not what the user meant: their own validation errors are noise."""
        return {loc for loc, _ in self.problems} | {loc for loc, _ in self.unset}


def expand_string(text: str, environ: Mapping[str, str], loc: Loc, out: Expansion) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        body = match.group("body")
        reference = _REFERENCE.fullmatch(body) if body is not None else None
        if reference is None:
            out.problems.append(
                (loc, "malformed ${...}: use ${VAR} or ${VAR:-default}; write $${ for a literal ${")
            )
            return ""
        name, default = reference.group("name"), reference.group("default")
        value = environ.get(name)
        if value:  # unset or empty takes the default, as in the shell's ${VAR:-default}
            return value
        if default is not None:
            return default
        if value is None:
            out.unset.append((loc, name))
            if out.keep_unset:
                return token
        return ""

    return _TOKEN.sub(replace, text) if "$" in text else text


def expand(
    data: Any,
    environ: Mapping[str, str],
    loc: Loc = (),
    out: Expansion | None = None,
    verbatim: frozenset[str] = frozenset(),
) -> Any:
    """`data` with every string value expanded; keys are left as written, and so is the value of a
    key in `verbatim` (code such as a check's `script`, where `${...}` is JavaScript's template
    literal and variables arrive as process.env). A mapping or list in which nothing changed is
    returned as it is, not copied (a world of 10,000 checks has hundreds of thousands of them)."""
    out = out if out is not None else Expansion()
    if isinstance(data, str):
        return expand_string(data, environ, loc, out)
    if isinstance(data, dict):
        changed: dict[Any, Any] | None = None
        for key, value in data.items():
            if key in verbatim:
                continue
            new = _expand_child(value, environ, loc, key, out, verbatim)
            if new is not value:
                changed = changed if changed is not None else dict(data)
                changed[key] = new
        return data if changed is None else changed
    if isinstance(data, list):
        values: list[Any] | None = None
        for index, value in enumerate(data):
            new = _expand_child(value, environ, loc, index, out, verbatim)
            if new is not value:
                values = values if values is not None else list(data)
                values[index] = new
        return data if values is None else values
    return data


def _expand_child(
    value: Any, environ: Mapping[str, str], loc: Loc, key: str | int, out: Expansion, verbatim: frozenset[str]
) -> Any:
    # The path of a child is made only for one that can change: a string with a `$`, or a
    # container (a world of 10,000 checks has ~100,000 plain values).
    if isinstance(value, str):
        return expand_string(value, environ, (*loc, key), out) if "$" in value else value
    if isinstance(value, (dict, list)):
        return expand(value, environ, (*loc, key), out, verbatim)
    return value
