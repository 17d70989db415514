"""The action's inputs: each one declared in action.yml reaches the tool, `rerun-failed` reruns
exactly what failed, and `emulator-world` runs the user's own world (real checks against a build on
the runner), through the action's entry point (`runner.cli.action`, in this process:
test_ci_github.run_action) against the emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_ci_github import REPO, parse_outputs, run_action
from test_local_checks_example import Shop

from runner.cli.action import InputError, build_argv
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


def test_emulator_world_input_becomes_the_flag_and_needs_the_emulator() -> None:
    inputs = {"INPUT_SPEC": "s.yml", "INPUT_EMULATOR": "true", "INPUT_EMULATOR_WORLD": " ci/world.yml "}
    assert build_argv(inputs) == ["run", "s.yml", "--emulator", "--world", "ci/world.yml"]
    assert "--world" not in build_argv({"INPUT_EMULATOR": "true", "INPUT_EMULATOR_WORLD": ""})
    for name in ("emulator-world", "emulator-state"):
        variable = f"INPUT_{name.upper().replace('-', '_')}"
        for emulator in ("", "false"):
            with pytest.raises(InputError, match=f'^input {name}: only with emulator: "true"'):
                build_argv({"INPUT_EMULATOR": emulator, variable: "x"})


def test_emulator_world_without_the_emulator_is_a_usage_error_with_outputs(tmp_path: Path) -> None:
    proc, output, _ = run_action(tmp_path, {"emulator-world": "ci/world.yml"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        'testsession: error: input emulator-world: only with emulator: "true" '
        "(it is the world file the embedded emulator runs)"
    )
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"]) == ("usage-error", "2")


def test_the_action_runs_the_users_world_against_the_build_on_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local-checks job of examples/github-workflow.yml: a build started on the runner (the
    broken shop), its world's checks executed for real, the state file where the cache keeps it."""
    shop = Shop(broken=True)
    try:
        assert shop.banner.startswith("shop ("), shop.banner
        # Where the build listens, as the job's environment says it (read by the spec and the world).
        monkeypatch.setenv("SHOP_URL", f"http://127.0.0.1:{shop.port}")
        monkeypatch.setenv("SHOP_TCP_PORT", str(shop.tcp_port))
        monkeypatch.setenv("SHOP_DNS_PORT", str(shop.dns_port))
        examples = REPO / "examples"
        proc, output, summary = run_action(
            tmp_path,
            {
                "spec": str(examples / "local-checks-spec.yml"),
                "emulator": "true",
                "emulator-world": str(examples / "local-checks.yml"),
                "emulator-state": ".testsession/state.db",
            },
        )
    finally:
        shop.stop()
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the broken build fails the gate
    assert "--emulator --world " in proc.stdout and "--state .testsession/state.db" in proc.stdout
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["failed"], outputs["degraded"]) == ("failed", "1", "1")
    assert (outputs["new-failures"], outputs["known-failures"]) == ("2", "0")  # a state with no past
    failed = {c["name"]: c for c in json.loads(outputs["failed-checks"])}
    assert set(failed) == {"Cart API", "Line service"}
    assert failed["Cart API"]["error"] == "STATUS_CODE EQUALS 200: received 503"  # the build's answer
    assert failed["Line service"]["error"] == f"connection refused: 127.0.0.1:{shop.tcp_port}"
    assert "answered 503 Service Unavailable" in failed["Cart API"]["rootCause"]
    assert failed["Cart API"]["known"] is False
    assert "Cart API" in summary.read_text()
    assert (tmp_path / ".testsession" / "state.db").is_file()  # what actions/cache/save keeps


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
