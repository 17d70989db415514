"""The sticky comment's text: a hidden marker naming it, the markdown summary cut to the platform's
limit, and a footer with the job's link.

The marker (`<!-- testsession-runner:comment key=KEY -->`) at the top of the body finds the comment
of an earlier run; one comment per key (spec and branch).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from runner.job.outcome import Outcome
from runner.reports.markdown import render_markdown, safe_url

MARKER = "<!-- testsession-runner:comment key={key} -->"
DEFAULT_SPEC_LABEL = "testsession.yml"
MAX_KEY = 200
_KEY_CHARS = re.compile(r"[^A-Za-z0-9._/@:+=-]")


def comment_key(spec_label: str | None, environ: Mapping[str, str]) -> str:
    """`<spec path>@<branch>`, with only characters that cannot end the HTML comment."""
    label = (spec_label or DEFAULT_SPEC_LABEL).replace(os.sep, "/")
    label = os.path.normpath(label).replace(os.sep, "/").removeprefix("./")
    ref = (
        environ.get("GITHUB_HEAD_REF")
        or environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME")
        or environ.get("GITHUB_REF_NAME")
        or environ.get("CI_COMMIT_REF_NAME")
        or "local"
    )
    return clean_key(f"{label}@{ref}")


def clean_key(key: str) -> str:
    cleaned = _KEY_CHARS.sub("_", key.strip())
    return re.sub("-{2,}", "-", cleaned)[:MAX_KEY] or "default"


def marker(key: str) -> str:
    return MARKER.format(key=clean_key(key))


def render_body(
    outcome: Outcome, key: str, *, platform: str, max_chars: int, run_url: str | None
) -> tuple[str, bool]:
    """The comment's text within `max_chars`, and whether the summary had to be cut."""
    head = marker(key) + "\n"
    link = safe_url(run_url)
    footer = "\n\n<sub>Posted by testsession-runner; updated in place on the next run"
    footer += f" · [job log and reports]({link})</sub>\n" if link else ".</sub>\n"
    summary = render_markdown(outcome).rstrip()
    if len(head) + len(summary) + len(footer) <= max_chars:
        return head + summary + footer, False
    where = f"in the [job's reports]({link})" if link else "in the job's reports"
    note = (
        f"\n\n> **Cut to fit {platform}'s limit of {max_chars:,} characters:** "
        f"the full summary (summary.md, results.json, junit.xml) is {where}."
    )
    room = max(0, max_chars - len(head) - len(footer) - len(note))
    return head + _fit(outcome, room).rstrip() + note + footer, True


def _fit(outcome: Outcome, room: int) -> str:
    """The longest summary of at most `room` characters the renderer's byte budget gives, in a few tries.

    A summary of `room` UTF-8 bytes always fits (bytes are never fewer than characters); with
    non-ASCII text a larger byte budget may still fit, so it is searched for (bounded: 8 renders).
    """
    best = render_markdown(outcome, max_bytes=room)
    low, high = room, room * 4
    for _ in range(8):
        if high - low < max(1024, room // 100):
            break
        middle = (low + high) // 2
        text = render_markdown(outcome, max_bytes=middle)
        if len(text) <= room:
            best, low = text, middle
        else:
            high = middle
    return best
