"""The emulator's answers without HTTP: a run of a world reaches the Backend in this process.

A run of a world (`run --emulator --world W`, `--demo`) used to start FastAPI and uvicorn on a
loopback port only for its own client to talk to: about half a second of imports and start-up, a
server thread, and every read of a 10,000-check session rendered, sent and parsed over a socket.
`serve` answers the operations a run sends (trigger, the session's reads and long poll, cancel, error
groups, analyses, the check list) from the Backend directly, as the HTTP shell would: the same
status, the same error body (failures.error_body), the same JSON (OMIT: the fields each answer leaves
out). The client parses that answer exactly as it parses one from the network (its transport
contract, runner/client/transport.py), so reports, analyses, known/new and exit codes are those of a
run against the service. (A checks file's run, `run --checks FILE`, reaches no emulator at all: the
engine runs its checks for the job directly, runner/job/local.py.)

What needs the network stays on the HTTP shell (`needs_http`): a world with fault specs (a reset
connection or a slow proxy exists only on a socket), or a caller outside this process.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote

from pydantic import BaseModel, ValidationError

from runner.emulator.core.accounts import CheckFilter
from runner.emulator.core.backend import Backend
from runner.emulator.core.failures import ApiFailure, error_body
from runner.emulator.core.world import World
from runner.models import (
    STILL_RUNNING_MESSAGE,
    CreateAnalysisRequest,
    TestSession,
    TriggerRequest,
    describe_validation_error,
)
from runner.models.operations import CHECKS_PAGE_LIMIT, Operation, match

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

# Fields left out of each answer, as the HTTP shell's routes leave them out (routes.py reads this):
# "unset" (a session has no `metadata: null` when the trigger sent none), "none" (an analysis shows
# only what it has); absent: every field.
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
class Answer:
    """One answer as the wire would carry it: status, headers and the JSON body's bytes."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)


def needs_http(world: World) -> bool:
    """True when a run against this world must go through the HTTP shell: its fault specs act on the
    connection (a reset, a truncated or slow answer) and only a socket has one."""
    return bool(world.settings.faults)


@dataclass(frozen=True)
class _Call:
    """What a handler gets: the account, the path's parameters (unquoted), the query and the body."""

    backend: Backend
    account: str
    values: Mapping[str, str]
    params: Mapping[str, Any]
    body: Any
    authorization: str | None


class _BadBody(Exception):
    """The request's body does not fit its model: a 400, as the HTTP shell's validation answers."""


def _body(model: type[M], body: Any) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise _BadBody("; ".join(describe_validation_error(exc)) or "invalid request") from None


def _trigger(call: _Call) -> tuple[int, BaseModel]:
    request = _body(TriggerRequest, call.body)
    return 201, call.backend.trigger(call.account, request, call.authorization)


def _get_session(call: _Call) -> tuple[int, BaseModel]:
    return 200, call.backend.get_session(call.account, call.values["testSessionId"])


def _completion(call: _Call) -> tuple[int, BaseModel]:
    wait = _int_param(call.params, "maxWaitSeconds", 30, 1, 30)
    session = wait_for_completion(call.backend, call.account, call.values["testSessionId"], wait)
    if session is None:
        raise ApiFailure(408, STILL_RUNNING_MESSAGE)
    return 200, session


def _cancel(call: _Call) -> tuple[int, None]:
    call.backend.cancel(call.account, call.values["testSessionId"])
    return 204, None


def _session_group(call: _Call) -> tuple[int, BaseModel]:
    return 200, call.backend.get_group(call.account, call.values["id"], "test-session")


def _session_group_analysis(call: _Call) -> tuple[int, BaseModel]:
    body = _body(CreateAnalysisRequest, call.body) if call.body is not None else None
    context = body.userContext if body else None
    return 201, call.backend.create_analysis(call.account, call.values["id"], "test-session", context)


def _check_group(call: _Call) -> tuple[int, BaseModel]:
    return 200, call.backend.get_group(call.account, call.values["id"], "check")


def _get_analysis(call: _Call) -> tuple[int, BaseModel]:
    analysis = call.backend.get_analysis(call.account, call.values["id"])
    return (200 if analysis.is_completed else 202), analysis


def _list_checks(call: _Call) -> tuple[int, Any]:
    tags = call.params.get("tag")
    pattern = call.params.get("apiCheckUrlFilterPattern")
    if pattern is not None and not pattern:
        raise ApiFailure(400, "apiCheckUrlFilterPattern: at least 1 character")
    where = CheckFilter(
        tuple(tags if isinstance(tags, list) else [tags] if tags else ()),
        call.params.get("checkType"),
        call.params.get("search"),
        call.params.get("apiCheckUrlFilterPattern"),
    )
    page = _int_param(call.params, "page", 1, 1, None)
    limit = _int_param(call.params, "limit", 10, 1, CHECKS_PAGE_LIMIT)
    found = call.backend.list_checks(call.account, where, page, limit)
    return 200, (found.checks, content_range(found.checks, found.first, found.total))


# The operations a run sends. Anything else (a dashboard, an incident update) is never sent in-process.
_HANDLERS: dict[str, Callable[[_Call], tuple[int, Any]]] = {
    "trigger": _trigger,
    "get_session": _get_session,
    "completion": _completion,
    "cancel": _cancel,
    "get_test_session_error_group": _session_group,
    "get_error_group": _check_group,
    "create_test_session_error_group_analysis": _session_group_analysis,
    "get_analysis": _get_analysis,
    "list_checks": _list_checks,
}


def content_range(checks: list[Any], first: int, total: int) -> str:
    """Production's `Content-Range: 0-9/23` (items 0 to 9 of 23); a page past the end: `*/23`."""
    if not checks:
        return f"*/{total}"
    return f"{first}-{first + len(checks) - 1}/{total}"


def serve(
    backend: Backend,
    method: str,
    path: str,
    params: Mapping[str, Any] | None,
    body: Any,
    headers: Mapping[str, str],
) -> Answer:
    """The answer the HTTP shell would give to this request (path with the /v1 prefix)."""
    matched = match(method, path)
    name = matched[0].name if matched else "unmatched"
    answer = _answer(backend, matched, method, path, params or {}, body, headers)
    backend.record_request(name, answer.status)
    return answer


def _answer(
    backend: Backend,
    matched: tuple[Operation[Any], dict[str, str]] | None,
    method: str,
    path: str,
    params: Mapping[str, Any],
    body: Any,
    headers: Mapping[str, str],
) -> Answer:
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        handler = _HANDLERS.get(matched[0].name) if matched else None
        if matched is None:
            raise ApiFailure(404, "Not Found")  # as the HTTP shell's router answers an unknown path
        if handler is None:  # an operation a run never sends (a dashboard, an incident update)
            raise ApiFailure(501, f"{matched[0].name} is not answered in-process")
        op, values = matched
        authorization = lower.get("authorization")
        account = backend.authenticate(
            authorization, lower.get(backend.settings.accountHeader.lower()), method
        )
        call = _Call(
            backend, account, {k: unquote(v) for k, v in values.items()}, params, body, authorization
        )
        status, result = handler(call)
    except ApiFailure as failure:
        error = error_body(failure.status, failure.message, failure.attributes, failure.error_code)
        return Answer(
            failure.status, _json(error.model_dump(mode="json", exclude_unset=True)), failure.headers
        )
    except _BadBody as exc:
        return Answer(400, _json(error_body(400, str(exc)).model_dump(mode="json", exclude_unset=True)))
    except Exception:  # a bug or a full disk: the 500 the HTTP shell answers (retried by the client)
        log.exception("in-process answer to %s %s failed", method, path)
        return Answer(500, _json(error_body(500).model_dump(mode="json", exclude_unset=True)))
    if result is None:
        return Answer(status)
    extra: dict[str, str] = {}
    if isinstance(result, tuple):  # a page of checks and its Content-Range
        result, extra["Content-Range"] = result
    omit = OMIT.get(op.name)
    if isinstance(result, BaseModel):  # written by pydantic at once (a session of 10,000 results)
        # As bytes: model_dump_json's text and its .encode() were two copies (2 x 5 MiB at 10,000).
        body = result.__pydantic_serializer__.to_json(
            result, by_alias=True, exclude_unset=omit == "unset", exclude_none=omit == "none"
        )
        return Answer(status, body, extra)
    return Answer(status, _json(_render(result, omit)), extra)


def _render(result: Any, omit: Literal["unset", "none"] | None) -> Any:
    if isinstance(result, list):
        return [_render(item, omit) for item in result]
    if isinstance(result, BaseModel):
        return result.model_dump(
            mode="json", by_alias=True, exclude_unset=omit == "unset", exclude_none=omit == "none"
        )
    return result


def _json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def _int_param(params: Mapping[str, Any], name: str, default: int, low: int, high: int | None) -> int:
    value = params.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ApiFailure(400, f"{name}: must be a whole number") from None
    if number < low or (high is not None and number > high):
        allowed = f"{low}..{high}" if high is not None else f">= {low}"
        raise ApiFailure(400, f"{name}: must be {allowed}")
    return number


def completion_step(
    backend: Backend, account: str, session_id: str, deadline: float, clock: Callable[[], float]
) -> TestSession | float | None:
    """One look of the completion long poll, the same for the HTTP shell's (on its event loop) and
    the in-process one: the final session; else the seconds to wait before looking again (until the
    session's computed end, at most until `deadline` of `clock`); None once `deadline` has passed.
    A session is rendered (all its results) only once it can be final: the poll is woken when its
    last real check ends (and on cancel, advance, reset), not at every check's end."""
    to_end = backend.real_seconds_to_end(account, session_id)
    if to_end is not None and to_end <= 0:
        session = backend.get_session(account, session_id)
        if session.status != "RUNNING":
            return session
    remaining = deadline - clock()
    if remaining <= 0:
        return None
    return remaining if to_end is None else min(remaining, to_end + 0.001)


def wait_for_completion(
    backend: Backend, account: str, session_id: str, max_wait: float
) -> TestSession | None:
    """The final session, or None when `max_wait` real seconds pass first. Wakes at the session's
    computed end, and at once on cancel, clock advance or reset (backend listeners)."""
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
