"""Reporters: pure functions from an Outcome to text. The CLI owns files and streams.

- render_junit(outcome) -> JUnit XML valid against junit-10.xsd
- render_markdown(outcome, max_bytes=1_000_000) -> summary of at most max_bytes UTF-8 bytes
- render_json(outcome) / load_outcome(text, source) -> results.json and back; json_bytes(outcome) its bytes
  (json_chunks(outcome): the same bytes in pieces, a result at a time)
- write_atomic(path, text, bytes or pieces of bytes) -> Path
"""

from __future__ import annotations

from runner.reports.files import write_atomic
from runner.reports.json_report import json_bytes, json_chunks, load_outcome, render_json
from runner.reports.junit import render_junit
from runner.reports.markdown import render_markdown

__all__ = [
    "json_bytes",
    "json_chunks",
    "load_outcome",
    "render_json",
    "render_junit",
    "render_markdown",
    "write_atomic",
]
