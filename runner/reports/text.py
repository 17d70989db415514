"""Text for the reports (JUnit XML, markdown): the sanitiser's presets, size caps, times.

Everything a reporter writes comes from the service or from check output, so any character may
appear. One bad character must never cost a report, so every string goes through the one sanitiser
(`runner.core.text.sanitize`): `clean()` for bodies, `one_line()` for messages and summaries.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import NamedTuple

from runner.core.text import sanitize, truncation_notice
from runner.job.outcome import ErrorGroupOutcome
from runner.models.analyses import Analysis

# A default cap per text (an error message, an analysis, a failure body): big enough for a stack
# trace, small enough that one runaway message cannot blow a report past the readers' limits.
MAX_TEXT = 64 * 1024


def cap(text: str, limit: int = MAX_TEXT) -> str:
    """At most about `limit` characters; a cut text ends with a notice of how much was dropped."""
    if len(text) <= limit:
        return text
    keep = max(0, limit)
    return text[:keep] + "\n" + truncation_notice(len(text) - keep)


def clean(text: str | None, limit: int = MAX_TEXT) -> str:
    """A body safe for XML and markdown: line breaks kept (as \\n), capped with a notice."""
    return sanitize(text, limit=limit, lines="keep")


def one_line(text: str | None, limit: int = 500) -> str:
    """The first non-empty line, capped with "…": for `message` attributes and summaries.

    Lines end at \\n or \\r only; NEL, LS and PS inside the line become spaces, so the message is not
    cut at an invisible character here, nor later by a reader that splits at them."""
    return sanitize(text, limit=limit, lines="first")


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


# Wording shared by the reporters for analyses that did not complete.
_STATE_WORDS = {
    "pending": ("pending", "the analysis had not finished when the run ended"),
    "unavailable": ("unavailable", "not available"),
    "error": ("failed", "the service could not produce it"),
    "timeout": ("timed out", "it did not finish before the analysis deadline"),
    "skipped": ("skipped", "not requested for this run"),
    "disabled": ("disabled", "analyses are turned off for this run"),
}


class AnalysisGap(NamedTuple):
    """Why an error group has no analysis to show: its state ('none' when it has no analysis at
    all) and the line every report prints ('Root cause analysis timed out: <reason>')."""

    state: str
    line: str


def shown_analysis(group: ErrorGroupOutcome) -> Analysis | AnalysisGap:
    """The group's completed analysis, or why there is none, as every report says it. A completed
    analysis that came back empty is unavailable, and says so."""
    outcome = group.analysis
    if outcome is None:
        return AnalysisGap("none", "Root cause analysis unavailable: no analysis for this error group")
    if outcome.state == "completed" and outcome.analysis is not None:
        return outcome.analysis
    state, reason = outcome.state, outcome.reason
    if state == "completed":
        state, reason = "unavailable", reason or "the analysis came back empty"
    word, default_reason = _STATE_WORDS.get(state, (state, "no analysis"))
    return AnalysisGap(state, f"Root cause analysis {word}: {one_line(reason, 1000) or default_reason}")
