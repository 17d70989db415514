"""A gate never exits 0 on an answer it did not understand.

No-match is production's signal only: the trigger's 403 with errorCode ERR_NO_MATCHING_CHECKS (or a
finished session without results). A proxy's HTML 404, a JSON 404 or 403 without that code, a base
URL with an extra /v1: each is an error with a non-zero exit, whatever the gate settings say. The
real CLI runs against the emulator and against small real HTTP servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import CI_PREFIXES

from runner.cli.main import main
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.job.outcome import ResultOutcome
from runner.job.policy import Gate, session_exit_code

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

NGINX_404 = (
    "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    "<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
)
JSON_404 = json.dumps(
    {"statusCode": 404, "error": "Not Found", "message": "Cannot POST /v1/v1/test-sessions"}
)
JSON_403 = json.dumps({"statusCode": 403, "error": "Forbidden", "message": "Forbidden"})
NO_MATCH_403 = json.dumps(
    {
        "statusCode": 403,
        "error": "Forbidden",
        "message": "No matching checks",
        "errorCode": "ERR_NO_MATCHING_CHECKS",
    }
)

# Every gate a spec can ask for: none of them may turn an answer not understood into exit 0.
GATES = [
    "gate: {failOnNoMatchingChecks: false}\n",
    "gate: {failOnNoMatchingChecks: true}\n",
    "gate: {failOnNoMatchingChecks: false, failOn: new, failOnDegraded: false}\n",
]


class _Answer(BaseHTTPRequestHandler):
    """Answers every request with the server's one canned answer, as a proxy or wrong host would."""

    def _answer(self) -> None:
        status, content_type, body = self.server.answer  # type: ignore[attr-defined]
        self.server.paths.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def canned() -> Iterator[Any]:
    """canned(status, content_type, body) -> the base URL of a real HTTP server giving that answer."""
    servers: list[ThreadingHTTPServer] = []

    def start(status: int, content_type: str, body: str) -> Any:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        server.answer = (status, content_type, body)  # type: ignore[attr-defined]
        server.paths = []  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Credentials for a service that is not the emulator; no CI variables; cwd tmp_path."""
    for name in list(os.environ):
        if name.startswith(CI_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TESTSESSION_ACCOUNT_HEADER", raising=False)
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_test_not_a_real_key")
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", "8d5a0c55-2a4b-4b44-9f2e-0c0c0c0c0c0c")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _spec(tmp_path: Path, gate: str, tag: str = "smoke") -> str:
    path = tmp_path / "nomatch.yml"
    path.write_text(f"name: gate\nrunLocation: eu-west-1\ntarget: {{matchTags: [[{tag}]]}}\n{gate}")
    return str(path)


def _run(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "out"
    code = main([*args, "--json", str(out / "r.json"), "--junit", str(out / "j.xml"), "--markdown", ""])
    results = out / "r.json"
    return code, json.loads(results.read_text()) if results.exists() else {}


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((404, "text/html", NGINX_404), id="nginx-html-404"),
        pytest.param((404, "application/json", JSON_404), id="json-404-without-code"),
        pytest.param((403, "application/json", JSON_403), id="json-403-without-code"),
        pytest.param((403, "text/html", "<html><title>Access denied</title>blocked</html>"), id="proxy-403"),
    ],
)
def test_a_refusal_that_is_not_the_no_match_answer_is_exit_4(
    plain_env: Path,
    canned: Any,
    capsys: pytest.CaptureFixture[str],
    answer: tuple[int, str, str],
    gate: str,
) -> None:
    server = canned(*answer)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    code, data = _run(plain_env, "run", _spec(plain_env, gate), "--base-url", url)
    out = capsys.readouterr().out
    assert code == ExitCode.SERVICE, out
    assert data["verdict"] == "service-error" and not data["sessions"][0]["noMatch"]
    problem = data["sessions"][0]["problem"]
    # Names the URL it called, says it is not a no-match, and what to check.
    assert f"POST {url}/v1/test-sessions/trigger answered {answer[0]}" in problem
    assert "not a no-match" in problem and "ERR_NO_MATCHING_CHECKS" in problem
    assert ("base URL" in problem) if answer[0] == 404 else ("API key" in problem or "proxy" in problem)
    if answer[1] == "text/html":
        assert "HTML page" in problem and "<" not in problem.split("HTML page")[1][:40]
    assert f"{url}/v1/test-sessions/trigger" in out and "no check matched" not in out
    assert server.paths == ["POST /v1/test-sessions/trigger"]  # one request: a 4xx is not retried


@pytest.mark.parametrize(
    ("gate", "expected"),
    [("", ExitCode.NO_MATCH), ("gate: {failOnNoMatchingChecks: false}\n", ExitCode.OK)],
)
def test_production_no_match_answer_is_a_no_match(
    plain_env: Path, canned: Any, gate: str, expected: ExitCode
) -> None:
    server = canned(403, "application/json", NO_MATCH_403)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    code, data = _run(plain_env, "run", _spec(plain_env, gate), "--base-url", url)
    assert code == expected and data["verdict"] == "no-match" and data["sessions"][0]["noMatch"]


def test_no_match_code_without_status_code_field_is_read_too(plain_env: Path, canned: Any) -> None:
    """{message, errorCode} without statusCode: a shape the service's own CLI accepts as well."""
    body = json.dumps({"message": "No matching checks", "errorCode": "ERR_NO_MATCHING_CHECKS"})
    server = canned(403, "application/json", body)
    code, data = _run(
        plain_env, "run", _spec(plain_env, ""), "--base-url", f"http://127.0.0.1:{server.server_address[1]}"
    )
    assert code == ExitCode.NO_MATCH and data["sessions"][0]["noMatch"]


def test_the_no_match_code_on_another_status_is_not_a_no_match(plain_env: Path, canned: Any) -> None:
    body = json.dumps(
        {"statusCode": 404, "error": "Not Found", "message": "x", "errorCode": "ERR_NO_MATCHING_CHECKS"}
    )
    server = canned(404, "application/json", body)
    gate = "gate: {failOnNoMatchingChecks: false}\n"
    code, data = _run(
        plain_env, "run", _spec(plain_env, gate), "--base-url", f"http://127.0.0.1:{server.server_address[1]}"
    )
    assert code == ExitCode.SERVICE and not data["sessions"][0]["noMatch"]


@pytest.mark.parametrize("gate", GATES)
def test_emulator_no_match_exit_5_or_0_only_where_the_spec_allows(
    cli_env: Emulator, tmp_path: Path, gate: str
) -> None:
    code, data = _run(tmp_path, "run", _spec(tmp_path, gate, tag="no-such-tag"))
    allowed = "failOnNoMatchingChecks: false" in gate
    assert code == (ExitCode.OK if allowed else ExitCode.NO_MATCH)
    assert data["verdict"] == "no-match" and data["sessions"][0]["noMatch"]


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/v1/test-sessions", "/api/v1", "/docs", "/?a=b", "#x"])
def test_a_base_url_with_an_api_path_is_refused_before_any_request(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    spec = _spec(tmp_path, "gate: {failOnNoMatchingChecks: false}\n", tag="no-such-tag")
    code, _data = _run(tmp_path, "run", spec, "--base-url", cli_env.url + suffix)
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    first = err.strip().splitlines()[0]
    root = cli_env.url + ("/api" if suffix.startswith("/api") else "")
    assert first.startswith("testsession: error: base URL:") and first.endswith(f"use {root}"), err
    assert cli_env.backend.stats()["requestsTotal"] == 0


def test_a_proxy_prefix_path_is_allowed(plain_env: Path, canned: Any) -> None:
    """A path the service does not use itself (a gateway's prefix) is passed on as given."""
    server = canned(403, "application/json", NO_MATCH_403)
    url = f"http://127.0.0.1:{server.server_address[1]}/monitoring"
    code, _data = _run(plain_env, "run", _spec(plain_env, ""), "--base-url", url)
    assert code == ExitCode.NO_MATCH and server.paths == ["POST /monitoring/v1/test-sessions/trigger"]


# --- the verdict policy: nothing judged is never a pass ----------------------------------------


@pytest.mark.parametrize(
    "gate", [Gate(), Gate(fail_on_no_match=False), Gate(fail_on="new", fail_on_degraded=True)]
)
def test_policy_never_passes_a_session_that_judged_nothing(gate: Gate) -> None:
    for problem in (False, True):
        code = session_exit_code(ExitCode.OK, [], gate, no_match=False, problem=problem, detached=False)
        assert code == ExitCode.SERVICE
    # Only the service's no-match signal, or a session only triggered (--detach), may pass empty.
    assert (
        session_exit_code(ExitCode.OK, [], gate, no_match=True, problem=True, detached=False) == ExitCode.OK
    )
    assert (
        session_exit_code(ExitCode.OK, [], gate, no_match=False, problem=False, detached=True) == ExitCode.OK
    )
    passed = ResultOutcome(id="r", name="c", status="PASSED", verdict="passed")
    assert session_exit_code(ExitCode.OK, [passed], gate, no_match=False, problem=False, detached=False) == 0


SESSION_ID = "5b0e6c3a-7d7e-4b3c-9a53-2f0f6f1f0a11"


@pytest.mark.parametrize("status", ["CANCELLED", "PASSED", "SOMETHING_NEW"])
def test_a_final_session_without_results_never_passes_unless_it_is_the_no_match(
    plain_env: Path, canned: Any, status: str
) -> None:
    """A session the service ended without a single result: cancelled by someone (nothing was seen to
    pass) is an error; a finished one is the service's no-match signal (exit 5)."""
    session = {
        "testSessionId": SESSION_ID,
        "testSessionLink": "https://app.example/s",
        "name": "x",
        "status": status,
        "errorGroupIds": [],
        "startedAt": "2025-01-01T00:00:00Z",
        "stoppedAt": "2025-01-01T00:00:05Z",
        "timeElapsed": 5000,
        "results": [],
    }
    server = canned(200, "application/json", json.dumps(session))
    gate = "gate: {failOnNoMatchingChecks: false}\n"
    spec = plain_env / "wait.yml"
    spec.write_text(f"runLocation: eu-west-1\n{gate}")
    url = f"http://127.0.0.1:{server.server_address[1]}"
    code, data = _run(plain_env, "wait", SESSION_ID, "--spec", str(spec), "--base-url", url, "--timeout", "1")
    if status == "CANCELLED":
        assert code == ExitCode.SERVICE and "nothing was judged" in data["sessions"][0]["problem"]
    elif status == "PASSED":
        assert code == ExitCode.OK and data["verdict"] == "no-match"  # failOnNoMatchingChecks: false
    else:  # a status this client does not know is not final: the wait ends at its deadline, never 0
        assert code == ExitCode.TIMEOUT
