"""The emulator's /v1 API without HTTP: one table of handlers, one per operation of
runner/models/operations.py, and `answer`, which takes a request from its method, path, query,
headers and body bytes to its status, headers and JSON body.

Both ways into the emulator use it, moto's way (one responses layer, served in process and by its
server): the HTTP shell (shell/routes.py) is one route that hands `answer` what came over the socket,
and a run of a world in this process (`LocalService`, the client's LocalTransport) calls `serve`
directly. So a request gets the same status and the same body either way, malformed ones included:
the path and query are checked against the operation's row (its parameters' types, defaults and
bounds), the body against its request model, and every problem is said at once in the service's
error body (failures.error_body). The OpenAPI document is written from the same rows (openapi.py).

What needs the network stays on the HTTP shell (`needs_http`): a world with fault specs (a reset
connection or a slow proxy exists only on a socket), or a caller outside this process. (A checks
file's run, `run --checks FILE`, reaches no emulator at all: runner/job/local.py.)
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import unquote

from pydantic import BaseModel, Field, ValidationError, create_model

from runner.emulator.core.accounts import CheckFilter
from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure, error_body
from runner.emulator.core.world import World
from runner.models import STILL_RUNNING_MESSAGE, TestSession, describe_validation_error
from runner.models.operations import BY_NAME, NAMES, OPERATIONS, Operation, match

log = logging.getLogger(__name__)

# Fields left out of each answer: "unset" (a session has no `metadata: null` when the trigger sent
# none), "none" (an analysis shows only what it has); absent: every field.
OMIT: dict[str, Literal["unset", "none"]] = {
    "trigger": "unset",
    "get_session": "unset",
    "completion": "unset",
    "create_test_session_error_group_analysis": "none",
    "create_error_group_analysis": "none",
    "get_analysis": "none",
    # No nulls: production's check has no null frequencyOffset (nor other null fields we know of).
    "update_check": "none",
    # What the world holds of production's shape, nothing added: a secret's value is an explicit null.
    "list_checks": "unset",
    "get_check": "unset",
}


@dataclass(frozen=True)
class Incoming:
    """One request as both ways in have it: the path as sent (still quoted), the query's pairs in
    order (a key may repeat), the headers (any case), the body's bytes; `account` when the HTTP
    intake has already checked the key (shell/intake.py: before the body is read)."""

    method: str
    path: str
    query: Sequence[tuple[str, str]] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    account: str | None = None


@dataclass(frozen=True)
class Answer:
    """One answer as the wire would carry it: status, headers and the JSON body's bytes."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """What a handler gets: the backend, the account, and the request validated against its row:
    the path's parameters (unquoted, typed), the query's (defaults filled in) and the body's model."""

    backend: Backend
    account: str
    path: Mapping[str, Any]
    query: Mapping[str, Any]
    body: Any
    authorization: str | None


class Reply(NamedTuple):
    """A handler's answer: its value (rendered by the row's response model), its status (None: the
    row's success status) and headers."""

    value: Any = None
    status: int | None = None
    headers: Mapping[str, str] = {}


def needs_http(world: World) -> bool:
    """True when a run against this world must go through the HTTP shell: its fault specs act on the
    connection (a reset, a truncated or slow answer) and only a socket has one."""
    return bool(world.settings.faults)


# --- the handlers: one per operation, thin, the Backend does the work ---------------------------------


def _trigger(call: Call) -> Reply:
    # The key matters beyond the account: an exposed emulator runs real checks only for some keys.
    return Reply(call.backend.trigger(call.account, call.body, call.authorization))


def _get_session(call: Call) -> Reply:
    return Reply(call.backend.get_session(call.account, call.path["testSessionId"]))


def _completion(call: Call) -> Reply:
    session_id, wait = call.path["testSessionId"], call.query["maxWaitSeconds"]
    session = wait_for_completion(call.backend, call.account, session_id, wait)
    if session is None:
        raise ApiFailure(408, STILL_RUNNING_MESSAGE)
    return Reply(session)


def _cancel(call: Call) -> Reply:
    call.backend.cancel(call.account, call.path["testSessionId"])
    return Reply()


def _group(kind: str) -> Callable[[Call], Reply]:
    def handler(call: Call) -> Reply:
        return Reply(call.backend.get_group(call.account, call.path["id"], kind))

    return handler


def _create_analysis(kind: str) -> Callable[[Call], Reply]:
    def handler(call: Call) -> Reply:
        context = call.body.userContext if call.body is not None else None
        return Reply(call.backend.create_analysis(call.account, call.path["id"], kind, context))

    return handler


def _get_analysis(call: Call) -> Reply:
    analysis = call.backend.get_analysis(call.account, call.path["id"])
    return Reply(analysis, None if analysis.is_completed else 202)  # 202: still pending


def _incident_update(call: Call) -> Reply:
    return Reply(call.backend.add_incident_update(call.account, call.path["incidentId"], call.body))


def _delete_maintenance_window(call: Call) -> Reply:
    call.backend.delete_maintenance_window(call.account, str(call.path["id"]))
    return Reply()


def _delete_maintenance(call: Call) -> Reply:
    call.backend.delete_maintenance(call.account, str(call.path["id"]), call.path["maintenanceId"])
    return Reply()


def _delete_client_certificate(call: Call) -> Reply:
    call.backend.delete_client_certificate(call.account, call.path["id"])
    return Reply()


def _create_dashboard(call: Call) -> Reply:
    return Reply(call.backend.create_dashboard(call.account, call.body))


def _update_check(call: Call) -> Reply:
    auto_assign = call.query["autoAssignAlerts"]
    check = call.backend.update_check(call.account, call.path["id"], call.body, auto_assign)
    return Reply(check, headers={"Deprecation": "true"})


def _list_checks(call: Call) -> Reply:
    q = call.query
    where = CheckFilter(tuple(q["tag"] or ()), q["checkType"], q["search"], q["apiCheckUrlFilterPattern"])
    found = call.backend.list_checks(call.account, where, q["page"], q["limit"])
    return Reply(
        found.checks, headers={"Content-Range": content_range(found.checks, found.first, found.total)}
    )


def _get_check(call: Call) -> Reply:
    return Reply(call.backend.get_check(call.account, call.path["id"]))


def _list_variables(call: Call) -> Reply:
    return Reply(call.backend.list_variables(call.account, call.query["page"], call.query["limit"]))


HANDLERS: dict[str, Callable[[Call], Reply]] = {
    "trigger": _trigger,
    "get_session": _get_session,
    "completion": _completion,
    "cancel": _cancel,
    "get_test_session_error_group": _group("test-session"),
    "get_error_group": _group("check"),
    "create_test_session_error_group_analysis": _create_analysis("test-session"),
    "create_error_group_analysis": _create_analysis("check"),
    "get_analysis": _get_analysis,
    "incident_update": _incident_update,
    "delete_maintenance_window": _delete_maintenance_window,
    "delete_maintenance": _delete_maintenance,
    "delete_client_certificate": _delete_client_certificate,
    "create_dashboard": _create_dashboard,
    "update_check": _update_check,
    "list_checks": _list_checks,
    "get_check": _get_check,
    "list_variables": _list_variables,
}
if tuple(HANDLERS) != NAMES:
    raise RuntimeError("runner.emulator.core.answers: one handler per operation of runner.models.operations")


def content_range(checks: list[Any], first: int, total: int) -> str:
    """Production's `Content-Range: 0-9/23` (items 0 to 9 of 23); a page past the end: `*/23`."""
    if not checks:
        return f"*/{total}"
    return f"{first}-{first + len(checks) - 1}/{total}"


# --- a request's parameters, as the row declares them --------------------------------------------------


@functools.cache
def path_model(name: str) -> type[BaseModel]:
    """The operation's path parameters as a model (a maintenance window id is a positive integer)."""
    fields: dict[str, Any] = {
        p.name: (int, Field(ge=1, description=f"{p.label} (a positive integer)"))
        if p.positive_int
        else (str, ...)
        for p in BY_NAME[name].params
    }
    return create_model(f"{name}_path", **fields)


@functools.cache
def query_model(name: str) -> type[BaseModel]:
    """The operation's query parameters as a model: types, defaults and bounds from its row."""
    fields: dict[str, Any] = {
        q.name: (
            q.type if q.default is not None else q.type | None,
            Field(q.default, description=q.description or None, ge=q.ge, le=q.le, min_length=q.min_length),
        )
        for q in BY_NAME[name].query
    }
    return create_model(f"{name}_query", **fields)


def _problems(model: type[BaseModel], data: Any, prefix: str, problems: list[str]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems.extend(describe_validation_error(exc, prefix))
        return None


def _query_values(op: Operation[Any], pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The pairs of the row's parameters: a list's every value, else the last one (as Starlette)."""
    lists = {q.name for q in op.query if q.type == list[str]}
    known = {q.name for q in op.query}
    values: dict[str, Any] = {}
    for name, value in pairs:
        if name in lists:
            values.setdefault(name, []).append(value)
        elif name in known:
            values[name] = value
    return values


def _body(op: Operation[Any], raw: bytes, problems: list[str]) -> Any:
    if op.request is None:
        return None  # a body sent to an operation that takes none is not read
    if not raw.strip():
        if op.body_required:
            problems.append("body: required (a JSON object)")
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        problems.append("body: invalid JSON")
        return None
    if data is None and not op.body_required:
        return None
    return _problems(op.request, data, "", problems)


def _call(backend: Backend, op: Operation[Any], values: Mapping[str, str], request: Incoming) -> Call:
    headers = {name.lower(): value for name, value in request.headers.items()}
    authorization = headers.get("authorization")
    account = request.account
    if account is None:
        account_header = headers.get(backend.settings.accountHeader.lower())
        account = backend.authenticate(authorization, account_header, request.method)
    problems: list[str] = []
    path = _problems(path_model(op.name), {k: unquote(v) for k, v in values.items()}, "path", problems)
    query = _problems(query_model(op.name), _query_values(op, request.query), "query", problems)
    body = _body(op, request.body, problems)
    if problems:
        raise ApiFailure(400, "; ".join(problems))
    return Call(backend, account, dict(path), dict(query), body, authorization)


# --- the answer ---------------------------------------------------------------------------------------


def answer(backend: Backend, request: Incoming) -> Answer:
    """The answer to one /v1 request (its path with the prefix), from either way in."""
    try:
        matched = match(request.method, request.path)
        if matched is None:
            allowed = [op.method for op in OPERATIONS if match(op.method, request.path)]
            if not allowed:
                raise ApiFailure(404, "Not Found")
            raise ApiFailure(405, "Method Not Allowed", headers={"Allow": ", ".join(allowed)})
        op, values = matched
        reply = HANDLERS[op.name](_call(backend, op, values, request))
        status = reply.status or op.status
        if status not in (op.status, *op.also):  # the row (and so the OpenAPI document) says which
            raise RuntimeError(f"{op.name} answered {status}, which its row does not declare")
    except ApiFailure as failure:
        error = error_body(failure.status, failure.message, failure.attributes, failure.error_code)
        return Answer(
            failure.status, _json(error.model_dump(mode="json", exclude_unset=True)), failure.headers
        )
    except Exception:  # a bug or a full disk: a 500 in the service's shape (the client retries one)
        log.exception("the answer to %s %s failed", request.method, request.path)
        return Answer(500, _json(error_body(500).model_dump(mode="json", exclude_unset=True)))
    if reply.value is None or op.response is None:
        return Answer(status, headers=reply.headers)
    return Answer(status, _render(op, reply.value), reply.headers)


def _render(op: Operation[Any], value: Any) -> bytes:
    """The value as the row's response model writes it, leaving out what OMIT says; a value of
    another shape (a dict, a list of checks) is made that model first."""
    assert op.response is not None
    omit = OMIT.get(op.name)
    unset, none = omit == "unset", omit == "none"
    if not isinstance(value, op.response):
        if isinstance(value, BaseModel):
            value = value.model_dump(by_alias=True, exclude_unset=unset, exclude_none=none)
        value = op.response.model_validate(value)
    # As bytes at once: a text and its .encode() were two copies (2 x 5 MiB of a 10,000-check session).
    written: bytes = value.__pydantic_serializer__.to_json(
        value, by_alias=True, exclude_unset=unset, exclude_none=none
    )
    return written


def _json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def serve(
    backend: Backend,
    method: str,
    path: str,
    params: Mapping[str, Any] | None,
    body: Any,
    headers: Mapping[str, str],
) -> Answer:
    """The answer to a request made in this process: `params` as the client passes them (a list
    repeats its key, None is left out), `body` JSON-able or bytes. Counted in the stats, as the HTTP
    shell's middleware counts a request that came over the socket."""
    pairs = [
        (name, str(item))
        for name, value in (params or {}).items()
        for item in (value if isinstance(value, (list, tuple)) else [value])
        if item is not None
    ]
    raw = body if isinstance(body, bytes) else b"" if body is None else _json(body)
    result = answer(backend, Incoming(method, path, pairs, headers, raw))
    matched = match(method, path)
    backend.record_request(matched[0].name if matched else "unmatched", result.status)
    return result


# --- the completion long poll ---------------------------------------------------------------------------


def completion_step(
    backend: Backend, account: str, session_id: str, deadline: float, clock: Callable[[], float]
) -> TestSession | float | None:
    """One look of the completion long poll: the final session; else the seconds to wait before
    looking again (until the session's computed end, at most until `deadline` of `clock`); None once
    `deadline` has passed or the server stops. A session is rendered (all its results) only once it
    can be final: the poll is woken when its last real check ends (and on cancel, advance, reset,
    stop), not at every check's end."""
    to_end = backend.real_seconds_to_end(account, session_id)
    if to_end is not None and to_end <= 0:
        session = backend.get_session(account, session_id)
        if session.status != "RUNNING":
            return session
    remaining = deadline - clock()
    if remaining <= 0 or backend.stopping:  # the server is stopping: the client asks again elsewhere
        return None
    return remaining if to_end is None else min(remaining, to_end + 0.001)


def wait_for_completion(
    backend: Backend, account: str, session_id: str, max_wait: float
) -> TestSession | None:
    """The final session, or None when `max_wait` real seconds pass first. Wakes at the session's
    computed end, and at once on cancel, clock advance or reset (backend listeners). Over HTTP too:
    the shell runs every answer on a thread of its pool."""
    event = threading.Event()
    wake = event.set  # one object: the listener removed is the one added
    backend.add_listener(wake)
    try:
        deadline = time.monotonic() + max_wait
        while True:
            event.clear()
            step = completion_step(backend, account, session_id, deadline, time.monotonic)
            if not isinstance(step, float):
                return step
            event.wait(step)
    finally:
        backend.remove_listener(wake)


class LocalService:
    """The emulator of one local run, in this process: the world, its Backend and the answers, no
    server (`serve` is the client's LocalTransport function). `with` stops the Backend's real runs."""

    BASE_URL = "http://emulator.invalid"  # never resolved: nothing leaves the process

    def __init__(self, world: World, state: str | Path | None = None) -> None:
        self.world = world
        self.backend = Backend(world, state=state)
        self.backend.base_url = self.BASE_URL
        self.api_key, self.account_id = world.first_key()
        self.account_header = world.settings.accountHeader

    def serve(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None,
        body: dict[str, Any] | None,
        headers: Mapping[str, str],
    ) -> tuple[int, Mapping[str, str], bytes]:
        answer = serve(self.backend, method, path, params, body, headers)
        return answer.status, answer.headers, answer.body

    def stop(self) -> None:
        self.backend.shutdown()
        self.backend.close()
