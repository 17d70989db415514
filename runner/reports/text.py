"""Text cleaning shared by the reporters: what XML cannot hold, terminal colour codes, size caps.

Everything a reporter writes comes from the service or from check output, so any character may
appear. One bad character must never cost a report, so every string goes through `clean()`.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from runner.core.text import strip_ansi

# A default cap per text (an error message, an analysis, a failure body): big enough for a stack
# trace, small enough that one runaway message cannot blow a report past the readers' limits.
MAX_TEXT = 64 * 1024

# XML 1.0 Char excludes C0 controls other than tab, LF, CR; surrogates (a lone one is not even
# encodable as UTF-8); and U+FFFE/U+FFFF.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

# Line breaks beyond \n and \r that str.splitlines() and some readers honour: NEL, LS, PS.
_OTHER_BREAKS = re.compile("\x85|\u2028|\u2029")
# Invisible controls that change what a reader sees: DEL, the C1 controls, and the bidirectional
# embeddings, overrides and isolates ("Trojan source": a name that reads differently than it is).
_INVISIBLE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def remove_invisible(text: str) -> str:
    """NEL, LS and PS become \n (one kind of line break everywhere); DEL, C1 and bidi controls go."""
    return _INVISIBLE.sub("", _OTHER_BREAKS.sub("\n", text))


def remove_xml_illegal(text: str) -> str:
    return _XML_ILLEGAL.sub("", text)


def truncation_notice(count: int) -> str:
    return f"[... truncated {count} characters]"


def cap(text: str, limit: int = MAX_TEXT) -> str:
    """At most about `limit` characters; a cut text ends with a notice of how much was dropped."""
    if len(text) <= limit:
        return text
    keep = max(0, limit)
    return text[:keep] + "\n" + truncation_notice(len(text) - keep)


def clean(text: str | None, limit: int = MAX_TEXT) -> str:
    """A text safe for XML and markdown: no escape codes, no illegal characters, capped."""
    if not text:
        return ""
    # Cap early (generously) so that a 100 MB message costs no 100 MB regex pass.
    if len(text) > 4 * limit + 1024:
        dropped = len(text) - (4 * limit + 1024)
        text = text[: 4 * limit + 1024]
    else:
        dropped = 0
    text = remove_invisible(remove_xml_illegal(strip_ansi(text)))
    if dropped:
        keep = min(len(text), limit)
        return text[:keep] + "\n" + truncation_notice(len(text) - keep + dropped)
    return cap(text, limit)


def one_line(text: str | None, limit: int = 500) -> str:
    """The first non-empty line, cleaned and capped: for `message` attributes and summaries.

    Lines end at \n or \r only; NEL, LS and PS inside the line become spaces, so the message is not
    cut at an invisible character here, nor later by a reader that splits at them."""
    cleaned = clean(_OTHER_BREAKS.sub(" ", text) if text else text, max(limit * 4, 4096))
    for line in re.split("[\r\n]", cleaned):
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def format_seconds(value: float | None) -> str:
    """A JUnit time: seconds with 3 decimals, 0.000 when unknown (never negative, NaN or inf)."""
    if value is None or not math.isfinite(value) or value < 0:
        return "0.000"
    return f"{value:.3f}"


def human_duration(value: float | None) -> str:
    if value is None or not math.isfinite(value) or value < 0:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    minutes, seconds = divmod(int(value), 60)
    if minutes < 120:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _utc(moment: datetime) -> datetime:
    """The service writes UTC; a time without a zone is read as UTC, never as local time."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def utc_minute(moment: datetime) -> str:
    """'2024-05-14 12:00 UTC'."""
    return _utc(moment).strftime("%Y-%m-%d %H:%M UTC")


def ago(since: datetime, until: datetime) -> str:
    """'3 days', '5 hours', '12 minutes', '40 seconds': from `since` to `until`, in the largest whole unit."""
    seconds = max(0.0, (_utc(until) - _utc(since)).total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    n = int(seconds)
    return f"{n} second{'s' if n != 1 else ''}"


# Wording shared by the reporters for analyses that did not complete.
_STATE_WORDS = {
    "pending": ("pending", "the analysis had not finished when the run ended"),
    "unavailable": ("unavailable", "not available"),
    "error": ("failed", "the service could not produce it"),
    "timeout": ("timed out", "it did not finish before the analysis deadline"),
    "skipped": ("skipped", "not requested for this run"),
    "disabled": ("disabled", "analyses are turned off for this run"),
}


def analysis_state_line(state: str | None, reason: str | None) -> str:
    """'Root cause analysis unavailable: <reason>' for every state but completed."""
    if state is None:
        return "Root cause analysis unavailable: no analysis for this error group"
    word, default_reason = _STATE_WORDS.get(state, (state, "no analysis"))
    return f"Root cause analysis {word}: {one_line(reason, 1000) or default_reason}"
