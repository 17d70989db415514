"""Shared fixtures: a fresh emulator per test (real HTTP on 127.0.0.1), worlds from dicts, paths."""

from __future__ import annotations

import copy
import fcntl
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from checks_servers import DnsServer, HttpServer, start_http, start_tcp
from helpers import CI_PREFIXES, DEEP_FACTOR, JUNIT_XSD, REPO_ROOT
from hypothesis import settings

from runner.emulator import Emulator
from runner.emulator.core.world import DEFAULT_WORLD

# Bytecode caching on for this process, its xdist workers and the children the tests start: with
# PYTHONDONTWRITEBYTECODE set (as on some CI images), every child would compile the package anew
# and every worker rewrite every test module again, which doubled the suite's CPU time here.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# HYPOTHESIS_PROFILE=deep (or pytest's --hypothesis-profile=deep): every property test runs DEEP_FACTOR
# times its examples (helpers.examples), a long run for a release or after a change to the parsers or
# renderers. Read here, never set: without it the suite runs its own counts.
settings.register_profile("deep", max_examples=100 * DEEP_FACTOR, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Fast enough that every default-world session (checks take 2-4 simulated seconds) ends in < 0.2 s.
TEST_SPEED = 25.0


# Set when every test this run selected is marked `browser` (.ci/run's browser phase, `-m browser`).
ONLY_BROWSER_TESTS = pytest.StashKey[bool]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The items after `-m`/`-k` deselected them (in each xdist worker: each collects the whole run)."""
    # What collection built (every test module, the package, hypothesis, schemathesis, fastapi) lives
    # until the end: out of the collector's sight, pytest's five gc.collect() at the session's end
    # (unraisableexception) took ~1.1 s of CPU less in each process (2.4 s instead of 3.6 s for a
    # whole --collect-only), in each of the 7 processes of .ci/run's three phases.
    gc.freeze()
    session.config.stash[ONLY_BROWSER_TESTS] = bool(session.items) and all(
        item.get_closest_marker("browser") is not None for item in session.items
    )


@pytest.fixture(autouse=True)
def _one_browser_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Tests marked `browser` run one at a time across the xdist workers when other tests run beside
    them: a Chromium takes a core, and two of them on a 2-core runner starve the suite's tests that
    wait on signals and deadlines. A run of browser tests only (.ci/run's browser phase) runs them
    as many at once as it has workers: nothing else is there to starve, and each keeps its own bounds."""
    if request.node.get_closest_marker("browser") is None or request.config.stash.get(
        ONLY_BROWSER_TESTS, False
    ):
        yield
        return
    lock = tmp_path_factory.getbasetemp().parent / "browser-tests.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


# The client's waits before a retry (its full-jitter backoff, a 429's Retry-After) at this fraction of
# their length, for tests that run the CLI in this process (`quick_retries`): such a test asserts which
# calls are resent, how often and what the run makes of it, not how long the client waits in between
# (test_client_policy.py's full-jitter test and test_client_faults.py's 429 tests do). The fault
# matrix's persistent cells spent ~4 s each asleep. The run's own bounds (wait, rca, the request
# timeout) stay real time.
RETRY_SLEEP_SCALE = 0.1


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ApiClient made in this process during the test sleeps RETRY_SLEEP_SCALE of each retry
    delay; the delays asked for, in full, are recorded."""
    from runner.client.http import ApiClient

    asked: list[float] = []
    built = ApiClient.__init__

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        time.sleep(seconds * RETRY_SLEEP_SCALE)

    def init(self: Any, *args: object, **kwargs: object) -> None:
        built(self, *args, **{**kwargs, "sleep": sleep})

    monkeypatch.setattr(ApiClient, "__init__", init)
    return asked


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Container tests run only when `-m` names them (`-m container`, scripts/test-image.sh, .ci/run's
    stand-in step). pyproject's `-m 'not container'` is replaced by any `-m` given on the command line,
    so `pytest -m "not browser"` used to replay the Dockerfile's install (~30 s of pip) in the middle
    of the suite, a second time after .ci/run's own step."""
    # The same for the installed-package tests (`-m installed`, .ci/run's own step: ~1-2 min of pip).
    named = config.option.markexpr or ""
    for marker in (m for m in ("container", "installed") if m not in named):
        dropped = [item for item in items if item.get_closest_marker(marker) is not None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.get_closest_marker(marker) is None]


def pytest_report_header() -> str:
    found = "found" if JUNIT_XSD.exists() else "absent: JUnit is checked for well-formedness only"
    return f"../shared/junit/junit-10.xsd: {found}"


HANG_CHECK = "0b9a3c4d-1111-4a5b-8c6d-000000000008"  # the default world's `hang` check


def never_ending_world() -> dict[str, Any]:
    """The default world, except that its hanging check never ends on its own (maxRunSeconds: never).

    For tests that need a session still running when they act (timeouts, cancels, interrupts); in the
    default world every check run ends at its maximum run time.
    """
    world = default_world_dict()
    for check in world["accounts"][0]["checks"]:
        if check["id"] == HANG_CHECK:
            check["maxRunSeconds"] = "never"
    return world


def _module_world(request: pytest.FixtureRequest) -> dict[str, Any] | None:
    """A test module says which world its emulator serves with `EMULATOR_WORLD = ...` (default: None)."""
    world: dict[str, Any] | None = getattr(request.module, "EMULATOR_WORLD", None)
    return copy.deepcopy(world) if world is not None else None


# The default world reads credentials from these; a developer's real ones must not leak in.
WORLD_VARIABLES = ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_ACCOUNT_HEADER")


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """A started emulator with the module's world (default world) at TEST_SPEED; stopped after the test.

    A module that sets `SHARE_EMULATOR = True` gets its `module_emulator` instead, reset before each
    test (accounts, keys, sessions, error groups, faults, settings, stats: as right after loading; the
    simulated clock runs on). A fresh one costs ~0.15 s of CPU (the app and its routes are built anew),
    one test in five of the suite used one; a module opts in when none of its tests stops the emulator
    or leaves requests under way that the next test would count."""
    for name in WORLD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if getattr(request.module, "SHARE_EMULATOR", False):
        shared: Emulator = request.getfixturevalue("module_emulator")
        shared.backend.reset()
        yield shared
        return
    emu = Emulator(world=_module_world(request), speed=TEST_SPEED).start()
    try:
        yield emu
    finally:
        emu.stop(wait=False)  # its thread winds down while the next test runs


@pytest.fixture
def cli_env(emulator: Emulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Emulator:
    """The `emulator` for in-process CLI runs: its credentials in TESTSESSION_*, no CI variables
    (a run must not publish into the CI job running the tests), the working directory tmp_path."""
    for name in list(os.environ):
        if name.startswith(CI_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TESTSESSION_API_KEY", emulator.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emulator.account_id)
    monkeypatch.setenv("TESTSESSION_BASE_URL", emulator.url)
    monkeypatch.chdir(tmp_path)
    return emulator


@pytest.fixture(scope="module")
def module_emulator(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """One emulator for a whole test module (fast); tests reset it with `emulator.backend.reset()`."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in WORLD_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        emu = Emulator(world=_module_world(request), speed=TEST_SPEED)
    with emu:
        yield emu


def default_world_dict() -> dict[str, Any]:
    """The default world as a dict (environment variables not expanded), for tests to modify."""
    import yaml

    data: dict[str, Any] = yaml.safe_load(DEFAULT_WORLD.read_text(encoding="utf-8"))
    return copy.deepcopy(data)


@pytest.fixture
def default_world() -> dict[str, Any]:
    return default_world_dict()


@pytest.fixture
def world_factory(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Emulator]]:
    """world_factory(world=None, speed=TEST_SPEED) -> a started Emulator (dict, path or None world)."""
    for name in WORLD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    started: list[Emulator] = []

    def start(world: dict[str, Any] | str | Path | None = None, speed: float | None = TEST_SPEED) -> Emulator:
        emu = Emulator(world=world, speed=speed).start()
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.stop(wait=False)


def auth_headers(emu: Emulator, key: str | None = None, account: str | None = None) -> dict[str, str]:
    """Headers of an authenticated request (the first account's read-write key unless told)."""
    return {"Authorization": f"Bearer {key or emu.api_key}", "X-Service-Account": account or emu.account_id}


@pytest.fixture
def api(emulator: Emulator) -> Callable[..., Any]:
    """api(method, path, key=None, account=None, **requests_kwargs) against the `emulator` fixture."""
    import requests

    session = requests.Session()

    def call(
        method: str, path: str, key: str | None = None, account: str | None = None, **kwargs: Any
    ) -> Any:
        headers = {**auth_headers(emulator, key, account), **kwargs.pop("headers", {})}
        return session.request(method, emulator.url + path, headers=headers, timeout=35, **kwargs)

    return call


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    """The HTTP(S) test server on loopback (checks_servers.start_http) for a module's real checks."""
    server = start_http()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tcp_port() -> Iterator[int]:
    """A PING/PONG line service on loopback (checks_servers.start_tcp) for a module's real TCP checks."""
    server, port = start_tcp()
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def dns_server() -> Iterator[DnsServer]:
    """A small UDP+TCP DNS server on loopback (checks_servers.DnsServer) for a module's DNS checks."""
    server = DnsServer()
    try:
        yield server
    finally:
        server.stop()
