"""Every exit leaves the reports it was asked for, each naming the problem and the fix; the exit code
says who must act; no command ends in a dead end.

The real CLI runs in-process against the emulator (or nothing at all: a bad spec never reaches it).
"""

from __future__ import annotations

import errno
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from checks_servers import free_port
from conftest import CI_PREFIXES

from runner.cli.main import main
from runner.core.exitcodes import ExitCode
from runner.emulator import Emulator
from runner.reports import files

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

XSD = Path(__file__).resolve().parent.parent.parent / "shared" / "junit" / "junit-10.xsd"
UNKNOWN_SESSION = "00000000-0000-4000-8000-000000000000"


def flags(out: Path) -> list[str]:
    return ["--junit", f"{out}/junit.xml", "--markdown", f"{out}/summary.md", "--json", f"{out}/results.json"]


def reports(out: Path) -> tuple[dict[str, Any], ET.Element, str]:
    return (
        json.loads((out / "results.json").read_text()),
        ET.parse(out / "junit.xml").getroot(),
        (out / "summary.md").read_text(),
    )


def the_error_case(junit: ET.Element) -> ET.Element:
    """The one error test case of a run that never started."""
    assert (junit.get("tests"), junit.get("errors"), junit.get("failures")) == ("1", "1", "0")
    (case,) = junit.iter("testcase")
    (error,) = case.findall("error")
    return error


def assert_valid_junit(path: Path) -> None:
    if XSD.exists():
        import xmlschema

        xmlschema.XMLSchema(str(XSD)).validate(str(path))


@pytest.fixture
def no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No CI variables, no credentials, cwd tmp_path: nothing can be reached."""
    for name in list(os.environ):
        if name.startswith(CI_PREFIXES) or name.startswith("TESTSESSION_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- exit 2: bad spec, bad flag, missing credentials --------------------------------------------


def test_a_bad_spec_writes_every_report_naming_the_problem(
    no_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = "bad.yml"
    (no_service / spec).write_text("runLocation: eu-west-1\nretryStrategy: {maxRetries: 3}\n")
    out = no_service / "out"
    assert main(["run", spec, *flags(out)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"{spec}:2: retryStrategy.type: ")  # the problems as before, one line each
    data, junit, markdown = reports(out)
    assert (data["exitCode"], data["verdict"]) == (2, "usage-error")
    problem = f"{spec}:2: retryStrategy.type: required field is missing"
    assert data["message"] == problem
    assert problem in the_error_case(junit).get("message", "")
    assert problem in markdown and "Usage error" in markdown
    assert_valid_junit(out / "junit.xml")


def test_the_spec_own_report_paths_are_used_even_when_it_does_not_validate(no_service: Path) -> None:
    spec = no_service / "bad.yml"
    spec.write_text(
        "runLocation: eu-west-1\ntimeot: 5\n"
        "reports: {junit: '${OUT_DIR:-ci}/unit.xml', markdown: null, json: ci/r.json}\n"
    )
    assert main(["run", str(spec)]) == ExitCode.USAGE
    assert "timeot" in the_error_case(ET.parse(no_service / "ci" / "unit.xml").getroot()).get("message", "")
    assert json.loads((no_service / "ci" / "r.json").read_text())["verdict"] == "usage-error"
    assert not (no_service / "testsession-reports").exists()  # markdown: null, and no default paths


def test_a_bad_flag_writes_the_reports_of_its_flags(
    no_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = no_service / "out"
    with pytest.raises(SystemExit) as info:
        main(["run", "--location", "eu-west-1", "--tiemout", "5", *flags(out)])
    assert info.value.code == ExitCode.USAGE
    assert "did you mean --timeout?" in capsys.readouterr().err
    data, junit, _ = reports(out)
    assert data["verdict"] == "usage-error" and "--tiemout" in data["message"]
    assert "did you mean --timeout?" in the_error_case(junit).get("message", "")


def test_missing_credentials_say_where_they_come_from_for_each_command(
    no_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = no_service / "out"
    assert main(["run", "--location", "eu-west-1", *flags(out)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "missing credentials" in err and "(or use `run --emulator`)" in err
    assert "missing credentials" in reports(out)[0]["message"]
    # `wait` has no --emulator: its hint is the command that prints credentials.
    assert main(["wait", UNKNOWN_SESSION, *flags(out)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "--emulator" not in err and "`testsession emulator`" in err
    assert "testsession emulator" in reports(out)[0]["message"]


def test_github_mode_plain_run_sets_its_outputs_on_every_exit(
    no_service: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output, summary = no_service / "github_output", no_service / "summary"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    (no_service / "bad.yml").write_text("runLocation: eu-west-1\nwait: {timeoutSeconds: -1}\n")
    assert main(["run", "bad.yml"]) == ExitCode.USAGE
    lines = output.read_text().splitlines()
    assert "status=usage-error" in lines and "exit-code=2" in lines
    assert "junit-path=testsession-reports/junit.xml" in lines  # the defaults: the spec names none
    assert "wait.timeoutSeconds" in summary.read_text()
    with pytest.raises(SystemExit):
        main(["run", "bad.yml", "--no-such-flag"])
    assert output.read_text().count("status=usage-error") == 2


# --- exit 2 or 4 on `wait`: who must act -----------------------------------------------------------


def test_wait_of_a_malformed_id_is_refused_before_any_request(
    cli_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    out = Path("out")
    with pytest.raises(SystemExit) as info:
        main(["wait", "not-a-uuid", *flags(out)])
    assert info.value.code == ExitCode.USAGE
    assert "not a test session id: 'not-a-uuid'" in capsys.readouterr().err
    assert cli_env.backend.stats()["requestsTotal"] == 0
    assert "not a test session id" in reports(out)[0]["message"]


def test_wait_of_an_unknown_session_is_the_users_to_fix_and_reported(
    cli_env: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    out = Path("out")
    assert main(["wait", UNKNOWN_SESSION, *flags(out)]) == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"testsession: error: no test session with id {UNKNOWN_SESSION} in account ")
    data, junit, _ = reports(out)
    assert (
        data["verdict"] == "usage-error"
        and data["sessions"][0]["name"] == f"testsession wait {UNKNOWN_SESSION}"
    )
    assert "no test session with id" in the_error_case(junit).get("message", "")


@pytest.mark.usefixtures("quick_retries")  # the retries of a refused connection, not their waits
def test_wait_when_the_service_cannot_be_reached_is_exit_4_and_reported(
    no_service: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", "tsk_not_used_here")
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", "acc")
    port = free_port()
    out = no_service / "out"
    code = main(
        ["wait", UNKNOWN_SESSION, "--base-url", f"http://127.0.0.1:{port}", "--timeout", "1", *flags(out)]
    )
    assert code == ExitCode.SERVICE
    err = capsys.readouterr().err
    assert f"could not connect to 127.0.0.1:{port} (nothing was sent)" in err
    data, junit, _ = reports(out)
    assert data["verdict"] == "service-error" and "could not connect" in the_error_case(junit).get(
        "message", ""
    )


# --- no dead ends ---------------------------------------------------------------------------------


def test_run_emulator_detach_is_refused_with_the_way_out(
    no_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--emulator", "--detach", "--location", "eu-west-1"]) == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "--detach with --emulator" in line and "start `testsession emulator`" in line
    assert not (no_service / "testsession-reports").exists()  # --detach writes no reports


def test_run_checks_detach_is_refused_for_what_it_is(
    no_service: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checks file's checks run in the command: no emulator to start elsewhere."""
    check = "- {name: Up, checkType: API, request: {url: 'http://127.0.0.1:9/'}}\n"
    (no_service / "checks.yml").write_text(check, encoding="utf-8")
    assert main(["run", "--checks", "checks.yml", "--detach"]) == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "--detach with --checks" in line and "emulator" not in line
    assert not (no_service / "testsession-reports").exists()


def test_a_read_only_file_system_is_named_and_no_user_flag_is_suggested(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A read-only mount cannot be made here without privileges: the probe meets EROFS as it would."""

    def read_only(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(tmp_path / "ro"))

    monkeypatch.setattr(files.tempfile, "mkstemp", read_only)
    monkeypatch.setenv("container", "podman")  # inside a container, where --user is otherwise the fix
    with pytest.raises(Exception) as info:
        files.check_writable({"junit": tmp_path / "ro" / "junit.xml"}, os.environ)
    message = str(info.value)
    assert "read-only" in message and "choose a path on a writable one" in message
    assert "--user" not in message


def test_in_a_container_the_user_flag_is_suggested_only_for_permissions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def denied(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path))

    monkeypatch.setattr(files.tempfile, "mkstemp", denied)
    monkeypatch.setenv("container", "podman")
    with pytest.raises(Exception, match=r'--user "\$\(id -u\):\$\(id -g\)"'):
        files.check_writable({"junit": tmp_path / "junit.xml"}, os.environ)
    monkeypatch.delenv("container")
    monkeypatch.setattr(files, "_CONTAINER_MARKS", ())
    with pytest.raises(Exception) as info:
        files.check_writable({"junit": tmp_path / "junit.xml"}, {})
    assert "--user" not in str(info.value)


# --- a bug ---------------------------------------------------------------------------------------


def test_a_bug_is_no_verdict_exit_4_with_its_reports_and_traceback(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error the tool did not expect (a bug, simulated here in the metadata step) must neither pass
    nor read as "checks failed" (1): exit 4, the reports name it, and the traceback is there to report."""
    import runner.cli.job

    def broken(*_args: object, **_kwargs: object) -> object:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(runner.cli.job, "resolve_metadata", broken)
    out = tmp_path / "out"
    assert main(["run", "--location", "eu-west-1", "--tag", "checkout", *flags(out)]) == ExitCode.SERVICE
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error: ZeroDivisionError: division by zero" in err
    data, junit, markdown = reports(out)
    assert "internal error" in markdown
    assert data["exitCode"] == 4 and "internal error: ZeroDivisionError" in data["message"]
    assert "internal error" in the_error_case(junit).get("message", "")
    assert len(cli_env.backend.snapshot().sessions) == 0


# --- a report that cannot be written at the end ----------------------------------------------------


def _passing_run_with_an_unread_junit_fifo(tmp_path: Path) -> int:
    """A FIFO nobody reads passes the check before the run (it exists, it is writable) but takes no
    report at the end; summary.md and results.json go to tmp_path."""
    fifo = tmp_path / "junit.fifo"
    os.mkfifo(fifo)
    return main(
        [
            "run",
            "--location",
            "eu-west-1",
            "--tag",
            "smoke",
            "--junit",
            str(fifo),
            "--markdown",
            str(tmp_path / "summary.md"),
            "--json",
            str(tmp_path / "results.json"),
        ]
    )


def test_the_ci_outputs_of_a_passing_run_whose_report_cannot_be_written_say_exit_2(
    cli_env: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Action's outputs (exit-code, status) and the step summary say the code the process
    returns: a workflow that reads `exit-code` (a later step, `continue-on-error`) must not see 0
    where the step failed closed. Before, they said 0: the digest was made before the lost report."""
    output = tmp_path / "github_output"
    output.write_text("")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary"))
    code = _passing_run_with_an_unread_junit_fifo(tmp_path)
    capsys.readouterr()
    assert code == ExitCode.USAGE
    outputs = dict(
        line.split("=", 1) for line in output.read_text().splitlines() if "=" in line and "<<" not in line
    )
    assert outputs["exit-code"] == "2", outputs


def test_a_passing_run_whose_report_cannot_be_written_does_not_exit_0(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO nobody reads passes the check before the run (it exists, it is writable) but takes no
    report at the end: the gate fails closed, and the last line says why."""
    code = _passing_run_with_an_unread_junit_fifo(tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == ExitCode.USAGE, err
    assert "could not write junit report" in err[-2]
    assert (
        "junit report could not be written" in err[-1] and "exit 2" in err[-1] and "gate passed" in err[-1]
    ), err


def test_results_json_of_a_passing_run_whose_report_cannot_be_written_says_the_exit_it_ended_with(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tool that reads results.json alone (a later job, `testsession merge`, a dashboard) must not
    take the run for a pass: results.json is written last and says exit 2 and which report was lost,
    while its checks keep their own verdicts. Before, it said exit 0 and "passed" (the markdown too)."""
    code = _passing_run_with_an_unread_junit_fifo(tmp_path)
    capsys.readouterr()
    data = json.loads((tmp_path / "results.json").read_text())
    assert code == ExitCode.USAGE
    assert (data["exitCode"], data["verdict"]) == (2, "usage-error")
    assert data["message"] == "the gate passed, but the junit report could not be written"
    results = [r for s in data["sessions"] for r in s["results"]]
    assert results and all(r["verdict"] == "passed" for r in results)
    # The markdown, written after the lost JUnit, says it too.
    markdown = (tmp_path / "summary.md").read_text()
    assert markdown.startswith("## ⚠️ Usage error") and data["message"] in markdown
