"""The README's and docs/'s code blocks as a reader finds them: by the heading of their section.

Tests run these blocks (or compare them with what they run), so an example that moves or changes is
still the example that is tested.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number from 1, line) of every line not inside a fenced code block."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every markdown heading outside code blocks."""
    found = []
    for _, line in outside_fences(text):
        match = HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def section(path: Path, heading: str) -> str:
    """The text under `heading` (a whole heading line, e.g. "## Exit codes") up to the next heading
    of the same or a higher level. Fails naming the file when the heading is not there."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    body_lines = dict(outside_fences(text))
    start = next((n for n, line in body_lines.items() if line.strip() == heading), None)
    assert start is not None, f"{path.name} has no heading {heading!r}"
    end = len(lines) + 1
    for number, line in body_lines.items():
        match = HEADING.match(line)
        if number > start and match and len(match.group(1)) <= level:
            end = number
            break
    return "\n".join(lines[start : end - 1])


def code_blocks(path: Path, heading: str, lang: str) -> list[str]:
    """The bodies of the ```lang blocks of that section, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", section(path, heading), re.DOTALL | re.MULTILINE)


def commands(block: str, prefix: str = "testsession ") -> list[str]:
    """The lines of a shell block that start with `prefix` (after an optional `$ `), comments dropped."""
    found = []
    for raw in block.splitlines():
        line = raw.removeprefix("$ ").split("  #")[0].strip()
        if line.startswith(prefix):
            found.append(line)
    return found
