"""Bad numbers: infinite, NaN, negative or absurd seconds in a spec, a flag or a Retry-After header are
usage errors (exit 2) before anything is sent, or ignored where the service sent them; never a crash.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from hostile import HostileServer, Route, json_answer

from runner.cli.main import main
from runner.client import ApiClient
from runner.core.errors import RateLimitedError
from runner.core.exitcodes import ExitCode

KEY = "tsk_badnumbers_0123456789"
ACCOUNT = "0c0ffee0-0000-4000-8000-0000000000bd"


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., Done]:
    """`testsession ARGV` in this process (fast): the exit code and what it printed."""
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", ACCOUNT)
    for name in [n for n in os.environ if n.startswith(("GITHUB_", "GITLAB_", "CI"))]:
        monkeypatch.delenv(name)

    def run(url: str, cwd: Path, *argv: str) -> Done:
        monkeypatch.setenv("TESTSESSION_BASE_URL", url)
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return Done(code, out, err)

    return run


def spec(path: Path, field: str, value: str) -> Path:
    section, key = field.split(".")
    path.write_text(
        "sessions:\n  - runLocation: eu-west-1\n    target: {checkId: [chk-1]}\n"
        f"{section}:\n  {key}: {value}\nreports: {{junit: null, markdown: null, json: null}}\n"
    )
    return path


@pytest.mark.parametrize("field", ["wait.timeoutSeconds", "rca.timeoutSeconds"])
@pytest.mark.parametrize("value", [".inf", ".nan", "-1", "-.inf", "1e30"])
def test_spec_seconds_that_are_not_a_duration_fail_validate_and_run(
    cli: Callable[..., Done], tmp_path: Path, field: str, value: str
) -> None:
    path = spec(tmp_path / "testsession.yml", field, value)
    with HostileServer({("POST", "/"): json_answer({}, 500)}) as server:
        checked = cli(server.url, tmp_path, "validate", str(path))
        ran = cli(server.url, tmp_path, "run", str(path))
        assert server.requests == []  # nothing triggered
    for done in (checked, ran):
        assert done.returncode == ExitCode.USAGE, done.stdout + done.stderr
        assert f"{field}:" in done.stderr
        assert "Traceback" not in done.stderr


def test_timeout_flag_inf_is_a_usage_error(cli: Callable[..., Done], tmp_path: Path) -> None:
    with HostileServer({("POST", "/"): json_answer({}, 500)}) as server:
        done = cli(
            server.url, tmp_path, "run", "--location", "eu-west-1", "--check-id", "c", "--timeout", "inf"
        )
        assert server.requests == []
    assert done.returncode == ExitCode.USAGE
    assert "--timeout" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "1e9", "soon"])
def test_request_timeout_must_be_positive_finite_seconds(
    cli: Callable[..., Done], tmp_path: Path, value: str
) -> None:
    with HostileServer({("POST", "/"): json_answer({}, 500)}) as server:
        done = cli(
            server.url,
            tmp_path,
            "run",
            "--location",
            "eu-west-1",
            "--check-id",
            "c",
            f"--request-timeout={value}",
        )
        assert server.requests == []
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "--request-timeout" in done.stderr and "Traceback" not in done.stderr


def rate_limited(retry_after: str) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        body = (
            b'{"error": "TooManyRequests", "message": "slow down", "attributes": {"retryAfterSeconds": NaN}}'
        )
        h.send_response(429)
        h.send_header("Content-Type", "application/json")
        h.send_header("Retry-After", retry_after)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return route


@pytest.mark.parametrize(
    "header", ["nan", "inf", "1e999", "-3", "garbage", "99999999999", "Mon, 01 Jan 99999"]
)
def test_hostile_retry_after_never_crashes_and_never_waits_unbounded(header: str) -> None:
    sleeps: list[float] = []
    with (
        HostileServer({("GET", "/v1/error-groups/"): rate_limited(header)}) as server,
        ApiClient(server.url, KEY, ACCOUNT, max_retries=3, sleep=sleeps.append) as client,
        pytest.raises(RateLimitedError) as caught,
    ):
        client.get_error_group("eg-1")
    assert "slow down" in str(caught.value)
    assert len(sleeps) == 3
    assert all(math.isfinite(s) and 0 <= s <= client.retry_policy.retry_after_max for s in sleeps), sleeps
    retry_after = caught.value.retry_after
    assert retry_after is None or math.isfinite(retry_after)
