"""`testsession validate` and `testsession schema`, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import child_env

from runner.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_validate_examples_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(EXAMPLES / "testsession.yml"), str(EXAMPLES / "testsession-multi.yml")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.splitlines() == [
        f"{EXAMPLES / 'testsession.yml'}: ok "
        '(1 session: "pre-deploy checks" in eu-west-1: tags all-outcomes)',
        f'{EXAMPLES / "testsession-multi.yml"}: ok (2 sessions: "smoke (Europe)" in eu-west-1: tags smoke; '
        '"api and checkout (US)" in us-east-1: tags api+smoke or checkout)',
    ]


def test_validate_reports_every_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yml"
    good.write_text(
        "runLocation: eu-west-1\ntarget: {checkId: [0b9a3c4d-1111-4a5b-8c6d-00000000000a, "
        "0b9a3c4d-1111-4a5b-8c6d-00000000000b]}\n"
    )
    bad = tmp_path / "bad.yml"
    bad.write_text("runLocation: eu-west-1\nwait: {timeoutSecs: 5}\ngate: {failOnDegraded: sometimes}\n")
    code = main(["validate", str(good), str(bad), str(tmp_path / "missing.yml")])
    out = capsys.readouterr()
    assert code == 2
    assert out.out == f'{good}: ok (1 session: "testsession" in eu-west-1: 2 check ids)\n'
    assert out.err.splitlines() == [
        f"{bad}:2: wait.timeoutSecs: unknown field 'timeoutSecs': did you mean 'timeoutSeconds'? "
        "allowed: timeoutSeconds",
        f"{bad}:3: gate.failOnDegraded: expected true or false, got text",
        f"{bad}: 2 problems",
        f"{tmp_path / 'missing.yml'}: no such file",
        f"{tmp_path / 'missing.yml'}: 1 problem",
    ]


def test_validate_allow_unset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_text("runLocation: ${TESTSESSION_TEST_UNSET_REGION}\n")
    assert main(["validate", str(spec)]) == 2
    assert "${TESTSESSION_TEST_UNSET_REGION} is not set" in capsys.readouterr().err
    assert main(["validate", "--allow-unset", str(spec)]) == 0


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_no_traceback_and_no_secret_from_a_real_process(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_bytes(b"runLocation: x\nenvironmentVariables:\n  - {key: T, value: '${TOKEN}', secret: 1x}\n")
    env = child_env(TOKEN="s3cr3t-token-value")
    done = subprocess.run(
        [sys.executable, "-m", "runner", "validate", str(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "s3cr3t" not in done.stderr + done.stdout
    assert done.stderr.splitlines()[0] == (
        f"{spec}:3: environmentVariables[0].secret: expected true or false, got text"
    )


def test_spec_commands_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, runner.cli.spec_commands as m; "
        "heavy = [n for n in ('yaml', 'pydantic', 'git', 'requests') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_a_subcommand_error_shows_that_subcommand_usage(capsys: pytest.CaptureFixture[str]) -> None:
    # `report` takes no -o: the error must show report's usage, not the top-level one.
    with pytest.raises(SystemExit) as exited:
        main(["report", "results.json", "-o", "DIR"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: testsession report "), err
    assert err[-1].startswith("testsession report: error: unrecognized arguments: -o DIR"), err
