"""Fault injection over real HTTP: what a requests client sees for each fault kind, and when it fires."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runner.emulator.core.backend import Backend
from runner.emulator.core.faults import ROUTE_ALIASES, FaultInjector, FaultSpec
from runner.emulator.shell.middleware import FaultMiddleware
from runner.models.operations import NAMES, OPERATIONS, find

TIMEOUT = 5.0


class Handlers:
    """A tiny stand-in for the emulator: counts the handler runs, so tests see the side effects."""

    def __init__(self) -> None:
        self.triggers = 0
        self.reads = 0

    async def trigger(self, request: Request) -> Response:
        self.triggers += 1
        return JSONResponse({"testSessionId": f"s-{self.triggers}", "status": "RUNNING"}, status_code=201)

    async def get_session(self, request: Request) -> Response:
        self.reads += 1
        return JSONResponse({"testSessionId": request.path_params["id"], "padding": "x" * 400})

    async def delete_window(self, request: Request) -> Response:
        return Response(status_code=204)

    async def control(self, request: Request) -> Response:
        return JSONResponse({"ok": True})


class PassThrough:
    """Wraps `send` in a closure, as Starlette's and the emulator's own middlewares do."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def wrapped(message: Message) -> None:
            await send(message)

        await self.app(scope, receive, wrapped)


class Server:
    def __init__(self) -> None:
        self.handlers = Handlers()
        app = Starlette(
            routes=[
                Route("/v1/test-sessions/trigger", self.handlers.trigger, methods=["POST"]),
                Route("/v1/test-sessions/{id}", self.handlers.get_session, methods=["GET"]),
                Route("/v1/maintenance-windows/{id}", self.handlers.delete_window, methods=["DELETE"]),
                Route("/_emulator/state", self.handlers.control, methods=["GET"]),
                Route("/v1/other", self.handlers.control, methods=["GET"]),
            ]
        )
        # The stand-in serves; the middleware matches requests on the real API's operation table.
        self.middleware = FaultMiddleware(app, Backend())
        config = uvicorn.Config(
            PassThrough(self.middleware), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    @property
    def injector(self) -> FaultInjector:
        return self.middleware.backend.faults

    def fresh(self, seed: int | None = 1) -> FaultInjector:
        self.middleware.backend.faults = FaultInjector(seed=seed)
        self.handlers.triggers = self.handlers.reads = 0
        return self.middleware.backend.faults

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def running() -> Iterator[Server]:
    server = Server()
    yield server
    server.stop()


@pytest.fixture
def srv(running: Server) -> Server:
    running.fresh()
    return running


def fault(**fields: Any) -> FaultSpec:
    return FaultSpec.model_validate(fields)


def trigger(srv: Server, **kwargs: Any) -> requests.Response:
    return requests.post(f"{srv.url}/v1/test-sessions/trigger", json={"name": "x"}, timeout=TIMEOUT, **kwargs)


def read(srv: Server, **kwargs: Any) -> requests.Response:
    return requests.get(f"{srv.url}/v1/test-sessions/abc", timeout=TIMEOUT, **kwargs)


# --- routes and specs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/test-sessions/trigger", "trigger"),
        ("GET", "/v1/test-sessions/5f0c", "get_session"),
        ("GET", "/v1/test-sessions/5f0c/completion", "completion"),
        ("POST", "/v1/test-sessions/5f0c/cancel", "cancel"),
        ("GET", "/v1/test-session-error-groups/g1", "get_test_session_error_group"),
        ("GET", "/v1/error-groups/g1", "get_error_group"),
        (
            "POST",
            "/v1/root-cause-analyses/test-session-error-groups/g1",
            "create_test_session_error_group_analysis",
        ),
        ("POST", "/v1/root-cause-analyses/error-groups/g1", "create_error_group_analysis"),
        ("GET", "/v1/root-cause-analyses/a1", "get_analysis"),
        ("POST", "/v1/status-pages/incidents/i1/incident-updates", "incident_update"),
        ("DELETE", "/v1/maintenance-windows/w1", "delete_maintenance_window"),
        ("DELETE", "/v1/maintenance-windows/w1/maintenances/m1", "delete_maintenance"),
        ("DELETE", "/v1/client-certificates/c1", "delete_client_certificate"),
        ("POST", "/v1/dashboards", "create_dashboard"),
        ("put", "/v1/checks/c1", "update_check"),
        ("GET", "/v1/test-sessions/trigger/extra", None),
        ("DELETE", "/v1/test-sessions/5f0c", None),
        ("GET", "/_emulator/state", None),
        ("GET", "/v1/checks/c1", "get_check"),
        ("GET", "/v1/checks", "list_checks"),
        ("DELETE", "/v1/checks/c1", None),
        ("GET", "/", None),
    ],
)
def test_route_name(method: str, path: str, expected: str | None) -> None:
    op = find(method, path)
    assert (op.name if op else None) == expected


def test_every_operation_is_listed_once_with_a_unique_name() -> None:
    # As many names, and as many (method, path) pairs, as operations: none listed twice.
    assert len(OPERATIONS) == len(set(NAMES)) == len({(op.method, op.path) for op in OPERATIONS})
    assert all(set(names) <= set(NAMES) for names in ROUTE_ALIASES.values())
    assert not set(ROUTE_ALIASES) & set(NAMES)


def test_the_old_name_create_analysis_still_targets_both_analysis_routes() -> None:
    injector = FaultInjector(seed=1)
    injector.add(fault(route="create_analysis", kind="status", count=2))
    assert injector.pick("create_error_group_analysis") is not None
    assert injector.pick("get_analysis") is None
    assert injector.pick("create_test_session_error_group_analysis") is not None
    assert injector.stats == {
        "create_error_group_analysis": {"status": 1},
        "create_test_session_error_group_analysis": {"status": 1},
    }
    with pytest.raises(ValueError, match="create_analysis"):
        fault(route="create_analyses", kind="status")


@pytest.mark.parametrize(
    ("fields", "phase", "status"),
    [
        ({"kind": "status"}, "before", 503),
        ({"kind": "status", "status": 500}, "after", 500),
        ({"kind": "status", "status": 502}, "after", 502),
        ({"kind": "rate_limit"}, "before", None),
        ({"kind": "reset"}, "after", None),
        ({"kind": "truncated"}, "after", None),
        ({"kind": "non_json"}, "after", 200),
        ({"kind": "slow", "delaySeconds": 1}, "before", None),
        ({"kind": "reset", "phase": "before"}, "before", None),
    ],
)
def test_defaults_by_kind(fields: dict[str, Any], phase: str, status: int | None) -> None:
    spec = fault(route="*", **fields)
    assert (spec.phase, spec.status) == (phase, status)
    assert FaultSpec.model_validate(spec.model_dump()) == spec  # a dump round-trips (control API)


def test_rate_limit_defaults_to_retry_after_one_second() -> None:
    assert fault(route="trigger", kind="rate_limit").retryAfterSeconds == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"route": "trigger", "kind": "status", "extra": 1},
        {"route": "/_emulator/faults", "kind": "status"},
        {"route": "nope", "kind": "status"},
        {"route": "trigger", "kind": "explode"},
        {"route": "trigger", "kind": "status", "status": 404},
        {"route": "trigger", "kind": "status", "status": 200},
        {"route": "trigger", "kind": "reset", "status": 500},
        {"route": "trigger", "kind": "status", "rate": 0.5, "count": 2},
        {"route": "trigger", "kind": "status", "rate": 1.5},
        {"route": "trigger", "kind": "status", "count": 0},
        {"route": "trigger", "kind": "slow"},
        {"route": "trigger", "kind": "status", "delaySeconds": 1},
        {"route": "trigger", "kind": "status", "retryAfterSeconds": 1},
        {"route": "trigger", "kind": "truncated", "phase": "before"},
        {"route": "trigger", "kind": "status", "phase": "later"},
    ],
)
def test_invalid_specs_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        FaultSpec.model_validate(fields)


# --- what a client sees --------------------------------------------------------------------------------


def test_no_fault_passes_through(srv: Server) -> None:
    answer = trigger(srv)
    assert answer.status_code == 201
    assert answer.json()["testSessionId"] == "s-1"
    assert "x-emulator-fault" not in answer.headers


def test_status_503_before_answers_without_running_the_handler(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="status", status=503))
    answer = trigger(srv)
    assert answer.status_code == 503
    assert answer.json() == {
        "statusCode": 503,
        "error": "Service Unavailable",
        "message": "Service Unavailable",
    }
    assert answer.headers["x-emulator-fault"] == "status"
    assert srv.handlers.triggers == 0


@pytest.mark.parametrize(("status", "error"), [(500, "Internal Server Error"), (502, "Bad Gateway")])
def test_status_after_runs_the_handler_then_fails(srv: Server, status: int, error: str) -> None:
    srv.injector.add(fault(route="trigger", kind="status", status=status))
    answer = trigger(srv)
    assert answer.status_code == status
    assert answer.json() == {"statusCode": status, "error": error, "message": error}
    assert srv.handlers.triggers == 1  # the session was created although the client got an error


def test_phase_can_be_overridden(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="status", status=500, phase="before"))
    srv.injector.add(fault(route="get_session", kind="status", status=503, phase="after"))
    assert trigger(srv).status_code == 500
    assert read(srv).status_code == 503
    assert (srv.handlers.triggers, srv.handlers.reads) == (0, 1)


def test_rate_limit_answers_429_with_retry_after(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="rate_limit", retryAfterSeconds=3))
    answer = trigger(srv)
    assert answer.status_code == 429
    assert answer.headers["Retry-After"] == "3"
    assert answer.json() == {
        "statusCode": 429,
        "error": "Too Many Requests",
        "message": "Too Many Requests",
        "attributes": {"limit": 600, "windowSeconds": 60, "retryAfterSeconds": 3},
    }
    assert srv.handlers.triggers == 0


def test_injected_429_names_the_limit_the_world_sets(world_factory: Any, default_world: Any) -> None:
    default_world["settings"]["rateLimit"] = {"limit": 7, "windowSeconds": 10}
    default_world["settings"]["faults"] = [{"route": "get_session", "kind": "rate_limit", "count": 1}]
    emu = world_factory(default_world)
    headers = {"Authorization": f"Bearer {emu.api_key}", "X-Service-Account": emu.account_id}
    answer = requests.get(f"{emu.url}/v1/test-sessions/nope", headers=headers, timeout=TIMEOUT)
    assert answer.status_code == 429 and answer.headers["x-emulator-fault"] == "rate_limit"
    assert answer.json()["attributes"] == {"limit": 7, "windowSeconds": 10, "retryAfterSeconds": 1}


def test_non_json_answers_a_proxy_page(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="non_json"))
    answer = trigger(srv)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "502 Bad Gateway" in answer.text
    with pytest.raises(requests.JSONDecodeError):
        answer.json()
    assert srv.handlers.triggers == 1


def test_non_json_with_a_gateway_status(srv: Server) -> None:
    srv.injector.add(fault(route="get_session", kind="non_json", status=502, phase="before"))
    answer = read(srv)
    assert (answer.status_code, answer.headers["Content-Type"][:9]) == (502, "text/html")
    assert srv.handlers.reads == 0


def test_truncated_body_breaks_the_read(srv: Server) -> None:
    srv.injector.add(fault(route="get_session", kind="truncated"))
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        read(srv)
    assert srv.handlers.reads == 1
    # Streaming shows what arrived: the original length promised, half of the body delivered.
    srv.injector.add(fault(route="get_session", kind="truncated"))
    answer = requests.get(f"{srv.url}/v1/test-sessions/abc", timeout=TIMEOUT, stream=True)
    assert answer.status_code == 200
    promised = int(answer.headers["Content-Length"])
    received = answer.raw.read(promised, decode_content=False)
    assert 0 < len(received) < promised
    assert received.startswith(b'{"testSessionId":"abc"')


@pytest.mark.parametrize(("phase", "runs"), [("before", 0), ("after", 1)])
def test_reset_drops_the_connection(srv: Server, phase: str, runs: int) -> None:
    srv.injector.add(fault(route="trigger", kind="reset", phase=phase, count=1))
    with pytest.raises(requests.ConnectionError) as caught:
        trigger(srv)
    assert not isinstance(caught.value, requests.exceptions.ChunkedEncodingError)
    assert srv.handlers.triggers == runs
    assert trigger(srv).status_code == 201  # the server itself is fine


def test_reset_inside_a_keep_alive_session(srv: Server) -> None:
    with requests.Session() as session:
        assert session.get(f"{srv.url}/v1/test-sessions/abc", timeout=TIMEOUT).status_code == 200
        srv.injector.add(fault(route="get_session", kind="reset", count=1))
        with pytest.raises(requests.ConnectionError):
            session.get(f"{srv.url}/v1/test-sessions/abc", timeout=TIMEOUT)
        assert session.get(f"{srv.url}/v1/test-sessions/abc", timeout=TIMEOUT).status_code == 200


def test_truncated_without_a_body_loses_the_answer(srv: Server) -> None:
    srv.injector.add(fault(route="delete_maintenance_window", kind="truncated"))
    with pytest.raises(requests.ConnectionError):
        requests.delete(f"{srv.url}/v1/maintenance-windows/w1", timeout=TIMEOUT)


def test_slow_before_delays_then_answers(srv: Server) -> None:
    srv.injector.add(fault(route="get_session", kind="slow", delaySeconds=0.3))
    started = time.monotonic()
    answer = read(srv)
    assert answer.status_code == 200
    assert time.monotonic() - started >= 0.3


def test_slow_after_times_the_client_out_after_the_side_effect(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="slow", delaySeconds=0.6, phase="after"))
    with pytest.raises(requests.ReadTimeout):
        requests.post(f"{srv.url}/v1/test-sessions/trigger", json={}, timeout=(TIMEOUT, 0.2))
    assert srv.handlers.triggers == 1


def test_slow_does_not_block_other_requests(srv: Server) -> None:
    # Held after its handler ran, so the test knows the slow request is in the server: another
    # request is answered while it is held (an order, not a 0.5 s window a loaded machine missed).
    srv.injector.add(fault(route="trigger", kind="slow", delaySeconds=3.0, phase="after"))
    slow = threading.Thread(target=trigger, args=(srv,))
    slow.start()
    deadline = time.monotonic() + TIMEOUT
    while srv.handlers.triggers == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert read(srv).status_code == 200
    assert slow.is_alive()  # the slow answer is still held
    slow.join(TIMEOUT)


# --- when faults fire ----------------------------------------------------------------------------------


def test_count_affects_exactly_the_next_n(srv: Server) -> None:
    srv.injector.add(fault(route="trigger", kind="status", count=2))
    assert read(srv).status_code == 200  # another route does not use up the count
    assert srv.injector.list()[0].count == 2
    assert trigger(srv).status_code == 503
    assert srv.injector.list()[0].count == 1
    assert trigger(srv).status_code == 503
    assert srv.injector.list() == []  # used up
    assert [trigger(srv).status_code for _ in range(3)] == [201, 201, 201]


def test_rate_with_a_seed_is_deterministic(running: Server) -> None:
    runs = []
    for _ in range(2):
        running.fresh(seed=42).add(fault(route="get_session", kind="status", rate=0.5))
        runs.append([read(running).status_code for _ in range(20)])
    assert runs[0] == runs[1]
    assert set(runs[0]) == {200, 503}
    running.fresh()


@pytest.mark.parametrize(("rate", "expected"), [(0.0, 200), (1.0, 503)])
def test_rate_bounds(srv: Server, rate: float, expected: int) -> None:
    srv.injector.add(fault(route="get_session", kind="status", rate=rate))
    assert {read(srv).status_code for _ in range(5)} == {expected}


def test_route_filtering(srv: Server) -> None:
    srv.injector.add(fault(route="get_session", kind="status"))
    assert trigger(srv).status_code == 201
    assert read(srv).status_code == 503


def test_star_matches_api_routes_only(srv: Server) -> None:
    srv.injector.add(fault(route="*", kind="status"))
    assert trigger(srv).status_code == 503
    assert read(srv).status_code == 503
    assert requests.get(f"{srv.url}/_emulator/state", timeout=TIMEOUT).status_code == 200
    assert requests.get(f"{srv.url}/v1/other", timeout=TIMEOUT).status_code == 200
    assert requests.get(f"{srv.url}/nowhere", timeout=TIMEOUT).status_code == 404


def test_first_firing_fault_wins_and_stats_count_it(srv: Server) -> None:
    srv.injector.set([fault(route="trigger", kind="rate_limit", count=1), fault(route="*", kind="status")])
    assert trigger(srv).status_code == 429
    assert trigger(srv).status_code == 503
    assert read(srv).status_code == 503
    assert srv.injector.stats == {"trigger": {"rate_limit": 1, "status": 1}, "get_session": {"status": 1}}
    srv.injector.clear()
    assert srv.injector.list() == []
    assert trigger(srv).status_code == 201


def test_injector_is_thread_safe() -> None:
    injector = FaultInjector(seed=3)
    injector.add(fault(route="trigger", kind="status", count=50))
    fired: list[int] = []

    def hammer() -> None:
        hits = sum(injector.pick("trigger") is not None for _ in range(100))
        fired.append(hits)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(fired) == 50
    assert injector.stats == {"trigger": {"status": 50}}
