"""The service as a result source: trigger a session through the client and follow it
(session.py's worker). The service is a real account, or the emulator serving a world file."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from runner.job.outcome import SessionOutcome
from runner.job.session import CANCEL_WITHIN, SessionWorker
from runner.job.source import ListedCheck, SessionContext
from runner.models import TriggerRequest

if TYPE_CHECKING:
    from runner.client import ApiClient


class RemoteSource:
    def __init__(self, client: ApiClient) -> None:
        self.client = client

    def worker(self, context: SessionContext) -> SessionWorker:
        return SessionWorker(
            self.client,
            context.plan,
            context.where,
            context.environment,
            context.emit,
            context.stop,
            context.stop_code,
            context.clock,
        )

    def run_session(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        return self.worker(context).trigger_and_follow(request)

    def trigger_only(self, request: TriggerRequest, context: SessionContext) -> SessionOutcome:
        return self.worker(context).trigger_only(request)

    def cancel(self, session_id: str) -> None:
        self.client.cancel(session_id, within=CANCEL_WITHIN)

    def list_checks(self, tags: Iterable[str] = ()) -> Sequence[ListedCheck]:
        return self.client.list_checks(tags=list(tags))
