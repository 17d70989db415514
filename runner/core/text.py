"""The one sanitiser: text from outside (the service, check output) made safe to show.

Every output that shows service text (terminal, CI log, JUnit XML, markdown, GitHub outputs, the
emulator's analyses) passes it through `sanitize`, so every output drops the same characters:

- ANSI/VT100 escape sequences (colours, cursor moves, titles, hyperlinks);
- C0 controls but tab and line breaks, DEL, the C1 controls;
- the bidirectional embeddings, overrides, isolates and marks (U+202A-202E, U+2066-2069, U+200E,
  U+200F, U+061C): "Trojan source", a name that reads differently from what it is;
- lone surrogates and the non-characters U+FFFE/U+FFFF, which XML cannot hold and UTF-8 cannot
  encode (a surrogate printed to a UTF-8 stdout raises, and would silence the console).

What differs per output is explicit, in the options: what line breaks become (`lines`), how long
the text may be (`limit`) and whether it is a CI log line (`log`). Escaping for a format (XML
entities, markdown punctuation) is the format's job and stays with its renderer.

Line breaks are every kind `str.splitlines` knows (CR LF, CR, LF, VT, FF, FS, GS, RS, NEL, LS, PS):
- lines="keep": each becomes one "\\n"; tabs stay. For bodies: a JUnit failure text, a code block.
- lines="join": each run of them, with the spaces and tabs around it, becomes one space, and tabs
  become spaces. For one line: a log line, a table cell, an attribute.
- lines="first": the first line that is not empty, where lines end at LF or CR only; the other
  breaks inside it become spaces (a reader that splits at U+2028 must not cut our message there).
"""

from __future__ import annotations

import re
from typing import Literal

Lines = Literal["keep", "join", "first"]

# ANSI/VT100 escape sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or
# ST), and the remaining two-character escapes. The 8-bit CSI (U+009B) counts only with parameters
# and a final byte ("\x9b31m"): a stray U+009B from a UTF-8 service must not take the characters
# after it ("\x9bHello"); the stray control itself goes with the other C1 controls.
ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x9b[0-?]+[@-~]"  # 8-bit CSI with parameters
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST (unterminated: to the end)
    r"|\x1b[ -/]*[0-~]"  # two-character and nF escapes (ESC ( B, ESC 7, ...)
)
_BREAK_CHARS = "\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
# Every kind of line break (what str.splitlines splits at), CR LF as one.
LINE_BREAKS = re.compile(rf"\r\n|[{_BREAK_CHARS}]")
# A run of line breaks with the spaces and tabs around it: one space on a single line.
_JOIN = re.compile(rf"[ \t]*[{_BREAK_CHARS}][{_BREAK_CHARS} \t]*")
# What no output shows (see above). Tab, LF and CR are not here: the line options decide them.
CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)
_LINE_ENDS = re.compile("\r\n?|\n")
# Lines a CI system reads as commands: GitHub's workflow commands (`::add-mask::`,
# `::stop-commands::`), Azure's `##[`, GitLab's collapsible sections.
COMMAND_PREFIXES = ("::", "##[", "section_start:", "section_end:")
# A runaway text is cut before any regex pass: never more than this many times `limit` is scanned.
_SCAN_FACTOR = 4


def truncation_notice(count: int) -> str:
    return f"[... truncated {count} characters]"


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return ANSI.sub("", text)


def _one_line(text: str) -> str:
    """Line breaks and tabs to single spaces, controls out (the text has no escape sequences left)."""
    if not text.isprintable():
        text = CONTROLS.sub("", _JOIN.sub(" ", text).replace("\t", " "))
    return text.strip()


def sanitize(text: object, *, limit: int, lines: Lines = "join", log: bool = False) -> str:
    """`text` (None: "") safe to show, at most about `limit` characters.

    `lines` says what line breaks become (see the module's doc). A cut one-line text ends with "…"
    and is at most `limit` long; a cut "keep" text ends with a line saying how much was dropped.
    `log`: a CI log line, so a text that would begin with a command prefix is shifted by a "·".
    """
    if text is None:
        return ""
    value = text if type(text) is str else str(text)
    if not value:
        return ""
    if limit < 1:
        limit = 1
    scan = _SCAN_FACTOR * limit + 1024
    dropped = 0
    if len(value) > scan:  # no regex pass over a runaway message
        dropped = len(value) - scan
        value = value[:scan]
    # isprintable() is False for every character removed or replaced below (controls, breaks,
    # tabs, format characters, surrogates, non-characters): a printable text needs no pass at all.
    printable = value.isprintable()
    if lines == "keep":
        if not printable:
            value = CONTROLS.sub("", LINE_BREAKS.sub("\n", strip_ansi(value)))
        if len(value) <= limit and not dropped:
            return value
        keep = min(len(value), limit)
        return value[:keep] + "\n" + truncation_notice(len(value) - keep + dropped)
    if printable:
        value = value.strip()
    elif lines == "first":
        value = next((line for line in map(_one_line, _LINE_ENDS.split(strip_ansi(value))) if line), "")
    else:
        value = _one_line(strip_ansi(value))
    if log and value.startswith(COMMAND_PREFIXES):
        value = "\u00b7" + value
    if len(value) > limit or (dropped and lines == "join"):
        value = value[: limit - 1].rstrip() + "…"
    return value


def for_line(text: object, limit: int = 1000) -> str:
    """One line of a terminal or CI log: no escapes, controls or line breaks, no CI command."""
    return sanitize(text, limit=limit, lines="join", log=True)
