"""The client against a hostile service: answers that never end, trickle, inflate, or are another
session's. Every answer is bounded in time and size, and a wrong answer is never taken as the right one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import (
    SESSION_A,
    SESSION_B,
    HostileServer,
    Route,
    json_answer,
    no_content,
    session_json,
)

from runner.client import ApiClient
from runner.core import errors
from runner.core.errors import exit_code_for
from runner.core.exitcodes import ExitCode

REPO = Path(__file__).resolve().parent.parent
KEY = "tsk_hostile_0123456789"
ACCOUNT = "0c0ffee0-0000-4000-8000-00000000a11c"
CHECK = "0b9a3c4d-1111-4a5b-8c6d-000000000003"


def session_routes(completion: Route, session: Route | None = None) -> dict[tuple[str, str], Route]:
    """A service that triggers SESSION_A fine and answers its completion with `completion`."""
    base = f"/v1/test-sessions/{SESSION_A}"
    return {
        ("POST", "/v1/test-sessions/trigger"): json_answer(
            session_json(SESSION_A, "RUNNING", "RUNNING"), 201
        ),
        ("GET", f"{base}/completion"): completion,
        ("POST", f"{base}/cancel"): no_content,
        ("GET", base): session or json_answer(session_json(SESSION_A, "CANCELLED", "CANCELLED")),
    }


def run_cli(
    url: str, tmp_path: Path, *extra: str, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_", "CI"))}
    env.update(TESTSESSION_API_KEY=KEY, TESTSESSION_ACCOUNT_ID=ACCOUNT, TESTSESSION_BASE_URL=url)
    argv = [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", "--check-id", CHECK]
    argv += ["--no-rca", "--json", str(tmp_path / "results.json"), "--junit", "", "--markdown", ""]
    started = time.monotonic()
    done = subprocess.run(
        argv + list(extra), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )
    return done, time.monotonic() - started


# --- item 5: an answer for another session ---------------------------------------------------------


@pytest.mark.parametrize("call", ["await_completion", "get_session"])
def test_answer_for_another_session_is_rejected(call: str) -> None:
    other = json_answer(session_json(SESSION_B))
    routes = {
        ("GET", f"/v1/test-sessions/{SESSION_A}/completion"): other,
        ("GET", f"/v1/test-sessions/{SESSION_A}"): other,
    }
    with HostileServer(routes) as server, ApiClient(server.url, KEY, ACCOUNT, read_timeout=5) as client:
        with pytest.raises(errors.MismatchedAnswerError) as caught:
            getattr(client, call)(SESSION_A)
        assert SESSION_B in str(caught.value) and SESSION_A in str(caught.value)
        assert exit_code_for(caught.value) == ExitCode.SERVICE
        assert len(server.requests) == 1  # a resend cannot cure it: not retried


def test_run_does_not_pass_on_another_sessions_result(tmp_path: Path) -> None:
    routes = session_routes(json_answer(session_json(SESSION_B, "PASSED", "PASSED")))
    with HostileServer(routes) as server:
        done, _ = run_cli(server.url, tmp_path, "--timeout", "20")
    assert done.returncode == ExitCode.SERVICE, done.stderr + done.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["verdict"] == "service-error"
    assert SESSION_B not in json.dumps(results["sessions"][0].get("results", []))


# --- item 9: base URLs that must not be used -------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "words"),
    [
        ("http://ci-user:s3cretPassw0rd@{host}", "credentials"),
        ("http://only-a-token-s3cretPassw0rd@{host}", "credentials"),
        ("ftp://{host}", "https://"),
        ("file:///etc/passwd", "https://"),
        ("{host}", "https://"),
    ],
)
def test_unusable_base_url_is_a_usage_error_and_nothing_is_sent(
    tmp_path: Path, spelling: str, words: str
) -> None:
    with HostileServer(session_routes(no_content)) as server:
        url = spelling.format(host=server.url.removeprefix("http://"))
        done, _ = run_cli(url, tmp_path, "--timeout", "5")
        assert server.requests == []
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "base URL" in done.stderr and words in done.stderr
    assert "s3cretPassw0rd" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
