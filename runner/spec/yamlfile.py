"""Reading a spec file: YAML to plain data plus the line of every field, for `FILE:LINE:` messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from runner.core.errors import SpecError
from runner.core.files import InputFileError, read_input_text
from runner.core.yamlguard import MAX_DEPTH, MAX_NODES, TooLarge, check_node_budget, node_lines

Loc = tuple[str | int, ...]

MAX_FILE_BYTES = 1_000_000  # a spec is a few dozen lines; anything this big is the wrong file
__all__ = ["MAX_DEPTH", "MAX_NODES", "Document", "parse_yaml", "read_text"]


class Document:
    """A parsed file: its data, the line of each field and what the loader found wrong. A slots class
    (made on every run's start-up path; a dataclass's methods are compiled when its class is made)."""

    __slots__ = ("data", "lines", "problems", "raw")

    def __init__(self, data: Any) -> None:
        self.data = data
        self.lines: dict[Loc, int] = {}
        self.raw: dict[Loc, str] = {}  # scalar text as written (`0123`, `no`)
        # (line or None to look it up by loc, loc, message)
        self.problems: list[tuple[int | None, Loc, str]] = []

    def line(self, loc: Loc) -> int:
        """The line of `loc`, else of its nearest ancestor that has one."""
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), 1)


def read_text(path: str | Path) -> str:
    """The file as text, or SpecError with one line saying why not (core/files.py: a FIFO or device is
    refused, the read is capped at MAX_FILE_BYTES)."""
    try:
        return read_input_text(path, "YAML file", MAX_FILE_BYTES)
    except InputFileError as exc:
        raise SpecError([str(exc)]) from None


# libyaml's loader when PyYAML has it, as core/yamlguard.py reads a checks file: the same nodes and
# data, and one reader's messages for both files (the pure-Python one was ~3.6 M instructions for a
# spec of five lines, the C one 0.03 M).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _reader_error(text: str, exc: yaml.reader.ReaderError, source: str) -> SpecError:
    """A character YAML does not allow, at its line: the pure reader counts characters, libyaml's
    (encoding '?') the bytes of the UTF-8 text."""
    if exc.encoding == "?":
        line = text.encode("utf-8", "surrogatepass")[: max(0, exc.position)].count(b"\n") + 1
    else:
        line = text[: max(0, exc.position)].count("\n") + 1
    return SpecError(
        [f"{source}:{line}: YAML syntax error: character #x{exc.character:04x} is not allowed in YAML"]
    )


# libyaml's words that do not say what they found (the pure loader named it): said from the text at
# the mark (libyaml counts characters), a tab's cause too.
_NO_TOKEN = "found character that cannot start any token"
_NO_ALIAS = "found undefined alias"


def _named(text: str, mark: yaml.Mark, problem: str) -> str:
    import re  # an error's path only

    lines = re.split("\r\n|[\r\n\x85\u2028\u2029]", text)  # YAML's line breaks, as libyaml counts them
    line = lines[mark.line] if 0 <= mark.line < len(lines) else ""
    if not 0 <= mark.column < len(line):
        return problem
    found = line[mark.column :]
    if problem == _NO_ALIAS:
        alias = re.match(r"\*([0-9A-Za-z_-]+)", found)
        return f"{problem} {alias.group(1)!r}" if alias else problem
    hint = " (YAML indents with spaces, not tabs)" if found[0] == "\t" else ""
    return f"found character {found[0]!r} that cannot start any token{hint}"


def _duplicate_keys(root: yaml.Node) -> list[tuple[int, str]]:
    """(line, key) of each key given twice in one mapping (YAML keeps the last one silently). Each
    node once: the graph was found within the budget (check_node_budget) before this walk."""
    found: list[tuple[int, str]] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    if key_node.value in keys:
                        found.append((key_node.start_mark.line + 1, key_node.value))
                    keys.add(key_node.value)
                stack += (key_node, value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return found


def parse_yaml(text: str, source: str) -> Document:
    """Parses one YAML document; syntax errors become one `FILE:LINE:` line."""
    try:
        # The pure reader refuses control characters while it is built, libyaml's while it parses.
        loader = _LOADER(text)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(text, exc, source) from None
    try:
        node = loader.get_single_node()
        check_node_budget(node)  # before anything is built from an alias bomb
        data = loader.construct_document(node) if node is not None else None
    except TooLarge:
        raise SpecError([f"{source}: too large or too deeply nested (recursive aliases?)"]) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(text, exc, source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at_line = f":{mark.line + 1}" if mark else ""
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        if mark and exc.problem in (_NO_TOKEN, _NO_ALIAS):
            what = what.replace(exc.problem, _named(text, mark, exc.problem))
        raise SpecError([f"{source}{at_line}: YAML syntax error: {what}"]) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise SpecError([f"{source}: YAML error: {type(exc).__name__}"]) from None
    finally:
        loader.dispose()
    doc = Document(data)
    if node is None:
        return doc
    try:
        doc.lines, doc.raw = node_lines(node)
    except TooLarge:
        raise SpecError([f"{source}: too large or too deeply nested (recursive aliases?)"]) from None
    for key_line, key in _duplicate_keys(node):
        doc.problems.append((key_line, (), f"duplicate key {key!r}: give each key once per mapping"))
    return doc
