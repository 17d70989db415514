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


class _Loader(yaml.SafeLoader):
    """A SafeLoader that reports duplicate keys instead of silently keeping the last one."""

    duplicates: list[tuple[int, str]]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    self.duplicates.append((key_node.start_mark.line + 1, key_node.value))
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, source: str) -> Document:
    """Parses one YAML document; syntax errors become one `FILE:LINE:` line."""
    try:
        # The reader refuses control characters while it is built, before any parsing.
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        line = text[: max(0, exc.position)].count("\n") + 1
        raise SpecError(
            [f"{source}:{line}: YAML syntax error: character #x{exc.character:04x} is not allowed in YAML"]
        ) from None
    loader.duplicates = []
    try:
        node = loader.get_single_node()
        check_node_budget(node)  # before anything is built from an alias bomb
        data = loader.construct_document(node) if node is not None else None
    except TooLarge:
        raise SpecError([f"{source}: too large or too deeply nested (recursive aliases?)"]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at_line = f":{mark.line + 1}" if mark else ""
        what = " ".join(p for p in (exc.context, exc.problem) if p)
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
    for key_line, key in loader.duplicates:
        doc.problems.append((key_line, (), f"duplicate key {key!r}: give each key once per mapping"))
    return doc
