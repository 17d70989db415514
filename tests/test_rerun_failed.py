"""`testsession run --rerun-failed results.json`: exactly the checks that failed, per location."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from helpers import cli_run
from outcome_factory import check_id, sample_outcome

from runner.cli.main import main
from runner.emulator import Emulator
from runner.job.rerun import rerun_spec, select_rerun
from runner.spec import parse_spec

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CHECKOUT = "0b9a3c4d-1111-4a5b-8c6d-000000000003"  # fails in the default world
PROFILE = "0b9a3c4d-1111-4a5b-8c6d-000000000006"  # errors
SEARCH = "0b9a3c4d-1111-4a5b-8c6d-000000000004"  # degraded


run = partial(cli_run, rca=False, reports=("json",))  # run(OUT_DIR, *ARGV): (exit code, results.json)


def sessions_by_trigger(emu: Emulator) -> list[tuple[str, set[str]]]:
    """What the emulator was asked to run: (location, check ids) per session, in trigger order."""
    return [(s.location, set(s.check_ids)) for s in emu.backend.snapshot().sessions.values()]


def test_rerun_failed_triggers_a_session_on_exactly_the_two_failed_checks(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    code, data = run(first, "run", str(EXAMPLES / "testsession.yml"))
    assert code == 1
    failed = {r["checkId"] for r in data["sessions"][0]["results"] if r["verdict"] in ("failed", "error")}
    assert failed == {CHECKOUT, PROFILE}
    capsys.readouterr()

    code, again = run(
        tmp_path / "again",
        "run",
        str(EXAMPLES / "testsession.yml"),
        "--rerun-failed",
        str(first / "results.json"),
    )
    out = capsys.readouterr().out
    assert code == 1  # they still fail
    assert f"rerunning 2 checks that failed in {first / 'results.json'}: " in out
    assert "Checkout flow [eu-west-1]" in out and "Profile page script [eu-west-1]" in out
    assert sessions_by_trigger(cli_env) == [
        ("eu-west-1", {"0b9a3c4d-1111-4a5b-8c6d-00000000000" + str(i) for i in (1, 3, 4, 5, 6)}),
        ("eu-west-1", {CHECKOUT, PROFILE}),
    ]
    [session] = again["sessions"]
    assert {r["checkId"] for r in session["results"]} == {CHECKOUT, PROFILE}
    assert session["name"] == "pre-deploy checks"  # the spec's other settings stay


def test_rerun_with_the_fix_passes_and_a_clean_run_has_nothing_to_rerun(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    assert run(first, "run", "--location", "eu-west-1", "--tag", "checkout")[0] == 1
    # No spec file: the sessions come from the results; --env still applies.
    code, data = run(
        tmp_path / "fixed",
        "run",
        "--rerun-failed",
        str(first / "results.json"),
        "--env",
        "CHECKOUT_FIXED=true",
    )
    assert code == 0 and [r["checkId"] for r in data["sessions"][0]["results"]] == [CHECKOUT]
    capsys.readouterr()

    code, _ = run(tmp_path / "none", "run", "--rerun-failed", str(tmp_path / "fixed" / "results.json"))
    assert code == 0
    assert capsys.readouterr().out.startswith("nothing to rerun: no check failed")
    assert len(cli_env.backend.snapshot().sessions) == 2  # nothing triggered
    assert not (tmp_path / "none" / "results.json").exists()


def test_degraded_is_rerun_only_when_that_run_failed_on_it(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path / "lenient", "run", "--location", "eu-west-1", "--tag", "search")[0] == 0
    assert (
        run(tmp_path / "strict", "run", "--location", "eu-west-1", "--tag", "search", "--fail-on-degraded")[0]
        == 1
    )
    capsys.readouterr()
    assert run(tmp_path / "r1", "run", "--rerun-failed", str(tmp_path / "lenient" / "results.json"))[0] == 0
    assert "nothing to rerun" in capsys.readouterr().out
    code, _ = run(tmp_path / "r2", "run", "--rerun-failed", str(tmp_path / "strict" / "results.json"))
    assert code == 0  # gate.failOnDegraded comes from this run's spec and flags, not the old run
    assert "rerunning 1 check that failed" in capsys.readouterr().out
    assert sessions_by_trigger(cli_env)[-1] == ("eu-west-1", {SEARCH})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ('{"schemaVersion": 2, "sessions": []}', "schemaVersion 2 was written by a newer testsession"),
        ('{"schemaVersion": 0}', "schemaVersion 0 is not valid"),
        ('{"sessions": []}', "schemaVersion: required field is missing"),
    ],
)
def test_an_unusable_results_file_is_a_usage_error(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content)
    assert main(["run", "--rerun-failed", str(path)]) == 2
    err = capsys.readouterr().err
    [line] = err.splitlines()
    assert line.startswith(f"testsession: error: {path}: ") and message in line
    assert len(cli_env.backend.snapshot().sessions) == 0


def test_rerun_failed_refuses_target_flags(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schemaVersion": 1}))
    assert main(["run", "--rerun-failed", str(path), "--tag", "smoke"]) == 2
    assert "--rerun-failed picks the checks and locations itself" in capsys.readouterr().err


def test_selection_groups_by_location_and_keeps_each_locations_session() -> None:
    outcome = sample_outcome(fail_on_degraded=True)  # two locations, every verdict
    selection = select_rerun(outcome)
    expected = [check_id(n) for n in ("Checkout API", "Search page", "Catalog API", "Account page")]
    assert selection.by_location == {"us-east-1": expected, "eu-west-1": expected}
    assert select_rerun(sample_outcome()).count == 6  # degraded passed in that run

    spec = parse_spec(
        "sessions:\n"
        "  - {name: eu, runLocation: eu-west-1, target: {matchTags: [[smoke]], allowDeactivated: true},\n"
        "     environmentVariables: {A: '1'}}\n"
        "  - {name: us, runLocation: us-east-1, retryStrategy: {type: FIXED, maxRetries: 3}}\n"
        "wait: {timeoutSeconds: 60}\n",
        "s.yml",
        {},
    )
    rerun = rerun_spec(spec, selection)
    assert [(s.name, s.runLocation) for s in rerun.sessions] == [("us", "us-east-1"), ("eu", "eu-west-1")]
    us, eu = rerun.sessions
    assert us.target is not None and us.target.checkId == expected and us.target.matchTags is None
    assert us.retryStrategy is not None and us.retryStrategy.maxRetries == 3
    assert eu.target is not None and eu.target.allowDeactivated and eu.environmentVariables[0].key == "A"
    assert rerun.wait.timeoutSeconds == 60
