"""Synthetic but realistic Outcomes for report tests and benchmarks.

Import from tests as `from outcome_factory import ...` (pytest puts tests/ on sys.path).
Everything is deterministic: the same arguments give the same Outcome.
"""

from __future__ import annotations

import gc
import hashlib
import random
import uuid
from datetime import datetime, timedelta, timezone

from runner.job.outcome import (
    AnalysisOutcome,
    AttemptOutcome,
    CommitInfo,
    ErrorGroupOutcome,
    Outcome,
    ResultOutcome,
    SessionOutcome,
    count_results,
)
from runner.job.policy import Gate, checks_exit_code
from runner.models.analyses import Analysis, Artifact, Evidence, ReferenceLink

BASE_URL = "https://app.example.test"
STARTED = datetime(2024, 5, 17, 12, 0, 0, tzinfo=timezone.utc)
GATE = Gate()

STACK = (
    "Error: expect(received).toBe(expected)\n\n"
    "Expected: 200\nReceived: 503\n\n"
    "    at Object.<anonymous> (tests/checkout.spec.ts:42:23)\n"
    "    at processTicksAndRejections (node:internal/process/task_queues:95:5)"
)


def completed_analysis(group_id: str, classification: str = "BACKEND_ERROR") -> AnalysisOutcome:
    return AnalysisOutcome(
        state="completed",
        id=f"rca-{group_id}",
        provider="openai",
        model="gpt-4o",
        analysis=Analysis(
            classification=classification,
            rootCause="The payment service returns 503 while its connection pool is exhausted.",
            userImpact="Customers cannot finish checkout; the cart page shows an error.",
            codeFix="Raise `maxPoolSize` in payments/db.ts from 10 to 50 and release connections in finally.",
            evidence=[
                Evidence(
                    description="The HAR shows POST /api/pay answering 503 after 30 s.",
                    artifacts=[
                        Artifact(name="network.har", type="HAR"),
                        Artifact(name="trace.zip", type="TRACE"),
                    ],
                ),
                Evidence(description="The screenshot shows the error banner.", artifacts=[]),
            ],
            referenceLinks=[ReferenceLink(url=f"{BASE_URL}/docs/pools", title="Connection pools")],
        ),
    )


def unavailable_analysis(state: str = "unavailable", reason: str | None = None) -> AnalysisOutcome:
    reasons = {
        "unavailable": "402 Payment Required: AI analyses are not available on this plan",
        "timeout": "no result within 120 s",
        "pending": None,
        "error": "500 Internal Server Error",
        "skipped": "--no-analysis",
        "disabled": None,
    }
    return AnalysisOutcome(state=state, reason=reason if reason is not None else reasons.get(state))  # type: ignore[arg-type]


def error_group(
    group_id: str, message: str = STACK, analysis: AnalysisOutcome | None = None, count: int = 1
) -> ErrorGroupOutcome:
    return ErrorGroupOutcome(
        id=group_id,
        errorHash=f"hash-{group_id}",
        message=message,
        cleanedMessage=message.splitlines()[0] if message else None,
        count=count,
        analysis=analysis if analysis is not None else completed_analysis(group_id),
    )


def check_id(name: str) -> str:
    """A check id as the service gives them (a uuid), stable for a name: uuid.uuid5(NAMESPACE_URL,
    "check/" + the name's hex) spelled out, 0.19 s for 100,000 names where uuid5 takes 0.48 s."""
    data = uuid.NAMESPACE_URL.bytes + b"check/" + name.encode("utf-8", "surrogatepass").hex().encode()
    raw = bytearray(hashlib.sha1(data, usedforsecurity=False).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def result(
    verdict: str,
    name: str = "Checkout API",
    location: str = "us-east-1",
    result_id: str | None = None,
    error: str | None = None,
    group_ids: list[str] | None = None,
    duration: float | None = 1.5,
    **fields: object,
) -> ResultOutcome:
    """One final check result with a status that matches its verdict."""
    status = {
        "failed": "FAILED",
        "error": "ERROR",
        "running": "RUNNING",
        "cancelled": "CANCELLED",
    }.get(verdict, "PASSED")
    rid = result_id or f"res-{name.lower().replace(' ', '-')}-{location}-{verdict}"
    failed_attempts: list[AttemptOutcome] = []
    attempts = 1
    if verdict == "flaky":
        attempts = 3
        failed_attempts = [
            AttemptOutcome(
                id=f"{rid}-a{i}",
                link=f"{BASE_URL}/results/{rid}-a{i}",
                status="FAILED",
                durationSeconds=2.0,
                error=f"attempt {i}: TimeoutError: page.goto: Timeout 30000ms exceeded",
            )
            for i in (1, 2)
        ]
    if error is None and verdict in ("failed", "error"):
        error = STACK if verdict == "failed" else "Check run crashed: browser process exited (code 137)"
    if error is None and verdict == "degraded":
        error = "Response time 4200 ms is above the degraded threshold of 3000 ms"
    values: dict[str, object] = {
        "id": rid,
        "link": f"{BASE_URL}/results/{rid}",
        "checkId": check_id(name),
        "name": name,
        "checkType": "BROWSER" if "page" in name.lower() else "API",
        "runLocation": location,
        "status": status,
        "verdict": verdict,
        "durationSeconds": None if verdict == "running" else duration,
        "attempts": attempts,
        "failedAttempts": failed_attempts,
        "errorGroupIds": group_ids or [],
        "error": error,
    }
    values.update(fields)
    return ResultOutcome.model_validate(values)


def session(
    results: list[ResultOutcome],
    groups: list[ErrorGroupOutcome] | None = None,
    name: str = "Deploy checks",
    location: str = "us-east-1",
    session_id: str | None = None,
    **fields: object,
) -> SessionOutcome:
    sid = session_id or f"ts-{location}"
    values: dict[str, object] = {
        "name": name,
        "runLocation": location,
        "environment": "staging",
        "testSessionId": sid,
        "link": f"{BASE_URL}/test-sessions/{sid}",
        "status": "FAILED" if any(r.verdict in ("failed", "error") for r in results) else "PASSED",
        "startedAt": STARTED,
        "stoppedAt": STARTED + timedelta(seconds=42.5),
        "durationSeconds": 42.5,
        "exitCode": int(checks_exit_code(results, GATE)),
        "results": results,
        "errorGroups": groups or [],
    }
    values.update(fields)
    return SessionOutcome.model_validate(values)


def outcome(sessions: list[SessionOutcome], fail_on_degraded: bool = False, **fields: object) -> Outcome:
    """An Outcome whose counts, verdict and exit code follow from its results."""
    results = [r for s in sessions for r in s.results]
    # The verdict policy decides, as in a run (runner/job/policy.py); no copy of its rules here.
    failing = bool(checks_exit_code(results, Gate(fail_on_degraded=fail_on_degraded)))
    values: dict[str, object] = {
        "toolVersion": "0.1.0",
        "startedAt": STARTED,
        "finishedAt": STARTED + timedelta(seconds=61.25),
        "verdict": "failed" if failing else "passed",
        "exitCode": 1 if failing else 0,
        "failOnDegraded": fail_on_degraded,
        "commit": CommitInfo(
            commitId="3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
            branchName="feature/checkout",
            commitOwner="dev@example.test",
            commitMessage="Speed up checkout",
            repoUrl="https://git.example.test/shop",
            environment="staging",
        ),
        "counts": count_results(results),
        "sessions": sessions,
    }
    values.update(fields)
    return Outcome.model_validate(values)


def sample_outcome(fail_on_degraded: bool = False) -> Outcome:
    """Two locations; every verdict; groups with completed and unavailable analyses."""
    sessions = []
    for location in ("us-east-1", "eu-west-1"):
        g_ok = f"eg-pay-{location}"
        g_na = f"eg-crash-{location}"
        groups = [
            error_group(g_ok, count=1),
            error_group(g_na, "Check run crashed: browser process exited (code 137)", unavailable_analysis()),
        ]
        results = [
            result("passed", "Home page", location),
            result("passed", "Login API", location),
            result("failed", "Checkout API", location, group_ids=[g_ok]),
            result("error", "Search page", location, group_ids=[g_na]),
            result("degraded", "Catalog API", location),
            result("flaky", "Cart page", location),
            result("cancelled", "Account page", location),
        ]
        sessions.append(session(results, groups, location=location))
    return outcome(sessions, fail_on_degraded=fail_on_degraded)


VERDICT_WEIGHTS = {
    "passed": 80,
    "failed": 6,
    "error": 2,
    "degraded": 4,
    "flaky": 4,
    "cancelled": 3,
    "running": 1,
}


def big_outcome(n_results: int, seed: int = 0, locations: int = 4) -> Outcome:
    """n results spread over `locations` sessions with a realistic mix of verdicts."""
    # Built with the cyclic garbage collector paused: it would walk every model built so far again and
    # again (they hold no cycles). 100,000 results: ~1 s to build without it, ~3 s with it.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _big_outcome(n_results, seed, locations)
    finally:
        if paused:
            gc.enable()


def _big_outcome(n_results: int, seed: int, locations: int) -> Outcome:
    rng = random.Random(seed)
    verdicts = rng.choices(list(VERDICT_WEIGHTS), weights=list(VERDICT_WEIGHTS.values()), k=n_results)
    names = ["Home page", "Login API", "Checkout API", "Search page", "Catalog API", "Cart page"]
    sessions = []
    per = -(-n_results // locations) if n_results else 0
    for index in range(locations):
        location = f"region-{index}"
        states = ["completed", "unavailable", "timeout", "pending"]
        groups = [
            error_group(
                f"eg-{index}-{g}",
                analysis=completed_analysis(f"eg-{index}-{g}")
                if states[g % 4] == "completed"
                else unavailable_analysis(states[g % 4]),
            )
            for g in range(8)
        ]
        results = []
        for i in range(index * per, min(n_results, (index + 1) * per)):
            verdict = verdicts[i]
            group_ids = [groups[i % 8].id] if verdict in ("failed", "error", "running") else []
            results.append(
                result(
                    verdict,
                    f"{names[i % len(names)]} {i}",
                    location,
                    result_id=f"res-{i:07d}",
                    group_ids=group_ids,
                    duration=round(rng.uniform(0.2, 30.0), 3),
                )
            )
        sessions.append(session(results, groups, location=location, session_id=f"ts-{index}"))
    return outcome(sessions)
