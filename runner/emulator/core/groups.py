"""Error groups (a failure's cleaned message and its hash, per check) and their root cause analyses.

The key of a group (errorHash) is the hash of its cleaned message. For a scripted failure that is the
message with ids, times, addresses and numbers replaced (core/messages.py). A real check's failure brings
its fingerprint with its evidence (checks/fingerprint.py: the status, the failed assertion and what it
received, the error kind), and that is its cleaned message: a 503 and a 404 are two groups.

A group from a state file written before fingerprints (keyed by the old cleaned message) keeps that
key, and is also found by its last raw message: a failure whose fingerprint is exactly that message
(`STATUS_CODE EQUALS 200: received 503`) is still known, any other is new. A group the world seeds is
found by its cleaned message and by its raw message the same way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from runner.checks import evidence as evidence_data
from runner.checks.fingerprint import group_key
from runner.core.messages import clean_message, error_hash
from runner.emulator.core.clock import SimClock
from runner.emulator.core.failures import not_found
from runner.emulator.core.world import Account, WorldCheck, WorldErrorGroup, seen_at
from runner.models import (
    Analysis,
    AnalysisSummary,
    ErrorGroup,
    RootCauseAnalysis,
    TestSessionErrorGroup,
)

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt
    from runner.state.store import StateFile  # imported with a state file only (backend.py)

PROVIDER = "emulator"


@dataclass
class Group:
    id: str
    account_id: str
    kind: str  # "test-session" or "check"
    check: WorldCheck
    raw: str
    cleaned: str
    hash: str
    first_seen: float
    last_seen: float
    analyses: list[str] = field(default_factory=list)  # newest first
    environments: list[str] = field(default_factory=list)  # of the sessions that failed this way
    # What really happened in its latest failure, when a real check failed (secrets masked): the
    # analyser reads it. None for scripted failures.
    evidence: Attempt | None = None
    # Failed results in the group over every session this emulator (and its state file) has seen. A
    # group the world seeds counts as seen once: the world says when, not how often.
    occurrences: int = 1


@dataclass
class AnalysisJob:
    id: str
    account_id: str
    group_id: str
    created: float
    ready_at: float
    user_context: str | None
    content: Analysis | None = None
    model: str | None = None


class ErrorGroups:
    """Not thread-safe: the Backend calls it under its lock."""

    def __init__(self, clock: SimClock, state: StateFile | None = None) -> None:
        self._clock = clock
        self._state = state  # with --state: every change is saved, and load() reads what earlier runs left
        self._groups: dict[str, Group] = {}
        # (account id, check id, hash) -> the test-session group later failures land in
        self._index: dict[tuple[str, str, str], str] = {}
        self._analyses: dict[str, AnalysisJob] = {}

    def clear(self) -> None:
        self._groups.clear()
        self._index.clear()
        self._analyses.clear()

    @property
    def analyses_created(self) -> int:
        return len(self._analyses)

    def load(self, account: Account, checks: dict[str, WorldCheck]) -> None:
        """The groups (and completed analyses) the world says already exist."""
        now = self._clock.now()
        for spec in account.errorGroups:
            check = checks[spec.checkId]
            cleaned = clean_message(spec.rawErrorMessage)
            first, last = self._seen(spec, now)
            group = Group(
                spec.id, account.id, spec.kind, check, spec.rawErrorMessage, cleaned, error_hash(cleaned),
                first, last,
            )  # fmt: skip
            self._groups[group.id] = group
            if spec.kind == "test-session":  # later sessions failing the same way land in it
                self._index[(account.id, check.id, group.hash)] = group.id
                # A real check's failure whose fingerprint is the message the world wrote.
                self._index.setdefault((account.id, check.id, error_hash(spec.rawErrorMessage)), group.id)
            for existing in spec.analyses:
                job = AnalysisJob(
                    existing.id, account.id, group.id, now - 3600, now - 3600, existing.userContext
                )
                self._analyses[job.id] = job
                group.analyses.append(job.id)
        if self._state is not None:
            self._restore(account, checks)

    def _seen(self, spec: WorldErrorGroup, now: float) -> tuple[float, float]:
        """(firstSeen, lastSeen) in simulated time: relative ones from now, absolute ones as given."""

        def sim(value: str) -> float:
            moment = seen_at(value)
            if isinstance(moment, timedelta):
                return now + moment.total_seconds()
            return self._clock.from_datetime(moment)

        first = sim(spec.firstSeen) if spec.firstSeen else now - 86400
        last = sim(spec.lastSeen) if spec.lastSeen else (first if spec.firstSeen else now - 3600)
        return first, max(first, last)

    def record(
        self,
        account_id: str,
        check: WorldCheck,
        raw: str,
        seen: float,
        environment: str | None,
        evidence: Attempt | None = None,
    ) -> str:
        """The test-session group of a failure (made on its first occurrence); its id."""
        cleaned, digest = group_key(raw, evidence)
        key = (account_id, check.id, digest)
        group_id = self._index.get(key)
        if group_id is not None:
            group = self._groups[group_id]
            if seen >= group.last_seen:  # the latest failure's message and evidence
                group.raw, group.evidence = raw, evidence
            group.last_seen = max(group.last_seen, seen)
            group.occurrences += 1
        else:
            group_id = str(uuid.uuid4())
            group = Group(group_id, account_id, "test-session", check, raw, cleaned, digest, seen, seen)
            group.evidence = evidence
            self._groups[group.id] = group
            self._index[key] = group.id
        if environment and environment not in group.environments:
            group.environments.append(environment)
        self._save(group)
        return group.id

    def _group(self, account_id: str, group_id: str, kind: str) -> Group:
        group = self._groups.get(group_id)
        if group is None or group.account_id != account_id or group.kind != kind:
            raise not_found("Error group")
        return group

    def view(self, account_id: str, group_id: str, kind: str) -> ErrorGroup:
        group = self._group(account_id, group_id, kind)
        # Production's test-session groups also carry the environments they occurred in and, for
        # Playwright check suites, where in the suite: the emulator runs no suites, so that is null.
        # `occurrences` is the emulator's own (production's groups carry no count): see docs/emulator.md.
        extra: dict[str, Any] = (
            {"environments": list(group.environments), "pwtMetadata": None, "occurrences": group.occurrences}
            if kind == "test-session"
            else {}
        )
        model = TestSessionErrorGroup if kind == "test-session" else ErrorGroup
        return model(
            id=group.id,
            checkId=group.check.id,
            errorHash=group.hash,
            rawErrorMessage=group.raw,
            cleanedErrorMessage=group.cleaned,
            firstSeen=self._clock.iso(group.first_seen),
            lastSeen=self._clock.iso(group.last_seen),
            archivedUntilNextEvent=False,
            rootCauseAnalyses=[self._summary(self._analyses[a]) for a in group.analyses],
            **extra,
        )

    def create_analysis(
        self, account_id: str, group_id: str, kind: str, user_context: str | None, delay: float
    ) -> RootCauseAnalysis:
        group = self._group(account_id, group_id, kind)
        now = self._clock.now()
        job = AnalysisJob(str(uuid.uuid4()), account_id, group.id, now, now + delay, user_context)
        self._analyses[job.id] = job
        group.analyses.insert(0, job.id)
        self._save_analysis(job)
        self._save(group)
        return RootCauseAnalysis(id=job.id, status="PENDING")

    def _complete(self, job: AnalysisJob) -> Analysis | None:
        """The analysis content once its simulated generation time is over, else None. One completed
        before (read back from a state file) stays completed, whatever this process's clock says."""
        if job.content is not None:
            return job.content
        if self._clock.now() < job.ready_at:
            return None
        if job.content is None:
            # Only once an analysis completes: a real failure's evidence, else its message.
            from runner.checks.analysis.by_evidence import analyse_run
            from runner.checks.analysis.by_message import analyse

            group = self._groups[job.group_id]
            check = group.check
            if group.evidence is not None:
                job.content, job.model = analyse_run(group.evidence, group.raw, check.checkType, check.name)
            else:
                job.content, job.model = analyse(group.raw, check.checkType, check.name)
            self._save_analysis(job)
        return job.content

    def _summary(self, job: AnalysisJob) -> AnalysisSummary:
        content = self._complete(job)
        return AnalysisSummary(
            id=job.id,
            status="COMPLETED" if content else "PENDING",  # not a field of the summary: an extra one
            created_at=self._clock.iso(job.created),
            analysis=content,
            provider=PROVIDER if content else None,
            model=job.model,
            durationMs=round((job.ready_at - job.created) * 1000) if content else None,
            userContext=job.user_context,
        )

    def analysis(self, account_id: str, analysis_id: str) -> RootCauseAnalysis:
        """Pending (id and status only) or completed."""
        job = self._analyses.get(analysis_id)
        if job is None or job.account_id != account_id:
            raise not_found("Root cause analysis")
        content = self._complete(job)
        if content is None:
            return RootCauseAnalysis(id=job.id, status="PENDING")
        group = self._groups[job.group_id]
        return RootCauseAnalysis(
            id=job.id,
            status="COMPLETED",
            checkType=group.check.checkType,
            provider=PROVIDER,
            model=job.model,
            checkId=group.check.id,
            errorGroupId=group.id,
            durationMs=round((job.ready_at - job.created) * 1000),
            analysis=content,
            created_at=self._clock.iso(job.created),
        )

    # --- the state file (--state) ----------------------------------------------------------------

    def _save(self, group: Group) -> None:
        if self._state is None:
            return
        from runner.state.store import GroupRow

        epoch = self._clock.to_epoch
        evidence = evidence_data.to_data(group.evidence) if group.evidence is not None else None
        self._state.save_group(
            GroupRow(
                group.id, group.account_id, group.kind, group.check.id, group.raw, group.cleaned,
                group.hash, epoch(group.first_seen), epoch(group.last_seen), list(group.environments),
                list(group.analyses), group.occurrences, evidence,
            )
        )  # fmt: skip

    def _save_analysis(self, job: AnalysisJob) -> None:
        if self._state is None:
            return
        from runner.state.store import AnalysisRow

        epoch = self._clock.to_epoch
        content = job.content.model_dump_json(exclude_none=True) if job.content is not None else None
        self._state.save_analysis(
            AnalysisRow(
                job.id, job.account_id, job.group_id, epoch(job.created), epoch(job.ready_at),
                job.user_context, job.model, content,
            )
        )  # fmt: skip

    def _restore(self, account: Account, checks: dict[str, WorldCheck]) -> None:
        """The account's groups and analyses from earlier runs, over the world's seeds (the file's
        history wins: a seed's relative firstSeen must not move with every start). A group whose check
        is no longer in the world stays in the file, unserved."""
        assert self._state is not None
        sim = self._clock.from_epoch
        stored: dict[str, list[str]] = {}
        for row in self._state.groups(account.id):  # oldest first: the oldest takes the index
            check = checks.get(row.check_id)
            if check is None or row.kind not in ("test-session", "check"):
                continue
            # Cleaned and hashed again: a group found by today's grouping rules is the one a failure
            # of today lands in. Its evidence carries a real failure's fingerprint.
            evidence = evidence_data.from_data(row.evidence)  # None: analysed from its message
            cleaned, digest = group_key(row.raw, evidence)
            group = self._groups.get(row.id)
            if group is None:
                group = Group(row.id, account.id, row.kind, check, row.raw, cleaned, "", 0, 0)
                self._groups[group.id] = group
            elif group.account_id != account.id:
                continue
            group.raw, group.cleaned, group.hash = row.raw, cleaned, digest
            group.first_seen, group.last_seen = sim(row.first_seen), sim(row.last_seen)
            group.environments = list(row.environments)
            group.occurrences = row.occurrences
            group.evidence = evidence
            stored[group.id] = row.analyses
            if group.kind == "test-session":
                self._index.setdefault((account.id, check.id, group.hash), group.id)
                if evidence is None or evidence.fingerprint is None:  # keyed before fingerprints
                    self._index.setdefault((account.id, check.id, error_hash(row.raw)), group.id)
        for arow in self._state.analyses(account.id):
            if arow.group_id not in stored:
                continue
            content = Analysis.model_validate_json(arow.content) if arow.content else None
            self._analyses[arow.id] = AnalysisJob(
                arow.id, account.id, arow.group_id, sim(arow.created), sim(arow.ready_at), arow.user_context,
                content, arow.model,
            )  # fmt: skip
        for group_id, analyses in stored.items():
            group = self._groups[group_id]
            kept = [a for a in analyses if a in self._analyses]
            group.analyses = kept + [a for a in group.analyses if a not in kept]
