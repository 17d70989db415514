"""Where a run's results come from: the port between the job and the checks' runner.

The job (run.py) asks a `ResultSource` to run one session and gets its `SessionOutcome` back; while
the session runs, the source reports what happens as the job's events (Triggered, ResultFinished,
Progress, AnalysisReady, SessionFinished ...), the same events whatever the source, so the console
and the reports cannot tell one from the other. Two adapters:

- `RemoteSource` (remote.py): the service through the client, a real account or the emulator (a
  world file's, over HTTP or in this process): trigger, then follow the session it answers.
- `LocalSource` (local.py): a checks file's checks run by the engine (runner/checks/) in this
  process, each attempt handed to the job as it ends; known or new, the history and the analyses
  come from the evidence and the state file (runner/state/) directly. No service, no emulator.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from runner.core.exitcodes import ExitCode
from runner.job.events import Event, Where
from runner.job.outcome import SessionOutcome
from runner.job.plan import SessionPlan
from runner.models import TriggerRequest


@dataclass(frozen=True)
class SessionContext:
    """What a source needs of the run to run one session: its options, where the session is in the
    run, where its events go, and the run's stop (a signal, the run's deadline)."""

    plan: SessionPlan
    where: Where
    environment: str | None
    emit: Callable[[Event], None]
    stop: threading.Event
    stop_code: Callable[[], ExitCode | None]
    clock: Callable[[], float] = field(default=time.monotonic)


class ListedCheck(Protocol):
    """A check as a listing shows it: what a target selects by (`Target.selects`)."""

    @property
    def id(self) -> str: ...

    @property
    def tags(self) -> list[str]: ...

    @property
    def activated(self) -> bool | None: ...


class ResultSource(Protocol):
    def run_session(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        """Runs the session to its end (or the run's stop) and hands back its outcome; never raises
        for what the session met (a refusal, a failed check): that is in the outcome."""
        ...

    def trigger_only(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        """`--detach`: starts the session and hands back its id without waiting for it."""
        ...

    def cancel(self, session_id: str) -> None:
        """Best effort, bounded: the run is ending and the session must not run on."""
        ...

    def list_checks(self, tags: Iterable[str] = ()) -> Sequence[ListedCheck]:
        """The checks a target may select (a sharded run's split): with one of `tags`, else all."""
        ...
