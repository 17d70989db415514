"""The action's inputs: each one declared in action.yml reaches the tool, `rerun-failed` reruns
exactly what failed, and `emulator-world` runs the user's own world (real checks against a build on
the runner), through the action's entry point (`runner.cli.action`, in this process:
test_ci_github.run_action) against the emulator."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from checks_servers import free_port
from test_build import gone, shop_command
from test_ci_github import REPO, parse_outputs, run_action

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


def test_local_check_inputs_become_the_flags() -> None:
    inputs = {
        "INPUT_CHECKS": " ci/checks.yml ",
        "INPUT_STATE": ".ts/state.db",
        "INPUT_BUILD_COMMAND": "npm start -- --port 3000",
        "INPUT_BUILD_URL": "http://127.0.0.1:3000/health",
        "INPUT_BUILD_TIMEOUT": "90",
    }
    assert build_argv(inputs) == [
        "run", "--checks", "ci/checks.yml", "--state", ".ts/state.db",
        "--build-command", "npm start -- --port 3000", "--build-url", "http://127.0.0.1:3000/health",
        "--build-timeout", "90",
    ]  # fmt: skip
    # With checks, emulator: "true" (as an older workflow may say) adds nothing: checks run locally.
    assert build_argv({"INPUT_CHECKS": "c.yml", "INPUT_EMULATOR": "true"}) == ["run", "--checks", "c.yml"]
    assert build_argv({"INPUT_BUILD_URL": "http://127.0.0.1:1/"}) == [
        "run",
        "--build-url",
        "http://127.0.0.1:1/",
    ]
    assert build_argv({"INPUT_VERBOSE": "true"}) == ["run", "--verbose"]
    reuse = {"INPUT_BUILD_URL": "http://127.0.0.1:1/", "INPUT_BUILD_REUSE": " true "}
    assert build_argv(reuse) == ["run", "--build-url", "http://127.0.0.1:1/", "--build-reuse"]
    assert build_argv({**reuse, "INPUT_BUILD_REUSE": "false"}) == [
        "run",
        "--build-url",
        "http://127.0.0.1:1/",
    ]
    with pytest.raises(InputError, match=r"^input build-reuse: expected true or false, got 'always'"):
        build_argv({**reuse, "INPUT_BUILD_REUSE": "always"})
    with pytest.raises(InputError, match=r"^input build-command: needs build-url"):
        build_argv({"INPUT_CHECKS": "c.yml", "INPUT_BUILD_COMMAND": "npm start"})
    with pytest.raises(InputError, match=r"^input build-timeout: expected seconds, got 'soon'"):
        build_argv({"INPUT_BUILD_URL": "http://127.0.0.1:1/", "INPUT_BUILD_TIMEOUT": "soon"})
    with pytest.raises(InputError, match=r"^inputs checks and world: give one of them"):
        build_argv({"INPUT_CHECKS": "c.yml", "INPUT_WORLD": "w.yml"})
    with pytest.raises(InputError, match=r"^input state: only with checks, world or demo"):
        build_argv({"INPUT_STATE": "s.db"})


def test_the_old_emulator_inputs_still_work_as_world_and_state() -> None:
    old = {"INPUT_SPEC": "s.yml", "INPUT_EMULATOR": "true", "INPUT_EMULATOR_WORLD": " ci/world.yml ",
           "INPUT_EMULATOR_STATE": ".ts/state.db"}  # fmt: skip
    new = {"INPUT_SPEC": "s.yml", "INPUT_WORLD": "ci/world.yml", "INPUT_STATE": ".ts/state.db"}
    expected = ["run", "s.yml", "--emulator", "--world", "ci/world.yml", "--state", ".ts/state.db"]
    assert build_argv(old) == build_argv(new) == build_argv({**old, **new}) == expected
    with pytest.raises(
        InputError, match=r"^input world: give world or emulator-world .its old name., not both"
    ):
        build_argv({"INPUT_WORLD": "a.yml", "INPUT_EMULATOR_WORLD": "b.yml"})
    action = yaml.safe_load((REPO / "action.yml").read_text())
    for name in ("emulator-world", "emulator-state"):
        assert "deprecated" in action["inputs"][name]["deprecationMessage"]


def test_the_demo_is_run_only_when_asked_for() -> None:
    assert build_argv({"INPUT_DEMO": "true"}) == ["run", "--emulator", "--demo"]
    assert build_argv({"INPUT_DEMO": "true", "INPUT_EMULATOR": "true"}) == ["run", "--emulator", "--demo"]
    for inputs in ({"INPUT_EMULATOR": "true"}, {"INPUT_EMULATOR": "true", "INPUT_SPEC": "s.yml"}):
        with pytest.raises(InputError, match=r'^input emulator: "true" without checks or world'):
            build_argv(inputs)


def test_emulator_alone_is_a_usage_error_naming_checks_with_outputs(tmp_path: Path) -> None:
    proc, output, _ = run_action(
        tmp_path, {"spec": str(REPO / "examples" / "testsession.yml"), "emulator": "true"}
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        'testsession: error: input emulator: "true" without checks or world would run the shipped demo '
        "world, whose results are scripted, not your build's: give checks: FILE (your checks, run "
        'against your build), or demo: "true" when the demo is meant'
    )
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"]) == ("usage-error", "2")
    assert "checks: FILE" in (tmp_path / "testsession-reports" / "summary.md").read_text()


def test_the_action_starts_the_build_and_runs_the_users_world_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local-checks job of examples/github-workflow.yml: the build (the broken shop) started by
    the action's build-command and awaited at build-url, its world's checks executed for real, the
    state file where the cache keeps it, and the build stopped when the step ends."""
    port, tcp_port, dns_port = free_port(), free_port(), free_port()
    # Where the build listens, as the job's environment says it (read by the spec and the world).
    monkeypatch.setenv("SHOP_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SHOP_TCP_PORT", str(tcp_port))
    monkeypatch.setenv("SHOP_DNS_PORT", str(dns_port))
    examples = REPO / "examples"
    proc, output, summary = run_action(
        tmp_path,
        {
            "spec": str(examples / "local-checks-spec.yml"),
            "world": str(examples / "local-checks.yml"),
            "state": ".testsession/state.db",
            "build-command": shop_command(port, tcp_port, dns_port, broken=True),
            "build-url": f"http://127.0.0.1:{port}/health",
            "build-timeout": "60",
        },
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the broken build fails the gate
    assert "--emulator --world " in proc.stdout and "--state .testsession/state.db" in proc.stdout
    assert f"build: http://127.0.0.1:{port}/health answered 200" in proc.stdout
    assert gone(f"--port {port} ") == []  # the build did not outlive the step
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["failed"], outputs["degraded"]) == ("failed", "1", "1")
    assert (outputs["new-failures"], outputs["known-failures"]) == ("2", "0")  # a state with no past
    failed = {c["name"]: c for c in json.loads(outputs["failed-checks"])}
    assert set(failed) == {"Cart API", "Line service"}
    assert failed["Cart API"]["error"] == "STATUS_CODE EQUALS 200: received 503"  # the build's answer
    assert failed["Line service"]["error"] == f"connection refused: 127.0.0.1:{tcp_port}"
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


def test_the_merge_inputs_become_the_merge_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "results.json").touch()
    monkeypatch.chdir(tmp_path)
    merge = {"INPUT_MERGE": "part/results.json", "INPUT_ALLOW_MIXED_COMMITS": "true", "INPUT_VERBOSE": "true"}
    assert build_argv(merge) == ["merge", "part/results.json", "--allow-mixed-commits", "--verbose"]
    assert build_argv({**merge, "INPUT_ALLOW_MIXED_COMMITS": "false", "INPUT_VERBOSE": ""}) == [
        "merge",
        "part/results.json",
    ]
    with pytest.raises(InputError, match=r"^input allow-mixed-commits: only with merge"):
        build_argv({"INPUT_SPEC": "s.yml", "INPUT_ALLOW_MIXED_COMMITS": "true"})
    assert build_argv({"INPUT_SPEC": "s.yml", "INPUT_ALLOW_MIXED_COMMITS": "false"}) == ["run", "s.yml"]


@pytest.fixture
def up() -> Iterator[int]:
    """A build already up (as a killed job's build would be): an HTTP server answering 200."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


class Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def _checks_of(tmp_path: Path, port: int) -> str:
    checks = tmp_path / "checks.yml"
    check = {"name": "Home", "checkType": "URL", "request": {"url": f"http://127.0.0.1:{port}/"}}
    checks.write_text(yaml.safe_dump({"checks": [check]}), encoding="utf-8")
    return str(checks)


def test_in_ci_an_answering_build_url_fails_the_step_unless_build_reuse(tmp_path: Path, up: int) -> None:
    """On a runner (CI=true) a build-url that answers before build-command started is exit 2 (it may
    be a build a killed job left), its outputs set; build-reuse: true checks it as the build."""
    inputs = {
        "checks": _checks_of(tmp_path, up),
        "build-command": "touch started.txt",
        "build-url": f"http://127.0.0.1:{up}/",
    }
    proc, output, _ = run_action(tmp_path, inputs)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "already answers" in proc.stderr and "--build-reuse" in proc.stderr
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"]) == ("usage-error", "2")
    assert not (tmp_path / "started.txt").exists()

    output.write_text("")
    proc, output, _ = run_action(tmp_path, {**inputs, "build-reuse": "true"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "already answers (200): `touch started.txt` not started" in proc.stdout
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"], outputs["passed"]) == ("passed", "0", "1")
    assert not (tmp_path / "started.txt").exists()


def test_a_build_that_does_not_start_is_status_build_not_started_exit_6(tmp_path: Path) -> None:
    port = free_port()
    inputs = {
        "checks": _checks_of(tmp_path, port),
        "build-command": "echo 'Error: listen EADDRINUSE' >&2; exit 3",
        "build-url": f"http://127.0.0.1:{port}/",
        "build-timeout": "30",
    }
    proc, output, _ = run_action(tmp_path, inputs)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "exited with code 3" in proc.stderr and "EADDRINUSE" in proc.stderr
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"]) == ("build-not-started", "6")
    assert outputs["json-path"] and (tmp_path / outputs["json-path"]).is_file()
