"""What a run prints while it works: plain lines in CI logs, an updating line only on a terminal.

Every line passes through the run's Redactor. NO_COLOR is honoured; GitHub and GitLab get their own
log sections.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

from runner.core.redact import Redactor
from runner.job.outcome import ResultOutcome

_COLORS = {
    "passed": "32",
    "flaky": "33",
    "degraded": "33",
    "failed": "31",
    "error": "31",
    "running": "35",
    "cancelled": "90",
}


def _clean(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)


class Console:
    def __init__(
        self,
        stream: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        verbose: bool = False,
    ) -> None:
        env = os.environ if environ is None else environ
        self.stream = stream or sys.stdout
        self.redact = redactor or Redactor()
        self.verbose_enabled = verbose
        self.github = env.get("GITHUB_ACTIONS") == "true"
        self.gitlab = env.get("GITLAB_CI") == "true"
        is_tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interactive = is_tty and not env.get("CI")
        self.color = is_tty and "NO_COLOR" not in env and env.get("TERM") != "dumb"
        self._lock = threading.Lock()
        self._status_shown = False

    def _write(self, text: str) -> None:
        with self._lock:
            if self._status_shown:
                self.stream.write("\r\033[K")
                self._status_shown = False
            self.stream.write(self.redact(text) + "\n")
            self.stream.flush()

    def line(self, text: str) -> None:
        self._write(text)

    def verbose(self, text: str) -> None:
        if self.verbose_enabled:
            self._write(f"  · {text}")

    def status(self, text: str) -> None:
        """An updating line: only on an interactive terminal; CI logs get no carriage returns."""
        if not self.interactive:
            return
        with self._lock:
            self.stream.write("\r\033[K" + self.redact(_clean(text)))
            self.stream.flush()
            self._status_shown = True

    def paint(self, verdict: str, text: str) -> str:
        if not self.color or verdict not in _COLORS:
            return text
        return f"\033[{_COLORS[verdict]}m{text}\033[0m"

    def result(self, result: ResultOutcome) -> None:
        duration = f"{result.durationSeconds:.1f}s" if result.durationSeconds is not None else "-"
        attempts = f", {result.attempts} attempts" if result.attempts > 1 else ""
        label = self.paint(result.verdict, f"{result.verdict.upper():<9}")
        kind = f"{result.checkType}, " if result.checkType else ""
        self._write(
            f"  {label} {_clean(result.name)} ({kind}{result.runLocation or '?'}) {duration}{attempts}"
        )

    def mask(self, values: list[str]) -> None:
        """GitHub hides a value in its logs only once told, before the value is ever printed."""
        if self.github:
            for value in values:
                for part in value.splitlines():
                    if part.strip():
                        self.stream.write(f"::add-mask::{part}\n")
            self.stream.flush()

    @contextmanager
    def section(self, name: str, title: str) -> Iterator[None]:
        if self.github:
            self._write(f"::group::{title}")
        elif self.gitlab:
            with self._lock:
                self.stream.write(
                    f"\033[0Ksection_start:{int(time.time())}:{name}[collapsed=false]\r\033[0K{title}\n"
                )
        else:
            self._write(title)
        try:
            yield
        finally:
            if self.github:
                self._write("::endgroup::")
            elif self.gitlab:
                with self._lock:
                    self.stream.write(f"\033[0Ksection_end:{int(time.time())}:{name}\r\033[0K\n")
                    self.stream.flush()
