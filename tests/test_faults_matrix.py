"""`testsession run` under every emulator fault in every phase: the documented exit code, valid reports,
at most one session, and an end within the run's deadline plus what the fault may add.

The cells and their expected outcomes are in fault_cells.py (bench/fault_table.py runs all 60 for
docs/fault-table.md); the suite runs one cell per distinct path, fault_cells.EQUIVALENT names the cell
that stands for each of the others. JUnit is validated against ../shared/junit/junit-10.xsd when present,
else only parsed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_cells import (
    EQUIVALENT,
    FAULTS,
    PHASES,
    SERVICE,
    SPEED,
    Cell,
    Fault,
    cells,
    run_cell,
    suite_cells,
)

from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.models.operations import OPERATIONS, CallKind

CELLS = cells()
RUN = suite_cells()


@pytest.fixture(scope="module")
def matrix_emulator() -> Iterator[Emulator]:
    """One emulator for the module's cells (on each worker): a new one costs ~0.15 s of CPU, more than
    the rest of a cell. Built without the developer's TESTSESSION_* credentials (the world's own)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID"):
            monkeypatch.delenv(name, raising=False)
        emu = Emulator(speed=SPEED)
    with emu:
        yield emu


def late_answers(cell: Cell) -> bool:
    """The cell's fault answers after the client gave up (slow after the handler, beyond the request
    timeout): that answer is still on its way when the run ends."""
    return cell.fault.spec.get("kind") == "slow" and cell.fault.spec.get("phase") == "after"


@pytest.fixture
def cell_emulator(cell: Cell, matrix_emulator: Emulator) -> Iterator[Emulator]:
    """An emulator as if new for the cell: the module's, reset (sessions, keys, faults, settings,
    stats), or a new one for a fault whose answers come late.

    Nothing a cell leaves can reach the next one then: every other fault answers (or drops the
    connection) before the run goes on, and every session of the demo world ends in < 0.05 s, so
    no long poll is left waiting either. The revoker waits for one more answer than when it started.
    """
    if not late_answers(cell):
        matrix_emulator.backend.reset()
        yield matrix_emulator
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID"):
            monkeypatch.delenv(name, raising=False)
        emu = Emulator(speed=SPEED).start()
    yield emu
    emu.stop(wait=False)  # its thread winds down while the next cell runs


def _param(cell: Cell) -> object:
    marks = [pytest.mark.heavy] if cell.heavy else []
    return pytest.param(cell, id=cell.id, marks=marks)


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize("cell", [_param(c) for c in RUN])
def test_fault_cell(cell: Cell, cell_emulator: Emulator, tmp_path: Path) -> None:
    emu = cell_emulator
    result = run_cell(cell, emu.url, emu.api_key, emu.account_id, tmp_path)
    detail = "\n".join(
        [*result.problems, f"wall {result.wall:.2f} s", "stdout:", result.stdout, "stderr:", result.stderr]
    )
    assert result.ok, detail
    if result.exit_code == SERVICE:
        # One line naming what failed, never a traceback.
        assert "Traceback" not in result.stderr
        assert "verdict: SERVICE-ERROR" in result.stdout


def test_the_matrix_covers_every_fault_in_every_phase() -> None:
    assert {(c.fault.id, c.phase) for c in CELLS} == {(f.id, p) for f in FAULTS for p in PHASES}
    assert len(CELLS) == len(FAULTS) * len(PHASES)


def _kind(phase: str) -> CallKind:
    """The call kind of the phase's operation (`create` is the alias of the analysis creations)."""
    name = {"create": "create_test_session_error_group_analysis"}.get(phase, PHASES[phase])
    return next(op.kind for op in OPERATIONS if op.name == name)


def _fault_kind(fault: Fault) -> str:
    return "revoke" if fault.revoke else str(fault.spec["kind"])


def test_a_cell_left_out_of_the_suite_has_the_outcome_of_the_cell_run_for_it() -> None:
    by_id = {c.id: c for c in CELLS}
    run = {c.id for c in RUN}
    assert run | set(EQUIVALENT) == set(by_id) and not run & set(EQUIVALENT)
    for left_out, stand_in in EQUIVALENT.items():
        a, b = by_id[left_out], by_id[stand_in]
        assert stand_in in run, left_out
        assert _kind(a.phase) is _kind(b.phase), left_out  # the client's retry rule depends on it
        assert (a.exit_code, a.sessions, a.analyses) == (b.exit_code, b.sessions, b.analyses), left_out
    # Every kind of fault (a status, a reset, a slow or broken answer, a rate limit, a revoked key)
    # still meets a CREATE and a READ, and every phase of the run meets some fault.
    for kind in {_fault_kind(f) for f in FAULTS}:
        met = {_kind(c.phase) for c in RUN if _fault_kind(c.fault) == kind}
        assert met >= {CallKind.CREATE, CallKind.READ}, kind
    assert {c.phase for c in RUN} == set(PHASES)


def test_the_documented_cells() -> None:
    """The rules of the matrix, stated once so that a change of fault_cells.py shows up here."""
    by_id = {c.id: c for c in CELLS}
    # A 500 after the trigger handler ran: never resent, so exactly one session and exit 4.
    assert (by_id["500-trigger"].exit_code, by_id["500-trigger"].sessions) == (ExitCode.SERVICE, 1)
    # The service said it did nothing (503, 429): resent, the run goes on to its normal verdict.
    assert by_id["503-trigger"].exit_code == ExitCode.CHECKS_FAILED
    assert by_id["429-trigger"].exit_code == ExitCode.CHECKS_FAILED
    # A persistent 503 on the trigger: no session at all.
    assert (by_id["503-persistent-trigger"].exit_code, by_id["503-persistent-trigger"].sessions) == (4, 0)
    assert by_id["503-persistent-wait"].exit_code == ExitCode.SERVICE
    assert by_id["revoked-wait"].exit_code == ExitCode.SERVICE
    # Nothing in the analyses phase changes the exit code.
    for cell in CELLS:
        if cell.phase in ("groups", "create", "get"):
            assert cell.exit_code == ExitCode.CHECKS_FAILED, cell.id
