"""GitHub Actions: the action's entry point in a GitHub-like environment against the emulator, and
the pieces it is made of (outputs file format, annotations, summary cap)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import Ran, child_env, run_here
from outcome_factory import big_outcome, sample_outcome

from runner.ci import github
from runner.ci.common import failed_checks
from runner.ci.console import Console
from runner.cli.action import InputError, build_argv, parse_env, parse_tags
from runner.cli.action import main as action
from runner.core.redact import Redactor
from runner.job.digest import digest

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

REPO = Path(__file__).resolve().parent.parent
SECRET = "s3cr3t-value-for-the-checks"


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it: name=value lines and name<<DELIM heredocs."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            values[name] = value
        i += 1
    return values


def run_action(tmp_path: Path, inputs: dict[str, str], process: bool = False) -> tuple[Ran, Path, Path]:
    """The action's run step (`python -m runner.cli.action`) with `inputs` in a GitHub-like environment:
    in this process (helpers.run_here), or with `process` in a child as the workflow runs it (the
    end-to-end test below, and test_secrets' and test_gate_adversarial's action runs)."""
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    output.write_text("")
    summary.write_text("# earlier step\n")
    env = child_env()
    env.update(
        {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ENV": str(tmp_path / "github_env"),
            "GITHUB_WORKSPACE": str(tmp_path),
            "GITHUB_REPOSITORY": "acme/shop",
            "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
            "GITHUB_REF": "refs/heads/main",
            "GITHUB_REF_NAME": "main",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKFLOW": "deploy",
            "GITHUB_JOB": "gate",
            "GITHUB_EVENT_NAME": "push",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_ACTOR": "octocat",
        }
    )
    env.update({f"INPUT_{name.upper().replace('-', '_')}": value for name, value in inputs.items()})
    if not process:
        return run_here([], env, tmp_path, entry=action), output, summary
    done = subprocess.run(
        [sys.executable, "-m", "runner.cli.action"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    return Ran(done.returncode, done.stdout, done.stderr), output, summary


def test_action_against_the_emulator_sets_every_output_summary_and_annotation(tmp_path, emulator):
    proc, output, summary = run_action(
        tmp_path,
        {
            "spec": str(REPO / "examples" / "testsession.yml"),
            "api-key": emulator.api_key,
            "account-id": emulator.account_id,
            "base-url": emulator.url,
            "environment": "preview",
            "env": "PREVIEW_URL=https://preview.example.com\n\n# a comment\nRELEASE=42",
            "secret-env": f"DB_PASSWORD={SECRET}",
            "timeout": "60",
        },
        process=True,
    )
    assert proc.returncode == 1, proc.stderr  # the demo world has failing checks
    stdout = proc.stdout

    # Secrets: GitHub is told before anything else is printed, and they appear nowhere.
    first_lines = stdout.splitlines()[:2]
    assert f"::add-mask::{emulator.api_key}" in first_lines
    assert f"::add-mask::{SECRET}" in first_lines
    masked_stdout = stdout.replace(f"::add-mask::{SECRET}", "").replace(f"::add-mask::{emulator.api_key}", "")
    reports = tmp_path / "testsession-reports"
    texts = [masked_stdout, proc.stderr, output.read_text(), summary.read_text()]
    for text in texts + [p.read_text() for p in reports.iterdir()]:
        assert SECRET not in text
        assert emulator.api_key not in text

    outputs = parse_outputs(output.read_text())
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert set(outputs) == set(action["outputs"]) == set(github.OUTPUT_NAMES)
    assert outputs["status"] == "failed"
    assert outputs["exit-code"] == "1"
    results = json.loads((reports / "results.json").read_text())
    session = results["sessions"][0]
    assert outputs["test-session-ids"] == session["testSessionId"]
    assert outputs["test-session-links"] == session["link"]
    assert outputs["test-session-links"].startswith(emulator.url)
    counts = results["counts"]
    assert (outputs["passed"], outputs["failed"], outputs["degraded"], outputs["flaky"]) == (
        str(counts["passed"]),
        str(counts["failed"]),
        str(counts["degraded"]),
        str(counts["flaky"]),
    )
    assert counts["failed"] >= 1 and counts["degraded"] >= 1 and counts["flaky"] >= 1
    failed = json.loads(outputs["failed-checks"])
    assert {c["name"] for c in failed} == {"Checkout flow", "Profile page script"}
    checkout = next(c for c in failed if c["name"] == "Checkout flow")
    assert "503" in checkout["error"]
    assert checkout["rootCause"]  # the emulator's analyser explains it
    assert checkout["location"] == "eu-west-1"
    assert checkout["link"].startswith(emulator.url)
    assert outputs["junit-path"] == "testsession-reports/junit.xml"
    assert outputs["markdown-path"] == "testsession-reports/summary.md"
    assert outputs["json-path"] == "testsession-reports/results.json"
    for key in ("junit-path", "markdown-path", "json-path"):
        assert (tmp_path / outputs[key]).is_file()

    # The step summary: appended after what earlier steps wrote, the markdown report, under 1 MiB.
    text = summary.read_text()
    assert text.startswith("# earlier step\n")
    assert text[len("# earlier step\n") :] == (reports / "summary.md").read_text()
    assert "Checkout flow" in text
    assert len(summary.read_bytes()) < 1024 * 1024

    # One ::error per failed check, titled with its name and location, with error and root cause.
    errors = [line for line in stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2
    line = next(e for e in errors if e.startswith("::error title=Checkout flow (eu-west-1)::"))
    message = line.split("::", 2)[2]
    assert "\n" not in message
    assert "503" in message and "%0ARoot cause: " in message
    assert checkout["rootCause"][:40] in message.replace("%0A", "\n")
    assert "::notice" not in stdout  # fewer than 10 failures: no "more" notice

    # The session carries the commit the GitHub variables describe.
    (sent,) = emulator.backend.snapshot().sessions.values()
    assert sent.metadata["commitId"] == "0123456789abcdef0123456789abcdef01234567"
    assert sent.metadata["environment"] == "preview"


def test_secret_env_is_sent_marked_secret():
    from runner.spec import Overrides, apply_overrides, load_spec

    spec = load_spec(str(REPO / "examples" / "testsession.yml"), {})
    secrets = [("DB_PASSWORD", SECRET), ("API_TOKEN", "other-secret")]
    spec = apply_overrides(spec, Overrides(secret_env=secrets))
    variables = {v.key: v for v in spec.sessions[0].environmentVariables}
    assert variables["DB_PASSWORD"].secret and variables["DB_PASSWORD"].value == SECRET
    assert variables["API_TOKEN"].secret and variables["API_TOKEN"].value == "other-secret"
    assert "ENVIRONMENT_URL" in variables
    assert SECRET in spec.sessions[0].secret_values()


def test_bad_input_is_one_line_exit_2_and_still_sets_status_and_exit_code(tmp_path):
    proc, output, _ = run_action(tmp_path, {"env": f"not a pair {SECRET}"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "testsession: error: input env, line 1: expected KEY=VALUE, KEY of letters, digits, _"
    )
    assert SECRET not in proc.stdout + proc.stderr
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"], outputs["failed"]) == ("usage-error", "2", "0")
    # The reports still name the problem (reports on every exit), and the outputs point at them.
    assert "input env, line 1" in (tmp_path / outputs["junit-path"]).read_text()
    assert SECRET not in (tmp_path / outputs["json-path"]).read_text()


def test_missing_spec_sets_usage_error_outputs(tmp_path):
    proc, output, _ = run_action(tmp_path, {"spec": "nope.yml"})
    assert proc.returncode == 2
    assert "nope.yml" in proc.stderr
    assert "Traceback" not in proc.stderr
    outputs = parse_outputs(output.read_text())
    assert (outputs["status"], outputs["exit-code"]) == ("usage-error", "2")
    assert "nope.yml: no such file" in (tmp_path / outputs["markdown-path"]).read_text()


def test_inputs_become_run_arguments():
    argv = build_argv(
        {
            "INPUT_SPEC": "ci/spec.yml",
            "INPUT_LOCATION": "us-east-1",
            "INPUT_TAGS": "smoke\napi, checkout\n",
            "INPUT_CHECK_IDS": "a, b\nc",
            "INPUT_ENVIRONMENT": "preview",
            "INPUT_ENV": "URL=https://x.example/?a=b\n",
            "INPUT_TIMEOUT": "120",
            "INPUT_FAIL_ON_DEGRADED": "true",
            "INPUT_FAIL_ON": "New",
            "INPUT_BASELINE": "baseline/results.json",
            "INPUT_RCA": "false",
            "INPUT_JUNIT_PATH": "out/j.xml",
            "INPUT_EMULATOR": "false",
        }
    )
    assert argv == [
        "run", "ci/spec.yml", "--location", "us-east-1", "--tag", "smoke", "--tag", "api,checkout",
        "--check-id", "a", "--check-id", "b", "--check-id", "c", "--environment", "preview",
        "--env", "URL=https://x.example/?a=b", "--timeout", "120", "--fail-on-degraded",
        "--fail-on", "new", "--baseline", "baseline/results.json", "--no-rca", "--junit", "out/j.xml",
    ]  # fmt: skip
    assert build_argv({}) == ["run"]
    with pytest.raises(InputError, match="input rca: expected true or false"):
        build_argv({"INPUT_RCA": "maybe"})
    with pytest.raises(InputError, match="input timeout"):
        build_argv({"INPUT_TIMEOUT": "soon"})
    with pytest.raises(InputError, match="input fail-on: expected any or new, got 'known'"):
        build_argv({"INPUT_FAIL_ON": "known"})


def test_env_lines_and_tag_groups():
    assert parse_env("env", "A=1\n  # c\n\nB = x=y \n") == [("A", "1"), ("B", " x=y")]
    with pytest.raises(InputError, match="line 2") as info:
        parse_env("secret-env", "A=1\n9X=hidden-value")
    assert "hidden-value" not in str(info.value)
    assert parse_tags(" a ,b \n\n,c,") == ["a,b", "c"]


def test_workflow_command_escaping():
    assert github.escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_outputs_file_uses_heredocs_for_multiline_values_only():
    text = github.format_outputs({"one": "x=y", "two": "a\nb"})
    assert text.startswith("one=x=y\ntwo<<ghadelimiter_")
    assert parse_outputs(text) == {"one": "x=y", "two": "a\nb"}


def test_at_most_ten_annotations_then_a_notice():
    outcome = big_outcome(200)
    checks = failed_checks(digest(outcome))
    assert len(checks) > 10
    lines = github.annotation_lines(checks, Redactor())
    assert len(lines) == 11
    assert all(line.startswith("::error title=") for line in lines[:10])
    assert lines[10].startswith("::notice") and f"{len(checks) - 10} more failed checks" in lines[10]


def test_annotations_are_redacted_before_escaping():
    outcome = sample_outcome()
    check = failed_checks(digest(outcome))[0]
    secret = check.error[:12]
    line = github.annotation_lines([check], Redactor([secret]))[0]
    assert secret not in line and "***" in line


def test_failed_checks_output_fits_its_byte_budget():
    checks = failed_checks(digest(big_outcome(10_000)))
    text = github.failed_checks_json(checks, max_bytes=64 * 1024)
    assert len(text.encode()) <= 64 * 1024
    items = json.loads(text)
    assert 0 < len(items) < len(checks)
    assert items[0]["name"] == checks[0].name


def test_summary_is_rendered_under_1_mib_when_the_report_was_not_written(tmp_path):
    outcome = big_outcome(10_000)
    written = {"markdown": tmp_path / "absent.md"}
    text = github.summary(digest(outcome), written)
    assert 0 < len(text.encode("utf-8")) <= github.SUMMARY_MAX_BYTES


def test_publish_problems_are_one_line_on_stderr_never_an_exception(tmp_path, capsys):
    from runner.ci import CiPublisher
    from runner.job.events import Finished

    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(tmp_path / "missing-dir" / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path),  # a directory: cannot be appended to
    }
    console = Console(stream=sys.stdout, environ=environ)
    CiPublisher(console, Redactor()).notify(Finished(digest(sample_outcome()), {}))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    pattern = r"testsession: error: could not write (step outputs|the step summary)"
    assert all(re.match(pattern, e) for e in err)
