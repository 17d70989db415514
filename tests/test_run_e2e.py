"""`testsession run` and `testsession wait` end to end: CLI -> client -> HTTP -> emulator."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import never_ending_world
from helpers import cli_run, junit_xsd_errors, sessions_created

from runner.cli.main import main
from runner.emulator import Emulator
from runner.reports import load_outcome

# A check that hangs must stay running until the test cancels or interrupts it (see conftest).
EMULATOR_WORLD = never_ending_world()

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_demo_spec_reports_every_outcome_with_analyses(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(tmp_path / "out", "run", str(EXAMPLES / "testsession.yml"))
    assert code == 1
    counts = data["counts"]
    assert (counts["passed"], counts["failed"], counts["degraded"], counts["flaky"], counts["error"]) == (
        1, 1, 1, 1, 1,
    )  # fmt: skip
    assert data["verdict"] == "failed" and data["exitCode"] == 1
    session = data["sessions"][0]
    assert session["testSessionId"] and session["link"].startswith(cli_env.url)
    failed = next(r for r in session["results"] if r["verdict"] == "failed")
    assert "503" in failed["error"]
    completed = [g for g in session["errorGroups"] if g["analysis"]["state"] == "completed"]
    assert completed and all(g["analysis"]["analysis"]["rootCause"] for g in completed)
    flaky = next(r for r in session["results"] if r["verdict"] == "flaky")
    assert flaky["attempts"] == 2 and flaky["failedAttempts"][0]["error"]
    assert junit_xsd_errors(tmp_path / "out" / "junit.xml") == []
    markdown = (tmp_path / "out" / "summary.md").read_text()
    assert "Checkout flow" in markdown and "Root cause" in markdown
    assert sessions_created(cli_env) == 1


def test_passing_checks_exit_0(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "smoke")
    assert code == 0
    assert data["verdict"] == "passed"
    names = {r["name"] for r in data["sessions"][0]["results"]}
    assert "Homepage loads" in names and not any("deactivated" in n for n in names)


def test_degraded_passes_unless_fail_on_degraded(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "search")
    assert (code, data["counts"]["degraded"]) == (0, 1)
    code, data = cli_run(
        tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "search", "--fail-on-degraded"
    )
    assert code == 1


def test_no_matching_checks_exit_5_or_0_when_allowed(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "no-such-tag")
    assert code == 5 and data["verdict"] == "no-match"
    spec = tmp_path / "spec.yml"
    spec.write_text(
        "runLocation: eu-west-1\ntarget: {matchTags: [[no-such-tag]]}\n"
        "gate: {failOnNoMatchingChecks: false}\n"
    )
    code, data = cli_run(tmp_path / "out", "run", str(spec))
    assert code == 0 and data["verdict"] == "no-match"


def test_bad_spec_exit_2_before_anything_is_triggered(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "bad.yml"
    spec.write_text("runLocation: eu-west-1\ntimeout: 5\nretryStrategy: {maxRetries: 11}\n")
    code, _ = cli_run(tmp_path / "out", "run", str(spec))
    err = capsys.readouterr().err
    assert code == 2
    assert "bad.yml:2" in err and "timeout" in err and "maxRetries" in err
    assert "Traceback" not in err
    assert sessions_created(cli_env) == 0


def test_unknown_location_is_a_usage_error(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(tmp_path / "out", "run", "--location", "mars-north-1", "--tag", "smoke")
    assert code == 2
    assert "location" in data["message"]


def test_deadline_cancels_the_session_exit_3(cli_env: Emulator, tmp_path: Path) -> None:
    code, data = cli_run(
        tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "hang", "--timeout", "1"
    )
    assert code == 3 and data["partial"] is True
    session_id = data["sessions"][0]["testSessionId"]
    answer = requests.get(
        f"{cli_env.url}/v1/test-sessions/{session_id}",
        headers={"Authorization": f"Bearer {cli_env.api_key}", "X-Service-Account": cli_env.account_id},
        timeout=5,
    ).json()
    assert answer["status"] == "CANCELLED"
    # Cancelled by the run's own deadline: the check did not finish, it was not cancelled by someone.
    assert data["counts"]["running"] == 1 and data["counts"]["cancelled"] == 0
    assert junit_xsd_errors(tmp_path / "out" / "junit.xml") == []
    junit = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    error = junit.find("./testsuite/testcase/error")
    assert error is not None and error.get("type") == "DID_NOT_FINISH"
    assert "did not finish within the 1 s deadline" in (error.get("message") or "")


def test_bad_key_exit_4_with_reports(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_wrong_key_value")
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "smoke")
    out = capsys.readouterr()
    assert code == 4 and data["verdict"] == "service-error"
    assert "401" in data["message"]
    assert "tsk_wrong_key_value" not in out.out + out.err + json.dumps(data)


@pytest.mark.usefixtures("quick_retries")  # the retries of a refused connection, not their waits
def test_unreachable_service_exit_4_never_0(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("TESTSESSION_BASE_URL", f"http://127.0.0.1:{port}")
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "smoke")
    assert code == 4 and data["partial"] is True
    assert (tmp_path / "out" / "junit.xml").exists()


def test_several_sessions_run_concurrently_most_severe_code_wins(cli_env: Emulator, tmp_path: Path) -> None:
    spec = tmp_path / "multi.yml"
    spec.write_text(
        "sessions:\n"
        "  - {name: ok, runLocation: eu-west-1, target: {matchTags: [[smoke]]}}\n"
        "  - {name: broken, runLocation: us-east-1, target: {matchTags: [[checkout]]}}\n"
        "  - {name: none, runLocation: eu-central-1, target: {matchTags: [[nothing-here]]}}\n"
    )
    code, data = cli_run(tmp_path / "out", "run", str(spec))
    by_name = {s["name"]: s for s in data["sessions"]}
    codes = tuple(by_name[name]["exitCode"] for name in ("ok", "broken", "none"))
    assert codes == (0, 1, 5)
    assert code == 1  # a failed check outranks "no match"
    assert sessions_created(cli_env) == 2


def test_detach_then_wait(cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--location", "eu-west-1", "--tag", "checkout", "--detach"])
    out = capsys.readouterr().out
    assert code == 0
    session_id = next(
        line.split()[0] for line in out.splitlines() if line and not line.startswith(("Test", "verdict"))
    )
    code, data = cli_run(tmp_path / "out", "wait", session_id)
    assert code == 1
    assert data["sessions"][0]["testSessionId"] == session_id
    assert data["counts"]["failed"] == 1
    assert sessions_created(cli_env) == 1


def test_no_rca_fetches_no_analyses(cli_env: Emulator, tmp_path: Path) -> None:
    before = cli_env.backend.stats()["analysesCreated"]
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "checkout", "--no-rca")
    assert code == 1
    groups = data["sessions"][0]["errorGroups"]
    assert groups and all(g["analysis"]["state"] == "disabled" for g in groups)
    assert groups[0]["message"]  # the error text is still reported
    assert cli_env.backend.stats()["analysesCreated"] == before


def test_report_command_renders_again(cli_env: Emulator, tmp_path: Path) -> None:
    cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "checkout")
    again = tmp_path / "again"
    code = main(
        [
            "report", str(tmp_path / "out" / "results.json"),
            "--junit", str(again / "junit.xml"), "--markdown", str(again / "summary.md"),
        ]
    )  # fmt: skip
    assert code == 0
    assert (again / "junit.xml").read_text() == (tmp_path / "out" / "junit.xml").read_text()
    outcome = load_outcome((tmp_path / "out" / "results.json").read_text(), "results.json")
    assert outcome.exitCode == 1


def test_github_metadata_reaches_the_service(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    for key, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SHA": sha,
        "GITHUB_REF_NAME": "feature/login",
        "GITHUB_REF": "refs/heads/feature/login",
        "GITHUB_ACTOR": "octocat",
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
    }.items():
        monkeypatch.setenv(key, value)
    code, data = cli_run(tmp_path / "out", "run", "--location", "eu-west-1", "--tag", "smoke")
    assert code == 0
    session_id = data["sessions"][0]["testSessionId"]
    answer = requests.get(
        f"{cli_env.url}/v1/test-sessions/{session_id}",
        headers={"Authorization": f"Bearer {cli_env.api_key}", "X-Service-Account": cli_env.account_id},
        timeout=5,
    ).json()
    metadata = answer["metadata"]
    assert metadata["commitId"] == sha and metadata["branchName"] == "feature/login"
    assert metadata["github"]["repository"] == "acme/shop" and metadata["github"]["runId"] == "42"
    assert data["commit"]["commitId"] == sha


def test_secret_env_flag_reads_the_value_from_the_environment_and_masks_it(
    world_factory: Any,
    default_world: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "s3cr3t-Value-From-Env-9731"
    checks = default_world["accounts"][0]["checks"]
    checkout = next(c for c in checks if c["name"] == "Checkout flow")
    # The check passes only when the secret arrived with the trigger.
    checkout["when"] = [{"env": {"DB_PASSWORD": secret}, "behaviour": "pass"}]
    emu = world_factory(default_world)
    monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emu.account_id)
    monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DB_PASSWORD", secret)
    argv = ["run", "--location", "eu-west-1", "--tag", "checkout", "--secret-env", "DB_PASSWORD", "-v"]
    code, data = cli_run(tmp_path / "out", *argv)
    assert code == 0 and data["counts"]["passed"] == 1
    out = capsys.readouterr()
    reports = "".join(p.read_text() for p in (tmp_path / "out").iterdir())
    assert secret not in out.out + out.err + reports
    monkeypatch.delenv("DB_PASSWORD")
    assert main(argv) == 2
