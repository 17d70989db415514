"""load_spec / parse_spec: a YAML file to a validated RunSpec, or every problem, one line each."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.core.errors import SpecError
from runner.core.expand import Expansion, expand
from runner.spec.model import SESSION_KEYS, SETTINGS_KEYS, RunSpec, env_items
from runner.spec.problems import Loc, format_loc, kind_of, unknown_key_message, validation_problems
from runner.spec.yamlfile import Document, parse_yaml, read_text

LOCAL = "local"  # the location of a checks file's run (runner/checks/checksfile.py)
TOP_LEVEL_HINT = "sessions: (a list of sessions) or runLocation: (a single session)"


def load_spec(
    path: str | Path, environ: Mapping[str, str], *, allow_unset: bool = False, local: bool = False
) -> RunSpec:
    """Reads and validates a spec file; raises SpecError with every problem as `FILE:LINE: path: rule`.
    local: the checks run on this machine (--checks), where a session needs no runLocation."""
    return parse_spec(read_text(path), str(path), environ, allow_unset=allow_unset, local=local)


def readable_report_paths(path: str | Path, environ: Mapping[str, str]) -> dict[str, str | None]:
    """The `reports:` paths of a spec that may not validate, as far as they can be read (for the
    reports of a run that a bad spec stopped): kind -> path, None where the spec turns it off. A
    kind missing from the answer was not said, or not readably (its default applies)."""
    try:
        doc = parse_yaml(read_text(path), str(path))
    except SpecError:
        return {}
    reports = doc.data.get("reports") if isinstance(doc.data, dict) else None
    if not isinstance(reports, dict):
        return {}
    out: dict[str, str | None] = {}
    for kind in ("junit", "markdown", "json"):
        if kind not in reports:
            continue
        value = reports[kind]
        if value is None or value == "":
            out[kind] = None
        elif isinstance(value, str):
            expansion = Expansion()
            expanded = expand(value, environ, ("reports", kind), expansion)
            if not expansion.problems and not expansion.unset and isinstance(expanded, str):
                out[kind] = expanded or None
    return out


def parse_spec(
    text: str, source: str, environ: Mapping[str, str], *, allow_unset: bool = False, local: bool = False
) -> RunSpec:
    """Like load_spec, for text already read. allow_unset: unset ${VAR}s are not problems (offline checks)."""
    doc = parse_yaml(text, source)
    if doc.data is None:
        raise SpecError([f"{source}:1: empty spec: expected {TOP_LEVEL_HINT}"])
    if not isinstance(doc.data, dict):
        line = doc.lines.get((), 1)
        raise SpecError([f"{source}:{line}: expected a mapping at the top level, got {kind_of(doc.data)}"])
    return _Check(doc, source, environ, allow_unset, local or "checks" in doc.data).run()


class _Check:
    """Collects the problems of one document; paths are reported as written in the file."""

    def __init__(
        self, doc: Document, source: str, environ: Mapping[str, str], allow_unset: bool, local: bool
    ) -> None:
        self.doc = doc
        self.local = local  # a checks file's run: location `local`, no runLocation needed
        self.source = source
        self.environ = environ
        self.allow_unset = allow_unset
        self.problems: list[tuple[int, Loc, str]] = []
        # Prefixes of validation paths -> the path as written (single-session form, KEY: value variables).
        self.translations: list[tuple[Loc, Loc]] = []
        for line, loc, message in doc.problems:
            self.add(loc, message, line)

    def add(self, loc: Loc, message: str, line: int | None = None) -> None:
        self.problems.append((line if line is not None else self.doc.line(loc), loc, message))

    def written(self, loc: Loc) -> Loc:
        best: tuple[Loc, Loc] | None = None
        for prefix, replacement in self.translations:
            if loc[: len(prefix)] == prefix and (best is None or len(prefix) > len(best[0])):
                best = (prefix, replacement)
        return loc if best is None else best[1] + loc[len(best[0]) :]

    def run(self) -> RunSpec:
        data = self.text_keys(self.doc.data, ())
        expansion = Expansion(keep_unset=self.allow_unset)
        data = expand(data, self.environ, (), expansion)
        for loc, message in expansion.problems:
            self.add(loc, message)
        if not self.allow_unset:
            for loc, name in expansion.unset:
                self.add(loc, f"${{{name}}} is not set: set {name}, or write ${{{name}:-default}}")
        data = self.normalize(data)
        spec = self.validate(data, expansion.touched, retry=self.allow_unset)
        if self.problems or spec is None:
            raise SpecError(self.lines())
        return spec

    def validate(self, data: dict[str, Any], touched: set[Loc], retry: bool) -> RunSpec | None:
        """Validation problems, except at fields a ${VAR} problem already explains."""
        try:
            return RunSpec.model_validate(data)
        except ValidationError as exc:
            noise = []
            for loc, message in validation_problems(exc, RunSpec):
                if self.written(loc) in touched:
                    noise.append(loc)
                else:
                    self.add(self.written(loc), message)
        if retry and noise and not self.problems:
            # --allow-unset: a number or flag left as `${VAR}` falls back to its default.
            for loc in noise:
                _drop(data, loc)
            return self.validate(data, set(), retry=False)
        return None

    def lines(self) -> list[str]:
        out: list[str] = []
        for line, loc, message in sorted(self.problems, key=lambda p: p[0]):
            path = format_loc(loc)
            text = f"{self.source}:{line}: {path}: {message}" if path else f"{self.source}:{line}: {message}"
            if text not in out:
                out.append(text)
        return out

    def text_keys(self, data: Any, loc: Loc) -> Any:
        """YAML reads `on:` or `1:` as a boolean or a number; every key of a spec is text."""
        if isinstance(data, dict):
            out = {}
            for key, value in data.items():
                if not isinstance(key, str):
                    self.add((*loc, str(key).lower()), f"key must be text, got {kind_of(key)}: quote it")
                    continue
                out[key] = self.text_keys(value, (*loc, key))
            return out
        if isinstance(data, list):
            return [self.text_keys(v, (*loc, i)) for i, v in enumerate(data)]
        return data

    def normalize(self, data: dict[str, Any]) -> dict[str, Any]:
        """The single-session form becomes `sessions: [...]`; KEY: value variables become items."""
        session_keys = [k for k in data if k in SESSION_KEYS]
        if "sessions" in data:
            for key in session_keys:
                self.add((key,), "a session field: with sessions: given, it goes inside a session")
                del data[key]
            sessions = data["sessions"]
            if isinstance(sessions, list) and not sessions:
                self.add(("sessions",), "at least one session")
        elif session_keys:
            allowed = [*SESSION_KEYS, *SETTINGS_KEYS, "sessions"]
            for key in [k for k in data if k not in allowed]:
                self.add((key,), unknown_key_message(key, allowed))
                del data[key]
            session = {k: data[k] for k in session_keys}
            data = {k: v for k, v in data.items() if k in SETTINGS_KEYS}
            data["sessions"] = [session]
            self.translations.append((("sessions", 0), ()))
        elif self.local:
            data["sessions"] = [{}]
        else:
            self.add((), f"no sessions: give {TOP_LEVEL_HINT}")
        if self.local and isinstance(data.get("sessions"), list):
            for session in data["sessions"]:
                if isinstance(session, dict):
                    session["runLocation"] = LOCAL
        if isinstance(data.get("sessions"), list):
            for index, session in enumerate(data["sessions"]):
                if isinstance(session, dict) and "environmentVariables" in session:
                    at = ("sessions", index, "environmentVariables")
                    session["environmentVariables"] = self.variables(session["environmentVariables"], at)
        return data

    def variables(self, value: Any, at: Loc) -> Any:
        """Values as written (`PORT: 0123` stays "0123", `DEBUG: no` stays "no"), mapping -> items."""
        loc = self.written(at)
        if isinstance(value, dict):
            items = []
            for index, (key, item) in enumerate(value.items()):
                where = (*loc, key)
                self.translations.append(((*at, index), where))
                if isinstance(item, dict):
                    items.append({**item, "key": key, **self.raw_value(item, (*where, "value"))})
                else:
                    items.append({"key": key, "value": item, **self.raw_value({"value": item}, where)})
            return env_items(items)
        if isinstance(value, list):
            return [
                {**item, **self.raw_value(item, (*loc, i, "value"))} if isinstance(item, dict) else item
                for i, item in enumerate(value)
            ]
        return value

    def raw_value(self, item: dict[str, Any], loc: Loc) -> dict[str, Any]:
        value = item.get("value")
        if "value" in item and value is not None and not isinstance(value, (str, dict, list)):
            raw = self.doc.raw.get(loc)
            if raw is not None:
                return {"value": raw}
        return {}


def _drop(data: Any, loc: Loc) -> None:
    for part in loc[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(data, dict):
        data.pop(loc[-1], None)
