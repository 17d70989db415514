"""The action's inputs: each one declared in action.yml reaches the tool, and `rerun-failed` reruns
exactly what failed, run as a workflow runs it (`python -m runner.cli.action`) against the emulator."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from test_ci_github import REPO, parse_outputs, run_action

from runner.cli.action import build_argv
from runner.emulator import Emulator

# Inputs the run step does not pass as INPUT_*: the setup step's, and the token (as GITHUB_TOKEN).
NOT_INPUT_VARIABLES = {"python-version": None, "github-token": "GITHUB_TOKEN"}


def test_every_input_of_action_yml_reaches_the_run_step() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    [run] = [step for step in action["runs"]["steps"] if step.get("id") == "run"]
    passed = {name: value for name, value in run["env"].items() if "${{ inputs." in str(value)}
    expected = {
        f"INPUT_{name.upper().replace('-', '_')}": f"${{{{ inputs.{name} }}}}"
        for name in action["inputs"]
        if name not in NOT_INPUT_VARIABLES
    }
    expected["GITHUB_TOKEN"] = "${{ inputs.github-token }}"
    assert passed == expected


def test_rerun_failed_input_becomes_the_flag() -> None:
    argv = build_argv({"INPUT_SPEC": "s.yml", "INPUT_RERUN_FAILED": " out/results.json "})
    assert argv == ["run", "s.yml", "--rerun-failed", "out/results.json"]
    assert "--rerun-failed" not in build_argv({"INPUT_RERUN_FAILED": ""})


def test_emulator_state_input_becomes_the_flag() -> None:
    inputs = {"INPUT_SPEC": "s.yml", "INPUT_EMULATOR": "true", "INPUT_EMULATOR_STATE": " .ts/state.db "}
    argv = build_argv(inputs)
    assert argv == ["run", "s.yml", "--emulator", "--state", ".ts/state.db"]
    assert "--state" not in build_argv({"INPUT_EMULATOR": "true", "INPUT_EMULATOR_STATE": ""})


def test_the_action_reruns_exactly_the_checks_that_failed(tmp_path: Path, emulator: Emulator) -> None:
    spec = str(REPO / "examples" / "testsession.yml")
    service = {"api-key": emulator.api_key, "account-id": emulator.account_id, "base-url": emulator.url}
    first = tmp_path / "first"
    first.mkdir()
    proc, _, _ = run_action(first, {"spec": spec, "rca": "false", **service})
    assert proc.returncode == 1, proc.stderr
    earlier = first / "testsession-reports" / "results.json"
    failed = {
        r["checkId"]
        for s in json.loads(earlier.read_text())["sessions"]
        for r in s["results"]
        if r["verdict"] in ("failed", "error")
    }
    assert len(failed) == 2

    again = tmp_path / "again"
    again.mkdir()
    proc, output, _ = run_action(
        again, {"spec": spec, "rca": "false", "rerun-failed": str(earlier), **service}
    )
    assert proc.returncode == 1, proc.stderr  # they still fail
    assert f"rerunning 2 checks that failed in {earlier}" in proc.stdout
    [session] = json.loads((again / "testsession-reports" / "results.json").read_text())["sessions"]
    assert {r["checkId"] for r in session["results"]} == failed
    assert parse_outputs(output.read_text())["failed"] == "1"  # one failed, one error, of the two

    # With a target input too, it is a usage error that names both, and the outputs say so.
    proc, output, _ = run_action(tmp_path, {"rerun-failed": str(earlier), "location": "eu-west-1", **service})
    assert proc.returncode == 2
    assert "--rerun-failed" in proc.stderr and "--location" in proc.stderr
    assert parse_outputs(output.read_text())["status"] == "usage-error"
