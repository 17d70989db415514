"""GitHub Actions: step outputs ($GITHUB_OUTPUT), the step summary, and `::error::` annotations.

Facts this follows (docs.github.com, "Workflow commands for GitHub Actions"):
- $GITHUB_OUTPUT takes `name=value` lines, or `name<<DELIMITER` heredocs for multi-line values;
  all outputs of a job together may be at most 1 MB.
- $GITHUB_STEP_SUMMARY is refused whole above 1 MiB per step, so ours stays under 1,000,000 bytes.
- Workflow command data escapes %, CR and LF; property values also escape `:` and `,`.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.ci.common import FailedCheck, Log, failed_checks, session_ids, session_links
from runner.core.redact import Redactor
from runner.core.words import counted
from runner.job.digest import Digest
from runner.reports import render_markdown

SUMMARY_MAX_BYTES = 1_000_000  # GitHub refuses more than 1 MiB per step: stay clearly below
FAILED_CHECKS_MAX_BYTES = 256 * 1024  # of the 1 MB all outputs of a job share
MAX_ANNOTATIONS = 10  # GitHub shows 10 error annotations per step; the rest are dropped
MAX_ANNOTATION_CHARS = 4000

# The digest's figures the action declares as outputs (action.yml), besides status and exit-code.
FIGURE_OUTPUTS = ("passed", "failed", "degraded", "flaky", "new-failures", "known-failures", "fixed")

OUTPUT_NAMES = (
    "status",
    "exit-code",
    "test-session-ids",
    "test-session-links",
    "passed",
    "failed",
    "degraded",
    "flaky",
    "new-failures",
    "known-failures",
    "fixed",
    "failed-checks",
    "junit-path",
    "markdown-path",
    "json-path",
)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def failed_checks_json(checks: list[FailedCheck], max_bytes: int = FAILED_CHECKS_MAX_BYTES) -> str:
    """A JSON array of the failed checks; whole entries are dropped from the end to fit `max_bytes`."""
    items = [check.as_json() for check in checks]
    text = json.dumps(items, ensure_ascii=False)
    while items and len(text.encode("utf-8")) > max_bytes:
        # Halve the surplus guess rather than drop one at a time: 10,000 failures stay fast.
        surplus = len(text.encode("utf-8")) - max_bytes
        average = max(1, len(text.encode("utf-8")) // len(items))
        items = items[: max(0, len(items) - max(1, surplus // average))]
        text = json.dumps(items, ensure_ascii=False)
    return text


def outputs(digest: Digest, written: Mapping[str, Path]) -> dict[str, str]:
    """Every output the action declares; a report not written has an empty path."""
    outcome = digest.outcome
    figures = digest.figures()
    return {
        "status": figures["status"],
        "exit-code": figures["exit-code"],
        "test-session-ids": " ".join(session_ids(outcome)),
        "test-session-links": " ".join(session_links(outcome)),
        **{name: figures[name] for name in FIGURE_OUTPUTS},
        "failed-checks": failed_checks_json(failed_checks(digest)),
        "junit-path": str(written["junit"]) if "junit" in written else "",
        "markdown-path": str(written["markdown"]) if "markdown" in written else "",
        "json-path": str(written["json"]) if "json" in written else "",
    }


def format_outputs(values: Mapping[str, str]) -> str:
    """The $GITHUB_OUTPUT text: `name=value`, or a heredoc with a delimiter the value cannot contain."""
    lines = []
    for name, value in values.items():
        if "\n" not in value and "\r" not in value:
            lines.append(f"{name}={value}\n")
            continue
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(lines)


def annotation(check: FailedCheck) -> str:
    title = f"{check.name} ({check.location})"
    message = check.error or f"{check.verdict} ({check.status})"
    if check.root_cause:
        message += f"\nRoot cause: {check.root_cause}"
    if check.link:
        message += f"\n{check.link}"
    if len(message) > MAX_ANNOTATION_CHARS:
        message = message[: MAX_ANNOTATION_CHARS - 1] + "…"
    return f"::error title={escape_property(title)}::{escape_data(message)}"


def annotation_lines(checks: list[FailedCheck], redact: Redactor) -> list[str]:
    """At most MAX_ANNOTATIONS `::error` lines, then one `::notice` saying how many were left out.

    Texts are redacted before they are escaped: an escaped secret would no longer match its mask.
    """
    shown = [annotation(_redacted(check, redact)) for check in checks[:MAX_ANNOTATIONS]]
    hidden = len(checks) - len(shown)
    if hidden > 0:
        shown.append(
            f"::notice title=testsession::{counted(hidden, 'more failed check')} "
            "not annotated; see the step summary or the JUnit report"
        )
    return shown


def _redacted(check: FailedCheck, redact: Redactor) -> FailedCheck:
    changes: dict[str, Any] = {k: redact(v) for k, v in vars(check).items() if isinstance(v, str)}
    return dataclasses.replace(check, **changes)


def summary(digest: Digest, written: Mapping[str, Path]) -> str:
    """The markdown report as written, or rendered anew when it was not written or is too big."""
    path = written.get("markdown")
    if path is not None:
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        if data and len(data) <= SUMMARY_MAX_BYTES:
            return data.decode("utf-8", errors="replace")
    return render_markdown(digest.outcome, max_bytes=SUMMARY_MAX_BYTES - 2)


def append(path: str, text: str) -> None:
    from runner.core.files import append_text

    append_text(path, text)


def publish(
    digest: Digest,
    written: Mapping[str, Path],
    environ: Mapping[str, str],
    log: Log,
    redact: Redactor,
) -> list[str]:
    """Writes outputs, summary and annotations; returns one error line per part that failed."""
    problems = []
    output_file = environ.get("GITHUB_OUTPUT")
    if output_file:
        try:
            values = {name: redact(value) for name, value in outputs(digest, written).items()}
            append(output_file, format_outputs(values))
        except OSError as exc:
            problems.append(f"could not write step outputs to {output_file}: {exc.strerror or exc}")
    summary_file = environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        try:
            text = redact(summary(digest, written))
            append(summary_file, text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            problems.append(f"could not write the step summary to {summary_file}: {exc.strerror or exc}")
    if digest.outcome.shard is None:  # a part of a sharded run: `testsession merge` annotates, once
        for line in annotation_lines(failed_checks(digest), redact):
            log.always(line)
    return problems
