"""The two hooks around an API check's request: the setup script before it, the teardown after it.

The HTTP protocol (protocols/http.py) calls `run_setup` before the request is prepared (the script sees
and may change the request as the check defines it, and the variables), and the `Teardown` that
`teardown_for` gives after the response arrived, before the assertions (the script may change the body
they read). The rules are in scripts.py's docstring. The request and response are read by their fields
(`Sent`, `Received`), so this module does not import the protocol that calls it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Protocol

from runner.checks.failures import Failure, FailureKind
from runner.checks.outcome import TimingPhases
from runner.checks.scripts import ScriptFiles, ScriptRunner
from runner.checks.variables import Substitution
from runner.models.check_definitions import ApiCheckDefinition, KeyValue


class Sent(Protocol):
    """The request as it was sent (protocols/http.py HttpRequest)."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def body(self) -> bytes | None: ...


class Received(Protocol):
    """The response (protocols/http.py HttpResponse)."""

    @property
    def status_code(self) -> int | None: ...
    @property
    def headers(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def timing(self) -> TimingPhases: ...


# (the request sent, the response, its body as text) -> (the body the assertions read, a failure)
Teardown = Callable[[Sent, Received, str], tuple[str, Failure | None]]


def has_scripts(check: ApiCheckDefinition) -> bool:
    return bool(check.localSetupScript or check.localTearDownScript)


def _files(check: ApiCheckDefinition, phase: str) -> ScriptFiles:
    script = check.localSetupScript if phase == "setup" else check.localTearDownScript
    path = check.setupScriptPath if phase == "setup" else check.tearDownScriptPath
    shared = tuple((f.path, f.content) for f in check.sharedFiles)
    return ScriptFiles(script or "", path, shared, check.projectDir)


def run_setup(
    check: ApiCheckDefinition, subst: Substitution, scripts: ScriptRunner, stop: threading.Event | None
) -> tuple[ApiCheckDefinition, Substitution] | Failure:
    """The check and variables as the setup script left them; a Failure when it threw or ran out."""
    if not check.localSetupScript:
        return check, subst
    r = check.request
    before = subst.environment()
    outcome = scripts.run(
        "setup", _files(check, "setup"),
        request={
            "method": r.method, "url": r.url, "body": r.body,
            "headers": {h.key: h.value for h in r.headers if h.key},
            "queryParameters": {p.key: p.value for p in r.queryParameters if p.key},
        },
        response=None, env=before, stop=stop,
    )  # fmt: skip
    if not outcome.ok:
        kind = FailureKind.TIMEOUT if outcome.timed_out else FailureKind.SETUP_SCRIPT
        return Failure(kind, outcome.error or "setup script failed", network=False)
    changed = {k: v for k, v in outcome.env.items() if before.get(k) != v}
    req = outcome.request
    request = r.model_copy(update={
        "method": str(req.get("method") or r.method),
        "url": str(req.get("url") or ""),
        "body": "" if req.get("body") is None else str(req.get("body")),
        "headers": _pairs(req.get("headers"), r.headers),
        "queryParameters": _pairs(req.get("queryParameters"), r.queryParameters),
    })  # fmt: skip
    return check.model_copy(update={"request": request}), subst.with_values(changed)


def _pairs(value: Any, fallback: list[KeyValue]) -> list[KeyValue]:
    if not isinstance(value, dict):
        return fallback
    return [KeyValue(key=str(k), value="" if v is None else str(v)) for k, v in value.items()]


def teardown_for(
    check: ApiCheckDefinition, subst: Substitution, scripts: ScriptRunner, stop: threading.Event | None
) -> Teardown | None:
    if not check.localTearDownScript:
        return None

    def teardown(request: Sent, response: Received, text: str) -> tuple[str, Failure | None]:
        status = response.status_code
        try:
            reason = HTTPStatus(status).phrase if status is not None else ""
        except ValueError:
            reason = ""
        outcome = scripts.run(
            "teardown", _files(check, "teardown"),
            request={
                "method": request.method, "url": request.url,
                "body": (request.body or b"").decode("utf-8", "replace"),
                "headers": dict(request.headers), "queryParameters": {},
            },
            response={
                "statusCode": status, "statusText": reason, "body": text,
                "headers": {k.lower(): v for k, v in response.headers},
                "timings": {}, "timingPhases": response.timing.as_dict(),
            },
            env=subst.environment(), stop=stop,
        )  # fmt: skip
        body = outcome.response.get("body") if isinstance(outcome.response, dict) else None
        new_text = body if isinstance(body, str) else text
        if outcome.ok:
            return new_text, None
        kind = FailureKind.TIMEOUT if outcome.timed_out else FailureKind.TEARDOWN_SCRIPT
        return new_text, Failure(kind, outcome.error or "teardown script failed", network=False)

    return teardown
