"""The fault matrix of `testsession run`: every fault the emulator can throw, in every phase of a run.

Shared by tests/test_faults_matrix.py (asserts each cell) and bench/fault_table.py (writes the table).
A cell runs the real CLI in-process (`runner.cli.main.main`) against a real emulator over HTTP, then
reads what a user would read: the exit code, the three reports, the emulator's stats, the wall time.

The client's retry policy has no CLI knob (base 0.5 s, full jitter, 4 retries), so bursts are short
(count 2) and "persistent" faults are the only cells that use every retry.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from helpers import junit_xsd_errors

from runner.emulator.shell.hosts import CONTROL_HEADERS

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEED = 100.0  # simulated seconds per real second: the demo checks (2-4 s) end in < 0.05 s

# The client settings the cells rely on (runner/client/http.py, retry.py); no CLI flag changes them.
# --request-timeout. 2 s, not 1: a 0.2 s slow answer, or a long poll's last attempt, ran past 1 s with
# the run and the emulator sharing one process on a loaded 2-core machine (slow-trigger and
# non-json-wait failed so in a suite run). Costs the read-timeout cells ~1 s each, no CPU.
REQUEST_TIMEOUT = 2.0
MAX_BACKOFF_SUM = 0.5 + 1.0 + 2.0 + 4.0  # 4 retries, full jitter under 0.5 * 2**n
SLACK = 3.0  # process, thread and emulator overhead on a loaded 2-core machine

WAIT_TIMEOUT = 5.0  # wait.timeoutSeconds of the cell's spec
RCA_TIMEOUT = 4.0  # rca.timeoutSeconds
NORMAL = 1  # the demo world's all-outcomes checks include a failure: the normal verdict is exit 1
SERVICE = 4

# Phase -> the emulator routes a run uses in it (runner/models/operations.py OPERATIONS; create_analysis
# is the fault alias of both analysis-create operations).
PHASES: dict[str, str] = {
    "trigger": "trigger",
    "wait": "completion",
    "groups": "get_test_session_error_group",
    "create": "create_analysis",
    "get": "get_analysis",
}
ANALYSES_PHASES = ("groups", "create", "get")
# After a success on this route, the next phase's requests are under way: time to revoke the key.
PREVIOUS_ROUTE = {
    "wait": "trigger",
    "groups": "completion",
    "create": "get_test_session_error_group",
    "get": "create_test_session_error_group_analysis",
}


@dataclass(frozen=True)
class Fault:
    """A row of the matrix: what the emulator does to the phase's route."""

    id: str
    label: str
    spec: dict[str, Any] = field(default_factory=dict)  # a FaultSpec without its route
    # The client resends this on a read (GET, cancel), and on a create (trigger, create analysis).
    retried_read: bool = True
    retried_create: bool = False
    # The handler runs before the answer breaks (phase "after"): a create happened on the service.
    handler_ran: bool = True
    persistent: bool = False
    revoke: bool = False
    margin: float = 1.5  # seconds of retries and delays this fault may add to a run


FAULTS: tuple[Fault, ...] = (
    Fault("500", "500 burst", {"kind": "status", "status": 500, "count": 2}),
    Fault("502", "502 burst", {"kind": "status", "status": 502, "count": 2}),
    Fault(
        "503",
        "503 burst",
        {"kind": "status", "status": 503, "count": 2},
        retried_create=True,
        handler_ran=False,
    ),
    Fault("reset", "connection reset burst", {"kind": "reset", "count": 2}),
    Fault(
        "read-timeout",
        "read timeout (answer later than the client waits)",
        {"kind": "slow", "phase": "after", "delaySeconds": REQUEST_TIMEOUT + 0.5, "count": 2},
        margin=2 * (REQUEST_TIMEOUT + 0.5) + 1.5,
    ),
    Fault(
        "slow",
        "slow answer within the read timeout",
        {"kind": "slow", "delaySeconds": 0.2, "count": 2},
        retried_create=True,
        handler_ran=False,
    ),
    Fault("non-json", "non-JSON body (proxy page, 200)", {"kind": "non_json", "count": 2}),
    Fault("truncated", "truncated body", {"kind": "truncated", "count": 2}),
    Fault(
        "429",
        "429 storm with Retry-After: 1",
        {"kind": "rate_limit", "retryAfterSeconds": 1, "count": 2},
        retried_create=True,
        handler_ran=False,
        margin=2.5,
    ),
    Fault("revoked", "API key revoked mid-run", revoke=True, handler_ran=False, margin=1.5),
    Fault(
        "503-persistent",
        "503 persistent",
        {"kind": "status", "status": 503, "rate": 1.0},
        retried_create=True,
        handler_ran=False,
        persistent=True,
        margin=MAX_BACKOFF_SUM + 1.0,
    ),
    Fault(
        "reset-persistent",
        "connection reset persistent",
        {"kind": "reset", "rate": 1.0},
        persistent=True,
        margin=MAX_BACKOFF_SUM + 1.0,
    ),
)


@dataclass(frozen=True)
class Cell:
    fault: Fault
    phase: str
    exit_code: int
    sessions: int  # sessions the emulator must have created (exactly)
    analyses: str  # "completed": every analysis completed; "not-all": some not; "none": not reached
    wait_timeout: float = WAIT_TIMEOUT
    rca_timeout: float = RCA_TIMEOUT
    margin: float = 0.0
    heavy: bool = False

    @property
    def id(self) -> str:
        return f"{self.fault.id}-{self.phase}"

    @property
    def deadline(self) -> float:
        """The run's own deadline (wait, then analyses) plus what the fault may add."""
        return self.wait_timeout + self.rca_timeout + self.margin


def _cell(fault: Fault, phase: str) -> Cell:
    """Decides the documented outcome of one cell."""
    margin = fault.margin + SLACK
    heavy = fault.persistent or fault.id == "429"
    wait_timeout, rca_timeout = WAIT_TIMEOUT, RCA_TIMEOUT
    if phase == "trigger":
        if fault.revoke:
            return Cell(fault, phase, SERVICE, 0, "none", margin=margin)
        absorbed = fault.retried_create and not fault.persistent
        sessions = 1 if (absorbed or fault.handler_ran) else 0
        return Cell(
            fault,
            phase,
            NORMAL if absorbed else SERVICE,
            sessions,
            "completed" if absorbed else "none",
            margin=margin,
            heavy=heavy,
        )
    if phase == "wait":
        absorbed = fault.retried_read and not fault.persistent and not fault.revoke
        if fault.id == "read-timeout":
            # A long poll, retries included, ends by maxWaitSeconds + the request timeout (issue 16):
            # an answer later than that is a service error, not retried past the run's deadline.
            # wait.timeoutSeconds 1 keeps maxWaitSeconds at 1; the session ends in < 0.2 s anyway.
            wait_timeout = 1.0
            margin = 1.0 + REQUEST_TIMEOUT + SLACK
            absorbed = False
        return Cell(
            fault,
            phase,
            NORMAL if absorbed else SERVICE,
            1,
            "completed" if absorbed else "none",
            wait_timeout=wait_timeout,
            margin=margin,
            heavy=heavy,
        )
    # Analyses: whatever happens, the exit code is the checks' verdict.
    retried = fault.retried_create if phase == "create" else fault.retried_read
    absorbed = retried and not fault.persistent and not fault.revoke
    if fault.persistent:
        rca_timeout = 1.0  # the analyses' own deadline ends the retries
        margin = SLACK + 1.0
    return Cell(
        fault,
        phase,
        NORMAL,
        1,
        "completed" if absorbed else "not-all",
        rca_timeout=rca_timeout,
        margin=margin,
        heavy=heavy,
    )


def cells() -> list[Cell]:
    """The whole matrix: every fault in every phase (bench/fault_table.py runs it for docs/fault-table.md)."""
    return [_cell(fault, phase) for fault in FAULTS for phase in PHASES]


# The cells the suite leaves out, each with the cell it runs instead: the same path through the client
# (client/retry.py decides on the error class and the operation's CallKind, models/operations.py) and
# through the run (the phase's handling of what the client hands back), so the same documented outcome
# (test_faults_matrix asserts that it is). Every kind of fault (status, reset, slow, non-JSON, truncated,
# rate limit, revoked key) still meets both call kinds (CREATE, READ) in the suite, and in every phase
# where the run handles it differently. Each cell costs ~0.1 s of CPU (a run) and up to 6 s of wall
# time: the suite runs 44 of the 60.
ABSORBED_READ_BURSTS = ("500", "503", "reset", "read-timeout", "non-json", "truncated", "429", "slow")
EQUIVALENT: dict[str, str] = {
    # 502 is a ServerError as 500 is (core/errors.py); only 503 and 429 say "did nothing": every phase.
    **{f"502-{phase}": f"500-{phase}" for phase in PHASES if phase != "get"},
    "502-get": "500-groups",
    # A burst on the analysis read is absorbed by the client's retry loop (client/http.py) exactly as
    # on the group read before it: both READs of the analyses phase, the analysis completes.
    **{f"{fault}-get": f"{fault}-groups" for fault in ABSORBED_READ_BURSTS},
    # A CREATE answered 503 or 429, or late within the read timeout, is resent (or simply awaited) by
    # the same rule whether it starts a session or an analysis: the trigger's cell stands for both.
    "503-create": "503-trigger",
    "429-create": "429-trigger",
    "slow-create": "slow-trigger",
}


def suite_cells() -> list[Cell]:
    """The cells tests/test_faults_matrix.py runs: one per distinct path (EQUIVALENT names the rest)."""
    return [cell for cell in cells() if cell.id not in EQUIVALENT]


def fault_specs(cell: Cell) -> list[dict[str, Any]]:
    """The FaultSpecs to inject before the run."""
    route = PHASES[cell.phase]
    if cell.fault.revoke:
        if cell.phase == "trigger":
            return []
        # Hold the phase's requests before the handler (so before auth) while the key is revoked.
        return [{"route": route, "kind": "slow", "phase": "before", "delaySeconds": 0.5, "count": 3}]
    spec = dict(cell.fault.spec)
    if cell.phase == "wait" and cell.fault.id == "read-timeout":
        spec.update(delaySeconds=1.0 + REQUEST_TIMEOUT + 0.5, count=1)
    return [{"route": route, **spec}]


# --- running a cell ------------------------------------------------------------------------------


@dataclass
class CellResult:
    cell: Cell
    exit_code: int | None = None
    sessions: int | None = None
    wall: float = 0.0
    reports_valid: bool = False
    problems: list[str] = field(default_factory=list)
    analyses: list[str] = field(default_factory=list)  # analysis states in results.json
    partial: bool | None = None
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def write_spec(workdir: Path, cell: Cell) -> Path:
    reports = workdir / "reports"
    spec = f"""\
name: fault matrix {cell.id}
runLocation: eu-west-1
target:
  matchTags: [[all-outcomes]]
metadata:
  environment: fault-matrix
  commitId: 0123456789abcdef0123456789abcdef01234567
  branchName: main
wait:
  timeoutSeconds: {cell.wait_timeout:g}
rca:
  timeoutSeconds: {cell.rca_timeout:g}
reports:
  junit: {reports / "junit.xml"}
  markdown: {reports / "summary.md"}
  json: {reports / "results.json"}
"""
    path = workdir / "testsession.yml"
    path.write_text(spec, encoding="utf-8")
    return path


# CI variables would make an in-process run publish into the real CI job's outputs and summaries.
_CI_VARIABLES = ("GITHUB_ACTIONS", "GITLAB_CI", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")


@contextlib.contextmanager
def service_env(url: str, api_key: str, account_id: str) -> Iterator[None]:
    """TESTSESSION_* pointing at the emulator for the duration of an in-process run; restored after."""
    values = {
        "TESTSESSION_BASE_URL": url,
        "TESTSESSION_API_KEY": api_key,
        "TESTSESSION_ACCOUNT_ID": account_id,
    }
    saved = {name: os.environ.get(name) for name in (*values, *_CI_VARIABLES)}
    os.environ.update(values)
    for name in _CI_VARIABLES:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def inject(url: str, specs: list[dict[str, Any]]) -> None:
    if specs:
        answer = requests.post(f"{url}/_emulator/faults", headers=CONTROL_HEADERS, json=specs, timeout=5)
        answer.raise_for_status()


def emulator_stats(url: str) -> dict[str, Any]:
    data: dict[str, Any] = requests.get(f"{url}/_emulator/stats", headers=CONTROL_HEADERS, timeout=5).json()
    return data


def revoke(url: str, key: str) -> None:
    requests.post(
        f"{url}/_emulator/keys/revoke", headers=CONTROL_HEADERS, json={"key": key}, timeout=5
    ).raise_for_status()


class Revoker(threading.Thread):
    """Revokes the key as soon as the route before the cell's phase has answered once."""

    def __init__(self, url: str, key: str, after_route: str, limit: float = 10.0) -> None:
        super().__init__(daemon=True, name="revoker")
        self.url, self.key, self.after_route, self.limit = url, key, after_route, limit
        self.revoked = threading.Event()
        self.finished = threading.Event()
        # One more answer than before the run: a late answer of an earlier run may be counted too.
        self.before = self._answered()

    def _answered(self) -> int:
        return sum(emulator_stats(self.url)["requests"].get(self.after_route, {}).values())

    def run(self) -> None:
        deadline = time.monotonic() + self.limit
        while not self.finished.is_set() and time.monotonic() < deadline:
            if self._answered() > self.before:
                revoke(self.url, self.key)
                self.revoked.set()
                return
            time.sleep(0.02)


def check_reports(workdir: Path, exit_code: int) -> tuple[list[str], list[str], bool | None]:
    """(problems, analysis states, partial) of the three reports of a finished run."""
    from runner.core.errors import UsageError
    from runner.reports import load_outcome

    reports = workdir / "reports"
    problems: list[str] = []
    states: list[str] = []
    partial = None
    json_path = reports / "results.json"
    if not json_path.exists():
        problems.append("results.json missing")
    else:
        try:
            outcome = load_outcome(json_path.read_text(encoding="utf-8"), str(json_path))
        except UsageError as exc:
            problems.append(f"results.json: {exc}")
        else:
            partial = outcome.partial
            if outcome.exitCode != exit_code:
                problems.append(f"results.json exitCode {outcome.exitCode} != process exit code {exit_code}")
            states = [g.analysis.state for s in outcome.sessions for g in s.errorGroups if g.analysis]
            for session in outcome.sessions:
                for group in session.errorGroups:
                    if group.analysis and group.analysis.state != "completed" and not group.analysis.reason:
                        problems.append(f"analysis of {group.id} is {group.analysis.state} without a reason")
    junit = reports / "junit.xml"
    if not junit.exists():
        problems.append("junit.xml missing")
    else:
        try:
            problems += [f"junit.xml: {reason}" for reason in junit_xsd_errors(junit)][:3]
        except ET.ParseError as exc:
            problems.append(f"junit.xml does not parse: {exc}")
    markdown = reports / "summary.md"
    if not markdown.exists():
        problems.append("summary.md missing")
    elif markdown.stat().st_size >= 1024 * 1024:
        problems.append(f"summary.md is {markdown.stat().st_size} bytes (>= 1 MiB)")
    return problems, states, partial


def run_cell(cell: Cell, url: str, api_key: str, account_id: str, workdir: Path) -> CellResult:
    """Runs `testsession run` in-process against the emulator at `url` (new, or reset: nothing of an
    earlier run's left but late answers on closed connections) with the cell's faults."""
    from runner.cli.main import main

    result = CellResult(cell)
    spec = write_spec(workdir, cell)
    inject(url, fault_specs(cell))
    revoker = None
    if cell.fault.revoke:
        if cell.phase == "trigger":
            revoke(url, api_key)
        else:
            revoker = Revoker(url, api_key, PREVIOUS_ROUTE[cell.phase])
            revoker.start()
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        with (
            service_env(url, api_key, account_id),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            result.exit_code = main(["run", str(spec), "--request-timeout", f"{REQUEST_TIMEOUT:g}"])
    finally:
        result.wall = time.monotonic() - started
        if revoker is not None:
            revoker.finished.set()
            revoker.join(5)
    result.stdout, result.stderr = out.getvalue(), err.getvalue()
    if revoker is not None and not revoker.revoked.is_set():
        result.problems.append(f"the key was not revoked (no answer on {revoker.after_route} seen)")
    result.sessions = emulator_stats(url)["sessionsTotal"]
    problems, result.analyses, result.partial = check_reports(workdir, result.exit_code)
    result.reports_valid = not problems
    result.problems += problems
    _judge(result)
    return result


def _judge(result: CellResult) -> None:
    """Adds a problem for every way the run differs from the cell's documented outcome."""
    cell = result.cell
    if result.exit_code != cell.exit_code:
        result.problems.append(f"exit code {result.exit_code}, expected {cell.exit_code}")
    if result.sessions != cell.sessions:
        result.problems.append(f"{result.sessions} sessions created, expected {cell.sessions}")
    if result.wall > cell.deadline:
        result.problems.append(f"took {result.wall:.1f} s, more than {cell.deadline:.1f} s")
    expected_partial = cell.exit_code == SERVICE
    if result.partial is not None and result.partial != expected_partial:
        result.problems.append(f"results.json partial is {result.partial}, expected {expected_partial}")
    if cell.analyses == "completed" and (not result.analyses or set(result.analyses) != {"completed"}):
        result.problems.append(f"analyses {result.analyses}, expected all completed")
    if cell.analyses == "not-all" and (not result.analyses or set(result.analyses) == {"completed"}):
        result.problems.append(f"analyses {result.analyses}, expected some not completed")
    if cell.analyses == "none" and result.analyses:
        result.problems.append(f"analyses {result.analyses}, expected none (the run ended before)")
