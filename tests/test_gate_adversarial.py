"""Adversarial answers and settings: none of them may turn `testsession run` or `wait` into exit 0.

Every case runs the real CLI, as a user does, against a small real HTTP server on 127.0.0.1 that
answers as a confused service, a proxy or a stale file would (tests/hostile.py), or against the
emulator. Each test names the hole it closed (or the attack that held).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import CI_PREFIXES, REPO_ROOT
from emulator_ids import CHECKOUT, HOMEPAGE, LEGACY
from helpers import run_here
from hostile import SESSION_A, SESSION_B, HostileServer, Route, answer, json_answer, no_content, session_json

from runner.cli import action
from runner.cli.main import main
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.job.outcome import ResultOutcome
from runner.job.policy import shared_session, unexplained_end, unrun_named_checks

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

KEY = "tsk_adversary_secret_key_0123"
ACCOUNT = "8d5a0c55-2a4b-4b44-9f2e-0c0c0c0c0c0c"
TRIGGER = ("POST", "/v1/test-sessions/trigger")
SESSION = ("GET", f"/v1/test-sessions/{SESSION_A}")  # the read and the completion long poll
CANCEL = ("POST", f"/v1/test-sessions/{SESSION_A}/cancel")
LENIENT = "gate: {failOnNoMatchingChecks: false, failOn: new}\n"


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Credentials for a service that is not the emulator; no CI variables; cwd tmp_path."""
    for name in list(os.environ):
        if name.startswith(CI_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TESTSESSION_ACCOUNT_HEADER", raising=False)
    monkeypatch.delenv("TESTSESSION_BASE_URL", raising=False)
    monkeypatch.setenv("TESTSESSION_API_KEY", KEY)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", ACCOUNT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def in_turn(*routes: Route) -> Route:
    """Each request gets the next answer; the last one repeats."""
    answers = list(routes)

    def route(h: BaseHTTPRequestHandler) -> None:
        (answers.pop(0) if len(answers) > 1 else answers[0])(h)

    return route


def running() -> dict[str, Any]:
    return session_json(SESSION_A, status="RUNNING", result_status="RUNNING")


def with_results(status: str, *results: tuple[str, str | None]) -> dict[str, Any]:
    """A session of `status` with one result per (status, resultType)."""
    session = session_json(SESSION_A, status=status)
    template = session["results"][0]
    session["results"] = [
        {**template, "testSessionResultId": f"{SESSION_A[:-4]}r{i:03d}", "status": s, "resultType": t}
        for i, (s, t) in enumerate(results)
    ]
    return session


def spec(tmp_path: Path, gate: str = LENIENT) -> str:
    path = tmp_path / "gate.yml"
    path.write_text(f"name: adversary\nrunLocation: eu-west-1\ntarget: {{matchTags: [[smoke]]}}\n{gate}")
    return str(path)


def cli(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "out"
    code = main([*args, "--no-rca", "--json", str(out / "r.json"), "--junit", str(out / "j.xml")])
    results = out / "r.json"
    return code, json.loads(results.read_text()) if results.exists() else {}


def run_against(tmp_path: Path, routes: dict[tuple[str, str], Route], gate: str = LENIENT) -> tuple[int, Any]:
    with HostileServer({CANCEL: no_content, **routes}) as server:
        return cli(tmp_path, "run", spec(tmp_path, gate), "--base-url", server.url, "--timeout", "5")


# --- the final answer does not add up ----------------------------------------------------------


def test_results_seen_while_running_that_vanish_from_the_final_answer_are_not_a_no_match(
    plain_env: Path,
) -> None:
    """Hole: the session showed a check running, then its final answer came with `results: []`
    (a truncated or paged answer): read as "no check matched", exit 0 with failOnNoMatchingChecks:
    false. Results were seen: this is an answer not understood, exit 4."""
    final = dict(session_json(SESSION_A), results=[])
    code, data = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(final)})
    assert code == ExitCode.SERVICE and data["verdict"] == "service-error"
    [session] = data["sessions"]
    assert not session["noMatch"] and "missing from its final answer" in session["problem"]


def test_a_result_that_vanishes_beside_passing_ones_is_not_a_pass(plain_env: Path) -> None:
    """Hole: two checks seen running, the final answer lists one of them, passed: exit 0."""
    seen = with_results("RUNNING", ("RUNNING", "PENDING"), ("RUNNING", "PENDING"))
    seen["results"][1].update(checkId="0b9a3c4d-1111-4a5b-8c6d-000000000009", name="Payments")
    final = with_results("PASSED", ("PASSED", "FINAL"))
    code, data = run_against(plain_env, {TRIGGER: json_answer(seen), SESSION: json_answer(final)})
    assert code == ExitCode.SERVICE and "1 check result" in data["sessions"][0]["problem"]


def test_a_final_result_that_changes_its_verdict_afterwards_is_not_understood(plain_env: Path) -> None:
    """Hole: a check's FINAL result was seen FAILED while the session ran (and printed so), then the
    final answer showed the same result PASSED: exit 0. A final result does not change: exit 4."""
    seen = with_results("RUNNING", ("FAILED", "FINAL"), ("RUNNING", "PENDING"))
    seen["results"][1].update(checkId="0b9a3c4d-1111-4a5b-8c6d-000000000009", name="Payments")
    final = with_results("PASSED", ("PASSED", "FINAL"), ("PASSED", "FINAL"))
    final["results"][1].update(checkId="0b9a3c4d-1111-4a5b-8c6d-000000000009", name="Payments")
    code, data = run_against(plain_env, {TRIGGER: json_answer(seen), SESSION: json_answer(final)})
    assert code == ExitCode.SERVICE and "changed" in data["sessions"][0]["problem"]


def test_a_session_cancelled_by_someone_else_with_only_passed_results_never_passes(plain_env: Path) -> None:
    """Hole: someone cancelled the session on the service; the checks that had not run yet have no
    result, the one that had passed does: exit 0. Nobody saw the others pass: exit 4."""
    final = with_results("CANCELLED", ("PASSED", "FINAL"))
    code, data = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(final)})
    assert code == ExitCode.SERVICE
    assert "cancelled on the service" in data["sessions"][0]["problem"]


def test_a_failed_session_without_a_failing_result_never_passes(plain_env: Path) -> None:
    """Hole: the service says the session FAILED, every result it lists passed (the failing one was
    left out): exit 0. The answer does not explain its own status: exit 4."""
    final = with_results("FAILED", ("PASSED", "FINAL"))
    code, data = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(final)})
    assert code == ExitCode.SERVICE
    assert "FAILED but none of its results" in data["sessions"][0]["problem"]


@pytest.mark.parametrize("first", ["trigger", "final"])
def test_a_failed_session_without_any_result_is_not_a_no_match(plain_env: Path, first: str) -> None:
    """Hole: a FAILED session with `results: []` was read as the no-match signal (a finished session
    without results), exit 0 with failOnNoMatchingChecks: false. The service said it failed."""
    failed = dict(session_json(SESSION_A, status="FAILED"), results=[])
    trigger = json_answer(failed if first == "trigger" else dict(running(), results=[]))
    code, data = run_against(plain_env, {TRIGGER: trigger, SESSION: json_answer(failed)})
    assert code == ExitCode.SERVICE and not data["sessions"][0]["noMatch"]
    assert "FAILED but none of its results" in data["sessions"][0]["problem"]


@pytest.mark.parametrize("result_type", ["SOMETHING_NEW", "final", ""])
def test_a_passed_result_of_an_unknown_result_type_is_not_a_pass(plain_env: Path, result_type: str) -> None:
    """Hole: resultType outside FINAL/ATTEMPT/PENDING with status PASSED counted as a final pass."""
    final = with_results("PASSED", ("PASSED", result_type))
    code, data = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(final)})
    assert code == ExitCode.CHECKS_FAILED
    [result] = data["sessions"][0]["results"]
    assert result["verdict"] == "error" and "not counted as a pass" in result["error"]


@pytest.mark.parametrize("flag", ["hasFailures", "hasErrors", "aborted"])
def test_a_passed_result_that_says_it_failed_is_not_a_pass(plain_env: Path, flag: str) -> None:
    """Hole: a FINAL result with status PASSED and hasFailures (or hasErrors, or aborted) true was a
    pass: the answer contradicts itself, and the gate does not pick the reading that deploys."""
    final = with_results("PASSED", ("PASSED", "FINAL"))
    final["results"][0][flag] = True
    code, data = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(final)})
    assert code == ExitCode.CHECKS_FAILED
    [result] = data["sessions"][0]["results"]
    assert result["verdict"] == "error"
    assert f"PASSED but {flag}: true" in result["error"] and "not counted as a pass" in result["error"]


def test_consistent_answers_still_pass_and_fail_as_before(plain_env: Path) -> None:
    """The checks above leave honest answers alone: a result without resultType, a flaky check
    (a failed ATTEMPT, then a passed FINAL) in a PASSED session, a FAILED session with a failure."""
    flaky = with_results("PASSED", ("FAILED", "ATTEMPT"), ("PASSED", None))
    assert run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(flaky)})[0] == 0
    failed = with_results("FAILED", ("FAILED", "FINAL"))
    code, _ = run_against(plain_env, {TRIGGER: json_answer(running()), SESSION: json_answer(failed)}, gate="")
    assert code == ExitCode.CHECKS_FAILED


COMPLETION = ("GET", f"/v1/test-sessions/{SESSION_A}/completion")


def _without_results(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "results"}


def test_a_final_answer_without_a_results_field_is_read_again_not_taken_for_a_no_match(
    plain_env: Path,
) -> None:
    """Hole: the completion long poll's answer need not carry `results` (the API document does not
    require it); a final answer without it was "no check matched" (exit 0 with failOnNoMatchingChecks:
    false) while the session itself had a failed check. The session is read again for its results."""
    failed = with_results("FAILED", ("FAILED", "FINAL"))
    routes = {
        COMPLETION: json_answer(_without_results(failed)),
        TRIGGER: json_answer(_without_results(running())),
        SESSION: json_answer(failed),
    }
    code, data = run_against(plain_env, routes)
    assert code == ExitCode.CHECKS_FAILED and [r["verdict"] for r in data["sessions"][0]["results"]] == [
        "failed"
    ]


def test_a_final_session_that_never_says_what_ran_is_not_a_no_match(plain_env: Path) -> None:
    """Only `results: []`, said, is the no-match signal; a final session whose every answer leaves
    the field out said nothing about its checks: exit 4."""
    passed = _without_results(session_json(SESSION_A))
    code, data = run_against(
        plain_env, {TRIGGER: json_answer(_without_results(running())), SESSION: json_answer(passed)}
    )
    assert code == ExitCode.SERVICE and not data["sessions"][0]["noMatch"]
    assert "no results field" in data["sessions"][0]["problem"]


def test_two_triggers_answered_with_one_session_never_pass(plain_env: Path) -> None:
    """Hole: a spec with two locations, both triggers answered with the same session (a proxy that
    caches a POST, a confused service): both followed it and passed, and the second location's
    checks never ran. Two triggers make two sessions; the second one is exit 4."""
    path = plain_env / "multi.yml"
    path.write_text(
        "sessions:\n"
        "  - {name: eu, runLocation: eu-west-1, target: {matchTags: [[smoke]]}}\n"
        "  - {name: us, runLocation: us-east-1, target: {matchTags: [[smoke]]}}\n"
    )
    routes = {
        CANCEL: no_content,
        TRIGGER: json_answer(running()),
        SESSION: json_answer(session_json(SESSION_A)),
    }
    with HostileServer(routes) as server:
        code, data = cli(plain_env, "run", str(path), "--base-url", server.url, "--timeout", "5")
    assert code == ExitCode.SERVICE
    eu, us = data["sessions"]
    assert eu["exitCode"] == 0 and us["exitCode"] == ExitCode.SERVICE
    assert "eu (eu-west-1) of this run got too" in us["problem"] and us["results"] == []
    assert data["counts"]["total"] == 1  # the one session's result, counted once


# --- answers the client does not understand (these held) --------------------------------------


def _html(status: int) -> Route:
    body = b"<!doctype html><html><title>Sign in</title><body>portal</body></html>"
    return answer(body, status, "text/html")


def _redirect(h: BaseHTTPRequestHandler) -> None:
    h.send_response(302)
    h.send_header("Location", "http://127.0.0.1:9/v1/test-sessions/trigger")
    h.send_header("Content-Length", "0")
    h.end_headers()


NO_MATCH = {"statusCode": 403, "error": "Forbidden", "message": "x", "errorCode": "ERR_NO_MATCHING_CHECKS"}


@pytest.mark.parametrize(
    "routes",
    [
        pytest.param({TRIGGER: _html(200)}, id="trigger-200-html"),
        pytest.param({TRIGGER: no_content}, id="trigger-204"),
        pytest.param({TRIGGER: _redirect}, id="trigger-302-elsewhere"),
        pytest.param({TRIGGER: json_answer(NO_MATCH)}, id="no-match-code-on-a-200"),
        pytest.param({TRIGGER: json_answer({**NO_MATCH, "statusCode": 404}, 404)}, id="no-match-code-on-404"),
        pytest.param(
            {
                TRIGGER: json_answer(
                    {**NO_MATCH, "errorCode": None, "attributes": {"errorCode": NO_MATCH["errorCode"]}}, 403
                )
            },
            id="no-match-code-in-attributes",
        ),
        pytest.param(
            {TRIGGER: json_answer({**NO_MATCH, "errorCode": [NO_MATCH["errorCode"]]}, 403)},
            id="code-in-a-list",
        ),
        pytest.param({TRIGGER: json_answer({"testSessionId": SESSION_A})}, id="200-json-of-the-wrong-shape"),
        pytest.param(
            {TRIGGER: json_answer(running()), SESSION: json_answer(session_json(SESSION_B))},
            id="completion-answers-another-session",
        ),
        pytest.param(
            {
                TRIGGER: json_answer(running()),
                SESSION: in_turn(
                    json_answer(running()), json_answer({"statusCode": 404, "error": "Not Found"}, 404)
                ),
            },
            id="running-then-404",
        ),
        pytest.param(
            {TRIGGER: json_answer(running()), SESSION: json_answer(NO_MATCH, 403)},
            id="no-match-code-on-a-read",
        ),
    ],
)
def test_answers_not_understood_exit_4_whatever_the_gate(plain_env: Path, routes: dict[Any, Route]) -> None:
    code, data = run_against(plain_env, routes)
    assert code == ExitCode.SERVICE and data["verdict"] == "service-error"
    assert not data["sessions"][0]["noMatch"]


def test_an_unknown_session_status_ends_at_the_deadline_never_0(plain_env: Path) -> None:
    final = with_results("DONE", ("PASSED", "FINAL"))
    with HostileServer(
        {CANCEL: no_content, TRIGGER: json_answer(running()), SESSION: json_answer(final)}
    ) as s:
        code, _ = cli(plain_env, "run", spec(plain_env), "--base-url", s.url, "--timeout", "1")
    assert code == ExitCode.TIMEOUT


def test_no_secret_reaches_any_output_under_these_faults(
    plain_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy that echoes the request (the key in its Authorization header, the secret variable)
    in an HTML error page and in a 200 of the wrong shape: neither reaches a line or a report."""
    monkeypatch.setenv("DB_PASSWORD", "hunter2-very-secret")
    echo = (
        f"<html><title>denied</title>Authorization: Bearer {KEY} body DB_PASSWORD=hunter2-very-secret</html>"
    )

    def echo_page(h: BaseHTTPRequestHandler) -> None:
        body = echo.encode()
        h.send_response(403)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    wrong = json_answer({"testSessionId": KEY, "status": ["hunter2-very-secret"]})
    for route in (echo_page, wrong):
        with HostileServer({TRIGGER: route}) as server:
            out = plain_env / "out"
            reports = [
                "--json",
                str(out / "r.json"),
                "--junit",
                str(out / "j.xml"),
                "--markdown",
                str(out / "s.md"),
            ]
            code = main(
                [
                    "run",
                    spec(plain_env),
                    "--base-url",
                    server.url,
                    "--secret-env",
                    "DB_PASSWORD",
                    "-v",
                    *reports,
                ]
            )
        assert code == ExitCode.SERVICE
        captured = capsys.readouterr()
        texts = [captured.out, captured.err, *(p.read_text() for p in out.iterdir())]
        assert len(texts) == 5
        for text in texts:
            assert KEY not in text and "hunter2-very-secret" not in text


# --- spec settings -----------------------------------------------------------------------------


def _results_file(path: Path, code: int, verdict: str, sessions: list[dict[str, Any]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "toolVersion": "0",
                "startedAt": "2025-01-01T00:00:00Z",
                "verdict": verdict,
                "exitCode": code,
                "sessions": sessions,
            }
        )
    )
    return path


def _session(
    code: int, problem: str | None = None, results: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "name": "s",
        "runLocation": "eu-west-1",
        "exitCode": code,
        "problem": problem,
        "results": results or [],
    }


@pytest.mark.parametrize(
    ("code", "verdict", "session"),
    [
        pytest.param(4, "service-error", _session(4, "could not connect"), id="service-error"),
        pytest.param(5, "no-match", _session(5, "no check matched", []), id="no-match"),
        pytest.param(130, "interrupted", _session(130), id="interrupted-before-any-result"),
        pytest.param(
            1,
            "failed",
            _session(1, results=[{"id": "r", "name": "no id", "status": "FAILED", "verdict": "failed"}]),
            id="failures-without-check-ids",
        ),
    ],
)
def test_rerun_failed_of_a_run_that_judged_nothing_is_never_a_pass(
    cli_env: Emulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    code: int,
    verdict: str,
    session: Any,
) -> None:
    """Hole: `run || run --rerun-failed results.json` after a run that failed before any check
    failed (the service was down, nothing matched, a signal) said "nothing to rerun" and exited 0."""
    earlier = _results_file(tmp_path / "earlier.json", code, verdict, [session])
    got, data = cli(tmp_path, "run", "--rerun-failed", str(earlier))
    err = capsys.readouterr().err
    assert got == ExitCode.USAGE and data["verdict"] == "usage-error"
    assert "run the spec again without --rerun-failed" in err and str(earlier) in err
    assert len(cli_env.backend.snapshot().sessions) == 0


def test_rerun_failed_whose_checks_no_longer_match_is_not_a_pass(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hole: with gate.failOnNoMatchingChecks: false, a rerun whose failed checks are gone (deleted,
    deactivated, another account) was a no-match, exit 0. Nothing of what failed was run again."""
    gone = "0b9a3c4d-1111-4a5b-8c6d-0000000000ff"
    result = {"id": "r", "checkId": gone, "name": "gone", "status": "FAILED", "verdict": "failed"}
    earlier = _results_file(tmp_path / "earlier.json", 1, "failed", [_session(1, results=[result])])
    got, data = cli(tmp_path, "run", spec(tmp_path), "--rerun-failed", str(earlier))
    assert got == ExitCode.NO_MATCH and data["sessions"][0]["noMatch"]


MISSING = "0b9a3c4d-1111-4a5b-8c6d-0000000000ee"  # no such check


@pytest.mark.parametrize("named", [MISSING, LEGACY])
def test_a_check_named_by_id_that_never_ran_is_not_a_pass(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], named: str
) -> None:
    """Hole: `--check-id A --check-id B` where B does not exist (a typo, deleted) or is deactivated
    ran A alone and passed: the check the user named was never judged. Exit 2, naming it; the same
    closes `--rerun-failed` passing when a failed check was deleted since."""
    code, data = cli(tmp_path, "run", "--location", "eu-west-1", "--check-id", HOMEPAGE, "--check-id", named)
    assert code == ExitCode.USAGE
    [session] = data["sessions"]
    assert [r["verdict"] for r in session["results"]] == ["passed"]
    assert named in session["problem"] and "never ran" in session["problem"]
    # With tags as well, a named check may be left out by them: that is the target, not a hole.
    assert cli(tmp_path, "run", "--location", "eu-west-1", "--check-id", HOMEPAGE, "--check-id", named,
               "--tag", "smoke")[0] == 0  # fmt: skip


def _baseline(path: Path, verdict: str) -> Path:
    result = {
        "id": "old",
        "checkId": CHECKOUT,
        "name": "Checkout flow",
        "runLocation": "eu-west-1",
        "status": "RUNNING" if verdict == "running" else verdict.upper(),
        "verdict": verdict,
    }
    return _results_file(path, 3, "timeout", [_session(3, "deadline", [result])])


@pytest.mark.parametrize("verdict", ["running", "cancelled"])
def test_a_check_unfinished_in_the_baseline_does_not_make_todays_failure_known(
    plain_env: Path, verdict: str
) -> None:
    """Hole: with failOn: new, a failure now was forgiven because the baseline had the same check
    unfinished (a timed-out or cancelled run): nobody saw it fail then, so it is not known."""
    baseline = _baseline(plain_env / "baseline.json", verdict)
    final = with_results("FAILED", ("FAILED", "FINAL"))  # no error group: only the baseline could forgive
    routes = {CANCEL: no_content, TRIGGER: json_answer(running()), SESSION: json_answer(final)}
    with HostileServer(routes) as server:
        code, data = cli(
            plain_env, "run", spec(plain_env), "--base-url", server.url, "--baseline", str(baseline)
        )
    [result] = data["sessions"][0]["results"]
    assert result["checkId"] == CHECKOUT and result["verdict"] == "failed"
    assert result["baseline"] == "newly-failing" and code == ExitCode.CHECKS_FAILED


def test_a_check_failing_in_the_baseline_is_still_forgiven_with_fail_on_new(plain_env: Path) -> None:
    baseline = _baseline(plain_env / "baseline.json", "failed")
    final = with_results("FAILED", ("FAILED", "FINAL"))
    routes = {CANCEL: no_content, TRIGGER: json_answer(running()), SESSION: json_answer(final)}
    with HostileServer(routes) as server:
        code, data = cli(
            plain_env, "run", spec(plain_env), "--base-url", server.url, "--baseline", str(baseline)
        )
    assert data["sessions"][0]["results"][0]["baseline"] == "still-failing" and code == ExitCode.OK


# --- the pre-deploy gate and the entry points --------------------------------------------------


@pytest.mark.parametrize("flag", ["--detach", "--help", "-h", "--version"])
def test_pre_deploy_gate_refuses_flags_that_exit_0_without_judging(tmp_path: Path, flag: str) -> None:
    """Hole: `pre-deploy-gate.sh spec.yml --detach -- ./deploy.sh` deployed: `run --detach` exits 0
    once the session is triggered, before any check ran (so do --help and --version)."""
    marker = tmp_path / "deployed"
    fake = tmp_path / "bin"
    fake.mkdir()
    testsession = fake / "testsession"  # exits 0 for anything: only the script's own guard can refuse
    testsession.write_text("#!/bin/sh\nexit 0\n")
    testsession.chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin"}
    script = REPO_ROOT / "examples" / "pre-deploy-gate.sh"
    answer = subprocess.run(
        ["bash", str(script), "spec.yml", flag, "--", "touch", str(marker)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert answer.returncode == ExitCode.USAGE and not marker.exists()
    assert flag in answer.stderr and "not deploying" in answer.stderr


def test_the_action_exits_with_the_gates_code_on_a_refusal(
    plain_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GitHub Action's entry point against a proxy's HTML 404, with every input that could make
    it lenient: exit 4 and status=service-error in its outputs."""
    outputs = plain_env / "github_output"
    outputs.touch()
    with HostileServer({TRIGGER: _html(404)}) as server:
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(outputs),
            "INPUT_SPEC": spec(plain_env),
            "INPUT_BASE_URL": server.url,
            "INPUT_API_KEY": KEY,
            "INPUT_ACCOUNT_ID": ACCOUNT,
            "INPUT_FAIL_ON": "new",
            "INPUT_RCA": "false",
            "INPUT_JSON_PATH": str(plain_env / "r.json"),
        }
        answer = run_here([], environ, plain_env, entry=action.main)  # its exit code, as `python -m` exits
    assert answer.returncode == ExitCode.SERVICE, answer.stderr
    assert "status=service-error" in outputs.read_text() and "exit-code=4" in outputs.read_text()
    # GitHub hides the key once told with ::add-mask::; it must appear nowhere else.
    shown = [
        line for line in (answer.stdout + answer.stderr).splitlines() if not line.startswith("::add-mask::")
    ]
    assert KEY not in "\n".join(shown) + outputs.read_text()
    assert json.loads((plain_env / "r.json").read_text())["verdict"] == "service-error"


# --- signals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_waits_first_read_ends_it_at_once_with_reports(
    plain_env: Path, sig: signal.Signals, code: int
) -> None:
    """Hole: `wait ID` read the session on the main thread; a service that holds that read kept
    SIGTERM unanswered for the read timeout times its retries (CI then kills it: no reports)."""
    held = threading.Event()

    def hold(h: BaseHTTPRequestHandler) -> None:
        held.set()
        time.sleep(20)

    with HostileServer({SESSION: hold}) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(CI_PREFIXES) and k != "CI"}
        env["TESTSESSION_BASE_URL"] = server.url
        proc = subprocess.Popen(
            [sys.executable, "-m", "runner", "wait", SESSION_A, "--json", "r.json", "--junit", "j.xml"],
            cwd=plain_env,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert held.wait(15), "the read never arrived"
            sent = time.monotonic()
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=15)
        finally:
            proc.kill()
    assert proc.returncode == code, out
    assert time.monotonic() - sent < 12, out  # not the held read's 20 s (times its retries)
    data = json.loads((plain_env / "r.json").read_text())
    assert data["verdict"] == "interrupted" and data["exitCode"] == code
    assert (plain_env / "j.xml").exists() and KEY not in out


# --- CI variables ------------------------------------------------------------------------------


def test_a_github_event_path_that_is_a_fifo_does_not_hold_the_run(cli_env: Emulator, tmp_path: Path) -> None:
    """Hole: GITHUB_EVENT_PATH naming a FIFO (or any file that never ends opening) held the run
    forever before anything was triggered; the event file is read only when it is a regular file.
    The run is in this process (helpers.run_here): one held ends at the suite's timeout (pytest-timeout's
    alarm interrupts the open), failing the test where it was held."""
    fifo = tmp_path / "event.fifo"
    os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY" and k != "GITHUB_OUTPUT"}
    env.update(GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(fifo))
    answer = run_here(["run", "--location", "eu-west-1", "--tag", "checkout", "--no-rca"], env, tmp_path)
    assert answer.returncode == ExitCode.CHECKS_FAILED, answer.stderr


@pytest.mark.parametrize("name", ["GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "baseline"])
def test_a_fifo_nobody_reads_or_writes_never_holds_the_run(
    cli_env: Emulator, tmp_path: Path, name: str
) -> None:
    """Hole: a step-outputs file, step summary or baseline naming a FIFO with nobody at the other end
    held the run for ever (after the verdict, or before the trigger). Now: a one-line problem, and
    the gate's own exit code. In this process (helpers.run_here), as the test above."""
    fifo = tmp_path / "side.fifo"
    os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT")}
    argv = ["run", "--location", "eu-west-1", "--tag", "checkout", "--no-rca"]
    if name == "baseline":
        argv += ["--baseline", str(fifo)]
    else:
        env.update(GITHUB_ACTIONS="true", **{name: str(fifo)})
    answer = run_here(argv, env, tmp_path)
    assert answer.returncode == ExitCode.CHECKS_FAILED, answer.stderr
    said = answer.stdout + answer.stderr
    assert str(fifo) in said and "Traceback" not in said
    if name == "baseline":
        assert "not a regular file" in said


# --- report paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(["--json", "out/r", "--markdown", "out/r"], id="json-and-markdown"),
        pytest.param(["--junit", "out/r", "--json", "./out/../out/r"], id="junit-and-json-spelt-apart"),
        pytest.param(["--json", "gate.yml"], id="json-over-the-spec"),
    ],
)
def test_two_outputs_on_one_path_are_refused_before_anything_runs(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """Hole: `--json r --markdown r` wrote the markdown over results.json (a later --baseline or
    --rerun-failed of it then fails), and `--json spec.yml` wrote the results over the spec."""
    path = spec(tmp_path, gate="")
    before = Path(path).read_text()
    code = main(["run", path, "--no-rca", *flags])
    assert code == ExitCode.USAGE and "same file" in capsys.readouterr().err
    assert len(cli_env.backend.snapshot().sessions) == 0 and Path(path).read_text() == before


def _closed_pipe_run(args: list[str], env: dict[str, str], cwd: Path) -> int:
    """The CLI with stdout and stderr on a pipe nobody reads (`... 2>&1 | head -0`): its exit code."""
    reader, writer = os.pipe()
    os.close(reader)  # every write to the pipe fails with EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "runner", *args],
            cwd=cwd,
            env=env,
            stdout=writer,
            stderr=writer,
            timeout=60,
        ).returncode
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["run", "--location", "eu-west-1"], ExitCode.USAGE),  # no credentials: exit 2, not 120
        (["wait", "not-a-uuid"], ExitCode.USAGE),
    ],
)
def test_a_closed_pipe_keeps_the_exit_code_of_an_error(tmp_path: Path, args: list[str], code: int) -> None:
    """Hole: `env -i testsession run ... 2>&1 | head -0` exited 120 (Python's code for a stdout it
    could not flush at exit), not the 2 of its usage error: the code must say who acts."""
    assert _closed_pipe_run(args, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, tmp_path) == code


def test_a_failed_run_whose_report_cannot_be_written_to_a_closed_pipe_is_still_exit_1(
    emulator: Emulator, tmp_path: Path
) -> None:
    """Hole: a report that could not be written at the end (`--json /dev/full` passes the check
    before the run) printed its error to stderr; with stderr a closed pipe (`2>&1 | head`) that
    print raised BrokenPipeError, which the command runner reads as exit 0: a failed gate passed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(CI_PREFIXES) and k != "CI"}
    env.update(
        TESTSESSION_API_KEY=emulator.api_key,
        TESTSESSION_ACCOUNT_ID=emulator.account_id,
        TESTSESSION_BASE_URL=emulator.url,
    )
    args = ["run", "--location", "eu-west-1", "--tag", "checkout", "--no-rca", "--json", "/dev/full"]
    assert _closed_pipe_run([*args, "--junit", "", "--markdown", ""], env, tmp_path) == ExitCode.CHECKS_FAILED


# --- the verdict policy's rules for answers that do not add up ---------------------------------


def _r(verdict: str, check: str | None = "c1") -> ResultOutcome:
    return ResultOutcome(
        id=f"{verdict}-{check}", checkId=check, name="n", status=verdict.upper(), verdict=verdict
    )


def test_policy_a_final_answer_that_does_not_add_up_is_never_explained_by_passes() -> None:
    passed = [_r("passed"), _r("flaky", "c2")]
    assert unexplained_end("PASSED", passed, vanished=0) is None
    assert (
        unexplained_end("FAILED", [*passed, _r("failed", "c3")], vanished=0) is None
    )  # a failure explains it
    assert unexplained_end("CANCELLED", [*passed, _r("cancelled", "c3")], vanished=0) is None
    for status in ("FAILED", "CANCELLED"):
        assert unexplained_end(status, passed, vanished=0)
    assert unexplained_end("PASSED", passed, vanished=1) and unexplained_end(
        "PASSED", passed, vanished=0, changed=1
    )


def test_policy_shared_sessions_and_unrun_named_checks() -> None:
    assert shared_session(["a", None, "b", "a", None], list("vwxyz")) == {
        3: shared_session(["a", "a"], ["v", "y"])[1]
    }
    assert "v of this run got too" in shared_session(["a", "a"], ["v", "y"])[1]
    assert unrun_named_checks(["c1", "c2"], [_r("passed", "c1"), _r("failed", "c2")]) is None
    problem = unrun_named_checks(["c1", "c9", "c9"], [_r("passed", "c1")])
    assert problem is not None and problem.startswith("check c9 named in target.checkId never ran")
