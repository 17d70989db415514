"""Text from outside (the service, check output) made safe for one line of a terminal or a CI log.

A service's string must never move the cursor, recolour the log, reverse the reading order, or start
a line of its own: on GitHub a line starting with `::` is a workflow command (`::add-mask::`,
`::stop-commands::`), on GitLab `section_start:` opens a section. So every control character, escape
sequence and line break goes, and a text that would still begin with a command prefix is shifted.
"""

from __future__ import annotations

import re

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
# Line breaks of every kind (what str.splitlines splits at), including the Unicode ones some
# terminals, log viewers and markdown renderers honour.
LINE_BREAKS = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")
# C0 and C1 controls, DEL, and the bidirectional overrides and isolates (U+202A-202E, U+2066-2069)
# that make a log line read differently from what it contains.
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
COMMAND_PREFIXES = ("::", "##[", "section_start:", "section_end:")


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return ANSI.sub("", text)


def for_line(text: object, limit: int = 1000) -> str:
    """One line of plain text: no escapes, controls or line breaks, at most `limit` characters."""
    if text is None:
        return ""
    value = str(text)
    if len(value) > 4 * limit + 64:  # no regex pass over a runaway message
        value = value[: 4 * limit + 64]
    value = LINE_BREAKS.sub(" ", strip_ansi(value))
    value = CONTROLS.sub("", value).strip()
    if value.startswith(COMMAND_PREFIXES):
        value = "\u00b7" + value
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return value
