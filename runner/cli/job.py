"""The glue of `run` and `wait`: credentials, emulator, signals, the Runner, then files and streams.

Imported only when one of those commands runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

from runner.ci.console import Console
from runner.cli.common import ENV_ACCOUNT_ID, ENV_API_KEY, make_client, redactor
from runner.core.errors import UsageError
from runner.core.exitcodes import ExitCode
from runner.core.redact import redact_data
from runner.job.analyses import AnalysisPlan
from runner.job.outcome import Outcome
from runner.job.run import Runner, RunSettings
from runner.metadata import resolve_metadata
from runner.models import SessionMetadata, TriggerRequest
from runner.spec import RunSpec


class Job:
    def __init__(self, args: argparse.Namespace, spec: RunSpec) -> None:
        self.args = args
        self.spec = spec
        self.environ = os.environ
        self.redact = redactor()
        for key in getattr(args, "secret_env", None) or []:
            self.redact.add(self.environ.get(key))
        for session in spec.sessions:
            for value in session.secret_values():
                self.redact.add(value)
        self.console = Console(environ=self.environ, redactor=self.redact, verbose=args.verbose)
        # GitHub must learn the secrets before anything else is printed.
        self.console.mask(sorted(self.redact.secrets))
        self.report_paths = self._report_paths()

    def _report_paths(self) -> dict[str, Path]:
        paths = {}
        for kind in ("json", "junit", "markdown"):
            value = getattr(self.spec.reports, kind)
            if value:
                path = Path(value)
                if path.exists() and path.is_dir():
                    raise UsageError(f"reports.{kind}: {value} is a directory; give a file path")
                paths[kind] = path
        return paths

    def _retry_deadline(self) -> float:
        """No retry starts after the run's own deadlines (plus a margin for cancel and reads)."""
        rca = self.spec.rca.timeoutSeconds if self.spec.rca.enabled else 0.0
        budget = self.spec.wait.timeoutSeconds + rca
        return time.monotonic() + budget + 30.0

    def _settings(self) -> RunSettings:
        rca = self.spec.rca
        return RunSettings(
            timeout_seconds=self.spec.wait.timeoutSeconds,
            analyses=AnalysisPlan(
                enabled=rca.enabled,
                generate=rca.generate,
                timeout_seconds=rca.timeoutSeconds,
                max_groups=rca.max,
                context=getattr(rca, "context", None),
            ),
            fail_on_degraded=self.spec.gate.failOnDegraded,
            fail_on_no_match=self.spec.gate.failOnNoMatchingChecks,
        )

    def _requests(self) -> tuple[list[TriggerRequest], SessionMetadata]:
        requests = []
        for session in self.spec.sessions:
            # The spec's own fields win over CI variables, which win over the local repository.
            metadata = resolve_metadata(session.metadata, self.environ, Path.cwd(), self.console.verbose)
            requests.append(session.to_trigger(metadata))
        commit = requests[0].metadata if requests and requests[0].metadata else SessionMetadata()
        return requests, commit

    @contextmanager
    def _service(self) -> Iterator[dict[str, Any]]:
        """Credentials for the client; with --emulator, an in-process emulator for the job's life."""
        if not getattr(self.args, "emulator", False):
            if getattr(self.args, "world", None):
                raise UsageError("--world needs --emulator")
            yield {}
            return
        from runner.emulator import Emulator

        emulator = Emulator(world=self.args.world).start()
        try:
            self.redact.add(emulator.api_key)
            self.console.verbose(f"emulator serving at {emulator.url}")
            yield {
                "base_url": emulator.url,
                "api_key": self.environ.get(ENV_API_KEY) or emulator.api_key,
                "account_id": self.environ.get(ENV_ACCOUNT_ID) or emulator.account_id,
                "account_header": emulator.account_header,
            }
        finally:
            emulator.stop()

    @contextmanager
    def _signals(self, runner: Runner) -> Iterator[None]:
        def on_signal(signum: int, _frame: FrameType | None) -> None:
            name = signal.Signals(signum).name
            code = ExitCode.INTERRUPTED if signum == signal.SIGINT else ExitCode.TERMINATED
            runner.interrupt(name, code)

        previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            with suppress(ValueError):  # not the main thread: no handlers
                previous[sig] = signal.signal(sig, on_signal)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def run(self, detach: bool) -> int:
        requests, commit = self._requests()
        with self._service() as credentials, make_client(self.args, **credentials) as client:
            client.deadline = self._retry_deadline()
            runner = Runner(client, self._settings(), self.console, commit)
            with self._signals(runner):
                outcome = runner.run(requests, detach=detach)
        if detach:
            for session in outcome.sessions:
                if session.testSessionId:
                    print(f"{session.testSessionId} {session.link or ''}".strip())
            self._finish(outcome, write_reports=False)
            return outcome.exitCode
        return self._finish(outcome)

    def wait(self, session_id: str) -> int:
        with make_client(self.args) as client:
            client.deadline = self._retry_deadline()
            runner = Runner(client, self._settings(), self.console, SessionMetadata())
            with self._signals(runner):
                outcome = runner.wait_for(session_id)
        return self._finish(outcome)

    def _finish(self, outcome: Outcome, write_reports: bool = True) -> int:
        # Masked field by field before rendering: once a report escapes (XML, markdown) or cuts a text,
        # a secret no longer matches its mask in the rendered file.
        shown = Outcome.model_validate(redact_data(outcome.model_dump(), self.redact))
        written = self.write_reports(shown) if write_reports else {}
        self._publish(shown, written)
        self.console.line(_verdict_line(outcome))
        return outcome.exitCode

    def write_reports(self, outcome: Outcome) -> dict[str, Path]:
        """Each report on its own: one that cannot be rendered or written never costs the others."""
        from runner.reports import render_json, render_junit, render_markdown, write_atomic

        renderers = {"json": render_json, "junit": render_junit, "markdown": render_markdown}
        written = {}
        for kind, path in self.report_paths.items():
            try:
                write_atomic(path, self.redact(renderers[kind](outcome)))
                written[kind] = path
                self.console.line(f"{kind} report: {path}")
            except (OSError, ValueError) as exc:
                print(f"testsession: error: could not write {kind} report {path}: {exc}", file=sys.stderr)
        return written

    def _publish(self, outcome: Outcome, written: dict[str, Path]) -> None:
        """Hands the outcome to the CI system the job runs in (outputs, summaries, annotations)."""
        try:
            from runner.ci import publish
        except ImportError:
            return
        publish(outcome, written, self.environ, self.console, self.redact)


def _verdict_line(outcome: Outcome) -> str:
    c = outcome.counts
    counts = (
        f"{c.passed} passed, {c.failed} failed, {c.degraded} degraded, {c.flaky} flaky, "
        f"{c.error} error, {c.cancelled} cancelled"
    )
    detail = f" — {outcome.message}" if outcome.message else ""
    return f"verdict: {outcome.verdict.upper()} ({counts}); exit code {outcome.exitCode}{detail}"
