"""A local run's error groups and their analyses, from the evidence and the state file directly.

A failure lands in the group of its check and its key: a real failure's fingerprint (the status, the
failed assertion and what it received, the error kind: checks/fingerprint.py), else its message
cleaned (core/messages.py). A group first seen before the run started is known; one this run made is
new (job/known.py judges it). With a state file (`--state`, runner/state/store.py) the groups, their
occurrences and analyses are read back at the start and every change is saved, under the account
`local` (the rows earlier versions wrote through the emulator are the same rows). The analysis of a
group is the engine's (checks/analysis/): from the evidence of its latest real failure, else its message.

One book serves every session of the run: its lock makes each call whole (sessions run on threads of
their own); it hands back values, never its records.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from runner.checks import evidence as evidence_data
from runner.checks.checksfile import ACCOUNT_ID
from runner.checks.fingerprint import group_key
from runner.core.messages import error_hash
from runner.job.analyses import AnalysisPlan
from runner.job.outcome import AnalysisOutcome, ErrorGroupOutcome
from runner.models import Analysis

if TYPE_CHECKING:
    from runner.checks.checksfile import FileCheck
    from runner.checks.outcome import Attempt
    from runner.state.store import StateFile

# The provider an analysis names: the engine's own rules, run here (the emulator's say "emulator").
PROVIDER = "local"


def moment(epoch: float) -> datetime:
    """A time as the service writes it (milliseconds, UTC)."""
    value = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


@dataclass
class _Group:
    id: str
    check_id: str
    check_type: str
    check_name: str
    raw: str
    cleaned: str
    hash: str
    first_seen: float  # epoch seconds
    last_seen: float
    environments: list[str] = field(default_factory=list)
    analyses: list[str] = field(default_factory=list)  # newest first
    evidence: Attempt | None = None  # of its latest real failure (secrets masked)
    occurrences: int = 1


@dataclass
class _Analysis:
    id: str
    group_id: str
    created: float
    model: str | None
    content: Analysis | None
    user_context: str | None = None


class GroupBook:
    def __init__(self, checks: dict[str, FileCheck], state: StateFile | None = None) -> None:
        self._checks = checks
        self._state = state
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._index: dict[tuple[str, str], str] = {}  # (check id, hash) -> the group failures land in
        self._analyses: dict[str, _Analysis] = {}
        if state is not None:
            self._restore(state)

    def record(
        self, check: FileCheck, raw: str, evidence: Attempt | None, seen: float, environment: str | None
    ) -> str:
        """The group of a failure (made on its first occurrence); its id."""
        cleaned, digest = group_key(raw, evidence)
        with self._lock:
            group_id = self._index.get((check.id, digest))
            if group_id is not None:
                group = self._groups[group_id]
                if seen >= group.last_seen:  # the latest failure's message and evidence
                    group.raw, group.evidence = raw, evidence
                group.last_seen = max(group.last_seen, seen)
                group.occurrences += 1
            else:
                group = _Group(
                    str(uuid.uuid4()), check.id, check.checkType, check.name, raw, cleaned, digest, seen, seen
                )
                group.evidence = evidence
                self._groups[group.id] = group
                self._index[(check.id, digest)] = group.id
            if environment and environment not in group.environments:
                group.environments.append(environment)
            self._save(group)
            return group.id

    def outcome(self, group_id: str) -> ErrorGroupOutcome:
        """The group as a report shows it (this session's count and the analysis are the caller's)."""
        with self._lock:
            group = self._groups[group_id]
            return ErrorGroupOutcome(
                id=group.id,
                errorHash=group.hash,
                message=group.raw,
                cleanedMessage=group.cleaned,
                firstSeen=moment(group.first_seen),
                lastSeen=moment(group.last_seen),
                occurrences=group.occurrences,
            )

    def analysis(self, group_id: str, plan: AnalysisPlan, now: float) -> AnalysisOutcome:
        """The group's newest analysis when it has one, else (rca.generate) one made now."""
        with self._lock:
            group = self._groups[group_id]
            newest = self._analyses.get(group.analyses[0]) if group.analyses else None
            if newest is None or newest.content is None:
                if not plan.generate:
                    return AnalysisOutcome(
                        state="unavailable", reason="none exists and rca.generate is false"
                    )
                newest = self._analyse(group, plan.context, now)
            return AnalysisOutcome(
                state="completed",
                id=newest.id,
                provider=PROVIDER,
                model=newest.model,
                analysis=newest.content,
            )

    def _analyse(self, group: _Group, context: str | None, now: float) -> _Analysis:
        # Only once an analysis is asked for: the rules of the engine, from the evidence, else the message.
        from runner.checks.analysis.by_evidence import analyse_run
        from runner.checks.analysis.by_message import analyse

        if group.evidence is not None:
            content, model = analyse_run(group.evidence, group.raw, group.check_type, group.check_name)
        else:
            content, model = analyse(group.raw, group.check_type, group.check_name)
        made = _Analysis(str(uuid.uuid4()), group.id, now, model, content, context)
        self._analyses[made.id] = made
        group.analyses.insert(0, made.id)
        self._save_analysis(made)
        self._save(group)
        return made

    # --- the state file ------------------------------------------------------------------------

    def _save(self, group: _Group) -> None:
        if self._state is None:
            return
        from runner.state.store import GroupRow

        evidence = evidence_data.to_data(group.evidence) if group.evidence is not None else None
        self._state.save_group(
            GroupRow(
                group.id, ACCOUNT_ID, "test-session", group.check_id, group.raw, group.cleaned, group.hash,
                group.first_seen, group.last_seen, list(group.environments), list(group.analyses),
                group.occurrences, evidence,
            )
        )  # fmt: skip

    def _save_analysis(self, made: _Analysis) -> None:
        if self._state is None:
            return
        from runner.state.store import AnalysisRow

        content = made.content.model_dump_json(exclude_none=True) if made.content is not None else None
        self._state.save_analysis(
            AnalysisRow(
                made.id, ACCOUNT_ID, made.group_id, made.created, made.created, made.user_context,
                made.model, content,
            )
        )  # fmt: skip

    def _restore(self, state: StateFile) -> None:
        """What earlier runs left: their groups of checks still in the file (oldest first: the
        oldest takes the index) and the completed analyses of those groups."""
        stored: dict[str, list[str]] = {}
        for row in state.groups(ACCOUNT_ID):
            check = self._checks.get(row.check_id)
            if check is None or row.kind != "test-session":
                continue
            # Cleaned and hashed again: a group found by today's grouping rules is the one a failure
            # of today lands in. Its evidence carries a real failure's fingerprint.
            evidence = evidence_data.from_data(row.evidence)
            cleaned, digest = group_key(row.raw, evidence)
            group = _Group(
                row.id, check.id, check.checkType, check.name, row.raw, cleaned, digest,
                row.first_seen, row.last_seen, list(row.environments), [], evidence, row.occurrences,
            )  # fmt: skip
            self._groups[group.id] = group
            stored[group.id] = row.analyses
            self._index.setdefault((check.id, group.hash), group.id)
            if evidence is None or evidence.fingerprint is None:  # keyed before fingerprints
                self._index.setdefault((check.id, error_hash(row.raw)), group.id)
        for arow in state.analyses(ACCOUNT_ID):
            if arow.group_id in stored:
                content = Analysis.model_validate_json(arow.content) if arow.content else None
                self._analyses[arow.id] = _Analysis(
                    arow.id, arow.group_id, arow.created, arow.model, content, arow.user_context
                )
        for group_id, analyses in stored.items():
            self._groups[group_id].analyses = [a for a in analyses if a in self._analyses]
