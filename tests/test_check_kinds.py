"""Whether a check type runs here is said once (models/check_definitions.py CHECK_KINDS), and every
place that asks agrees with it: the engine's registry of protocols, the definition models, a checks
file, a world, `checks export`, the engine's own refusal and both analysers' browser types; a type
this version does not know fails closed everywhere."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import pytest

from runner.checks.analysis import by_browser, by_message
from runner.checks.checksfile import parse_checks
from runner.checks.declared import Mode
from runner.checks.failures import FailureKind
from runner.checks.protocols import REGISTRY, SELF_QUEUED
from runner.checks.run import run_attempt
from runner.checks.variables import Substitution, VariableSources
from runner.emulator.core.export import _not_runnable
from runner.emulator.core.world import parse_world
from runner.models.check_definitions import (
    CHECK_KINDS,
    DEFINITION_MODELS,
    NOT_RUNNABLE_REASONS,
    RUNNABLE_CHECK_TYPES,
    SCRIPT_CHECK_TYPES,
    Runs,
    parse_check_definition,
)

# What each runnable type needs to be run: a request of its shape, a script, or a project.
RUNNABLE: dict[str, dict[str, Any]] = {
    "API": {"request": {"method": "GET", "url": "http://127.0.0.1:9/"}},
    "URL": {"request": {"url": "http://127.0.0.1:9/"}},
    "TCP": {"request": {"hostname": "127.0.0.1", "port": 9}},
    "DNS": {"request": {"query": "example.test", "recordType": "A"}},
    "ICMP": {"request": {"hostname": "127.0.0.1"}},
    "TRACEROUTE": {"request": {"url": "127.0.0.1"}},
    "GRPC": {"request": {"url": "127.0.0.1", "port": 9, "grpcConfig": {"mode": "HEALTH", "tls": False}}},
    "SSL": {"request": {"sslConfig": {"hostname": "127.0.0.1", "port": 9}}},
    "BROWSER": {"script": "test('t', async () => {})"},
    "MULTI_STEP": {"script": "test('t', async () => {})"},
    "PLAYWRIGHT": {},
}
UNKNOWN = "SMOKE_SIGNAL"  # a type production may add later: this version does not run it


def test_the_runnable_types_are_the_table_s_and_each_has_its_protocol_and_model() -> None:
    runnable = {name for name, kind in CHECK_KINDS.items() if kind.runs is not None}
    assert set(RUNNABLE_CHECK_TYPES) == runnable == set(REGISTRY) == set(RUNNABLE)
    for name in runnable:
        # Found, not imported: a protocol's libraries (grpcio, dnspython) load only when a check runs.
        module = importlib.util.find_spec(f"runner.checks.protocols.{REGISTRY[name]}")
        assert module is not None and module.origin is not None, name
        assert "\nPROTOCOL = " in Path(module.origin).read_text(encoding="utf-8"), name
        assert DEFINITION_MODELS[name] is not DEFINITION_MODELS["OTHER"], name
    for name, kind in CHECK_KINDS.items():
        assert (kind.runs is None) == (kind.reason is not None) == (name in NOT_RUNNABLE_REASONS), name
    assert set(SCRIPT_CHECK_TYPES) >= SELF_QUEUED
    assert by_message.BROWSER_TYPES & runnable == by_browser.BROWSER_TYPES
    assert {name for name, kind in CHECK_KINDS.items() if kind.browser} == by_message.BROWSER_TYPES


def _check(name: str) -> dict[str, Any]:
    return {"id": name.lower(), "name": f"{name} check", "checkType": name, **RUNNABLE.get(name, {})}


@pytest.mark.parametrize("name", [*CHECK_KINDS, UNKNOWN])
def test_every_place_decides_a_type_as_the_table_does(name: str, tmp_path: Path) -> None:
    runs = CHECK_KINDS[name].runs if name in CHECK_KINDS else None
    check = _check(name)
    # A checks file (run --checks): the check's plan.
    loaded = parse_checks([check], str(tmp_path / "checks.yml"), {}).checks[0]
    if runs is None:
        assert loaded.plan.mode is Mode.NOT_RUNNABLE, name
    elif runs is not Runs.SCRIPT:  # a script needs Node to be judged runnable: not a question of its type
        assert loaded.plan.mode is Mode.REAL, (name, loaded.plan.reason)
    # A world that runs checks for real: the same plan.
    world = parse_world(
        {"accounts": [{"id": "a", "keys": [{"key": "tsk_test_0123456789"}], "checks": [check]}]}
    )
    assert world.accounts[0].checks[0].plan.mode is loaded.plan.mode, name
    # `checks export`: not runnable exactly when the table says so (a suite: its project is not in
    # an account, said otherwise).
    reason, _definition = _not_runnable(check)
    if runs is None:
        assert reason is not None and reason == loaded.plan.reason, name
    elif runs is Runs.REQUEST:
        assert reason is None, (name, reason)
    # The engine: a type that does not run here is refused with the table's reason, before anything
    # is sent; a known one of them in production's own words.
    definition = parse_check_definition(check)
    assert (definition.local_support() is None) == (runs is not None), name
    if runs is None:
        attempt = run_attempt(
            definition,
            number=1,
            subst=Substitution(VariableSources()),
            max_run_seconds=1,
            stop=threading.Event(),
        )
        assert attempt.error_kind is FailureKind.NOT_RUNNABLE_LOCALLY and attempt.message == reason
        if name in NOT_RUNNABLE_REASONS:
            assert attempt.message == NOT_RUNNABLE_REASONS[name]
