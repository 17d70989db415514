"""GitLab CI: the job of examples/gitlab-ci.yml run as GitLab would run it (its script, in bash,
with GITLAB_CI and CI_* variables) against the emulator; the dotenv file and the log sections."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import child_env
from outcome_factory import big_outcome, sample_outcome

from runner.ci import gitlab
from runner.job.digest import digest

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "examples" / "gitlab-ci.yml"
SECTION_START = re.compile(r"\x1b\[0Ksection_start:\d+:(?P<name>[A-Za-z0-9_.-]+)(\[[^\]]*\])?\r\x1b\[0K")
SECTION_END = re.compile(r"\x1b\[0Ksection_end:\d+:(?P<name>[A-Za-z0-9_.-]+)\r\x1b\[0K")


def read_dotenv(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def template_job(name: str = "testsession") -> dict[str, Any]:
    """The template's job with `extends` resolved, as GitLab runs it."""
    from test_ci_local_checks import gitlab_job

    return gitlab_job(name)


def run_job(tmp_path: Path, emulator, variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The template job's variables and script, as the GitLab runner's shell would run them."""
    job = template_job()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "testsession").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m runner "$@"\n')
    (shim / "testsession").chmod(0o755)
    env = child_env()
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update(
        {
            "PATH": f"{shim}{os.pathsep}{env['PATH']}",
            "CI": "true",
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": "89abcdef0123456789abcdef0123456789abcdef",
            "CI_COMMIT_BRANCH": "main",
            "CI_COMMIT_REF_NAME": "main",
            "CI_COMMIT_TITLE": "Fix the cart",
            "CI_PROJECT_URL": "https://gitlab.example.com/acme/shop",
            "CI_PIPELINE_ID": "77",
            "CI_JOB_ID": "78",
            "TESTSESSION_API_KEY": emulator.api_key,
            "TESTSESSION_ACCOUNT_ID": emulator.account_id,
            "TESTSESSION_BASE_URL": emulator.url,
            "TESTSESSION_SPEC": str(REPO / "examples" / "testsession.yml"),
        }
    )
    env.update(variables)
    script = "\n".join(job["script"])
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=90
    )
    # Decoded by hand: text mode would turn the sections' carriage returns into newlines.
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    )


def test_template_job_writes_reports_dotenv_and_sections(tmp_path, emulator):
    proc = run_job(tmp_path, emulator, {})
    assert proc.returncode == 1, proc.stderr  # a check failed: not turned into a warning
    reports = tmp_path / "testsession-reports"

    # The files the template declares as artifacts and reports exist where it says.
    job = template_job()
    assert job["artifacts"]["when"] == "always"
    for path in (job["artifacts"]["reports"]["junit"], job["artifacts"]["reports"]["dotenv"]):
        assert (tmp_path / path).is_file()
    assert (reports / "summary.md").is_file()

    dotenv_file = tmp_path / job["artifacts"]["reports"]["dotenv"]
    raw = dotenv_file.read_bytes()
    assert len(raw) <= 5 * 1024
    lines = raw.decode().splitlines()
    assert all(re.fullmatch(r"[A-Za-z0-9_]+=[^\r\n#\"']*", line) for line in lines)
    values = read_dotenv(dotenv_file)
    assert len(values) <= 20
    assert values["TESTSESSION_STATUS"] == "failed"
    assert values["TESTSESSION_EXIT_CODE"] == "1"
    assert values["TESTSESSION_FAILED"] == "1" and values["TESTSESSION_DEGRADED"] == "1"
    (session,) = emulator.backend.snapshot().sessions.values()
    assert values["TESTSESSION_SESSION_IDS"] == session.id
    assert values["TESTSESSION_SESSION_LINKS"].startswith(emulator.url)
    assert session.id in values["TESTSESSION_SESSION_LINKS"]
    assert session.metadata["commitId"] == "89abcdef0123456789abcdef0123456789abcdef"

    # Collapsible sections: every start has its end, the RCA phase and the outputs among them.
    out = proc.stdout
    starts = [m.group("name") for m in SECTION_START.finditer(out)]
    ends = [m.group("name") for m in SECTION_END.finditer(out)]
    assert starts == ends
    # Each failure's details in a section of its own, collapsed; the outputs in theirs.
    assert "testsession_failure_1" in starts and "testsession_outputs" in starts
    outputs_section = out[out.index("section_start:", out.index("testsession_outputs") - 40) :]
    assert "TESTSESSION_STATUS=failed" in outputs_section
    assert "::group::" not in out and "::error" not in out  # no GitHub commands in GitLab
    assert emulator.api_key not in out + proc.stderr


def test_degraded_only_exits_with_the_allowed_code(tmp_path, emulator):
    """--fail-on-degraded with only a degraded check: exit 10, which allow_failure.exit_codes allows."""
    proc = run_job(tmp_path, emulator, {"TESTSESSION_ARGS": "--fail-on-degraded --tag search"})
    job = template_job()
    assert proc.returncode in job["allow_failure"]["exit_codes"], proc.stdout + proc.stderr
    assert "only degraded checks failed the gate" in proc.stdout
    values = read_dotenv(tmp_path / "testsession-reports" / "testsession.env")
    assert values["TESTSESSION_EXIT_CODE"] == "1"
    assert values["TESTSESSION_DEGRADED"] == "1" and values["TESTSESSION_FAILED"] == "0"


def test_degraded_warning_can_be_turned_off(tmp_path, emulator):
    proc = run_job(
        tmp_path,
        emulator,
        {"TESTSESSION_ARGS": "--fail-on-degraded --tag search", "TESTSESSION_DEGRADED_WARNS": "false"},
    )
    assert proc.returncode == 1


def test_dotenv_stays_under_5_kb_with_many_sessions():
    outcome = big_outcome(50)
    many = [outcome.sessions[0].model_copy(update={"testSessionId": f"id-{i:04d}"}) for i in range(500)]
    outcome = outcome.model_copy(update={"sessions": many})
    text = gitlab.format_dotenv(gitlab.dotenv_values(digest(outcome)))
    assert len(text.encode()) <= gitlab.MAX_BYTES < 5120
    values = dict(line.split("=", 1) for line in text.splitlines())
    ids = values["TESTSESSION_SESSION_IDS"].split(" ")
    assert 0 < len(ids) < 500 and ids[0] == "id-0000"


def test_dotenv_values_are_single_line_without_comment_or_quote_characters():
    text = gitlab.format_dotenv({"A": "x\ny\r\"z'#1", "B": ""})
    assert text == "A=xyz%231\nB=\n"
    with pytest.raises(ValueError):
        gitlab.format_dotenv({"BAD-KEY": "1"})


def test_dotenv_path_from_environment(tmp_path):
    from runner.ci import CiPublisher
    from runner.ci.console import Console
    from runner.core.redact import Redactor
    from runner.job.events import Finished

    target = tmp_path / "nested" / "out.env"
    environ = {"GITLAB_CI": "true", gitlab.ENV_DOTENV: str(target)}
    with open(os.devnull, "w") as sink:
        console = Console(stream=sink, environ=environ)
        CiPublisher(console, Redactor()).notify(Finished(digest(sample_outcome()), {}))
    assert read_dotenv(target)["TESTSESSION_STATUS"] == sample_outcome().verdict


def test_the_template_passes_checks_and_the_build_as_flags(tmp_path):
    """The template's variables for local checks become `run` flags, each value one argument (a
    build command with spaces stays whole); an empty TESTSESSION_SPEC passes no spec."""
    job = template_job()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "testsession").write_text('#!/bin/sh\nfor a in "$@"; do echo "arg: $a"; done\n')
    (shim / "testsession").chmod(0o755)
    env = child_env()
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update(
        {
            "PATH": f"{shim}{os.pathsep}{env['PATH']}",
            "TESTSESSION_BASELINE_JOB": "",
            "TESTSESSION_SPEC": "",
            "TESTSESSION_CHECKS": "ci/checks.yml",
            "TESTSESSION_BUILD_COMMAND": "npm start -- --port 3000",
            "TESTSESSION_BUILD_URL": "http://127.0.0.1:3000/health",
            "TESTSESSION_BUILD_TIMEOUT": "90",
        }
    )

    def args(name: str, **variables: str) -> list[str]:
        script = "\n".join(template_job(name)["script"])
        proc = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=tmp_path, env={**env, **variables}, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return [line.removeprefix("arg: ") for line in proc.stdout.splitlines() if line.startswith("arg: ")]

    build = ["--build-url", "http://127.0.0.1:3000/health", "--build-command", "npm start -- --port 3000",
             "--build-timeout", "90"]  # fmt: skip
    assert job["variables"]["TESTSESSION_BUILD_REUSE"] == "false"
    assert args("testsession") == ["run", "--fail-on-degraded", "--checks", "ci/checks.yml", *build]
    # In CI an answering URL is exit 2 unless reuse is asked for: the variable is the flag, in a part too.
    assert args("testsession", TESTSESSION_BUILD_REUSE="true")[-1] == "--build-reuse"
    part = args(".testsession-shard", TESTSESSION_BUILD_REUSE="true", CI_NODE_INDEX="2", CI_NODE_TOTAL="4")
    assert part[:11] == ["run", "--fail-on-degraded", "--checks", "ci/checks.yml", *build, "--build-reuse"]
    assert part[11:13] == ["--shard", "auto"]


def test_the_merge_job_passes_its_flags_and_warns_on_degraded_only_as_the_job_does(tmp_path):
    """The merge job's TESTSESSION_MERGE_ARGS reach `testsession merge` (--allow-mixed-commits,
    --comment), and a merged run failed only by degraded checks exits 10 (allowed to fail), as the
    testsession job's run does; failed checks stay exit 1."""
    job = template_job(".testsession-merge")
    assert job["allow_failure"] == {"exit_codes": [10]}
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "testsession").write_text(
        '#!/bin/sh\nfor a in "$@"; do echo "arg: $a"; done\nmkdir -p testsession-reports\n'
        'printf "TESTSESSION_FAILED=%s\\nTESTSESSION_ERROR=0\\nTESTSESSION_CANCELLED=0\\n'
        'TESTSESSION_DEGRADED=2\\n" "$FAILED" > testsession-reports/testsession.env\nexit 1\n'
    )
    (shim / "testsession").chmod(0o755)
    (tmp_path / "shards" / "1").mkdir(parents=True)
    (tmp_path / "shards" / "1" / "results.json").write_text("{}")
    env = child_env()
    env.update({k: str(v) for k, v in job["variables"].items()})
    env.update(
        {
            "PATH": f"{shim}{os.pathsep}{env['PATH']}",
            "TESTSESSION_MERGE_ARGS": "--allow-mixed-commits --comment",
        }
    )

    def merge(failed: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-eo", "pipefail", "-c", "\n".join(job["script"])],
            cwd=tmp_path, env={**env, "FAILED": failed}, capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    degraded = merge("0")
    assert degraded.returncode == 10, degraded.stdout + degraded.stderr
    args = [line.removeprefix("arg: ") for line in degraded.stdout.splitlines() if line.startswith("arg: ")]
    assert args == ["merge", "shards/1/results.json", "-o", "testsession-reports", "--allow-mixed-commits",
                    "--comment"]  # fmt: skip
    assert merge("1").returncode == 1
