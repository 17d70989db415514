"""One CI detection, and everything that depends on it agreeing: the commit metadata, the console's
sections and masks, what a finished run publishes, and where the comment goes.

Each variable a user's runner may set is tried as "true" in its spellings, and as "false", "0",
"" and unset: the last four are never that platform, in any part of the tool.
"""

from __future__ import annotations

import io
import os
import pty
from pathlib import Path

import pytest
from outcome_factory import sample_outcome

from runner.ci import CiPublisher
from runner.ci.comment import CommentError, post_comment
from runner.ci.console import Console
from runner.ci.platform import GitHubActions, GitLabCi, Local, platform_for
from runner.core import ciprovider
from runner.core.redact import Redactor
from runner.job.digest import digest
from runner.job.events import Finished
from runner.metadata import resolve_metadata

SHA = "0123456789abcdef0123456789abcdef01234567"
TRUE = ["true", "TRUE", "True", "1", " true "]
NOT_TRUE = ["false", "FALSE", "0", "", None]  # None: unset

# Every variable of each platform the rest of the tool would read, had it been detected.
GITLAB_VARIABLES = {
    "CI_COMMIT_SHA": SHA,
    "CI_COMMIT_REF_NAME": "main",
    "CI_MERGE_REQUEST_IID": "3",
    "CI_API_V4_URL": "http://127.0.0.1:9/api/v4",
    "CI_PROJECT_ID": "42",
    "TESTSESSION_GITLAB_TOKEN": "glpat-never-used-0123456789",
}
GITHUB_VARIABLES = {"GITHUB_SHA": SHA, "GITHUB_REF_NAME": "main", "GITHUB_REPOSITORY": "acme/shop"}


def environ(flag: str, value: str | None, tmp_path: Path) -> dict[str, str]:
    env = {**GITLAB_VARIABLES, **GITHUB_VARIABLES}
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    env["TESTSESSION_DOTENV"] = str(tmp_path / "testsession.env")
    if value is not None:
        env[flag] = value
    return env


def what_the_tool_does(env: dict[str, str], tmp_path: Path) -> dict[str, object]:
    """What a user would see of the platform: metadata source, log syntax, files, comment."""
    stream = io.StringIO()
    console = Console(stream=stream, environ=env)
    console.mask(["s3cret-value"])
    with console.section("testsession_failure_1", "FAILED: Checkout flow"):
        console.line("  error: boom")
    CiPublisher(console, Redactor()).notify(Finished(digest(sample_outcome()), {}))
    metadata = resolve_metadata(None, env, tmp_path, lambda _line: None)
    try:
        post_comment(sample_outcome(), console.platform, key="k", redact=Redactor(), sleep=lambda _s: None)
        comment = "posted"
    except CommentError as exc:
        comment = str(exc)
    return {
        "platform": console.platform.name,
        "log": stream.getvalue().splitlines()[:2],
        "github_output": Path(env["GITHUB_OUTPUT"]).exists(),
        "dotenv": Path(env["TESTSESSION_DOTENV"]).exists(),
        "metadata_commit": metadata.commitId,
        "comment": comment,
    }


@pytest.mark.parametrize("value", TRUE)
def test_a_true_flag_is_that_platform(value: str, tmp_path: Path) -> None:
    assert ciprovider.detect({"GITHUB_ACTIONS": value}) == ciprovider.GITHUB
    assert ciprovider.detect({"GITLAB_CI": value}) == ciprovider.GITLAB
    assert type(platform_for({"GITHUB_ACTIONS": value})) is GitHubActions
    assert type(platform_for({"GITLAB_CI": value})) is GitLabCi

    gitlab = what_the_tool_does(environ("GITLAB_CI", value, tmp_path / "gl"), tmp_path)
    assert gitlab["platform"] == "GitLab"
    assert str(gitlab["log"][0]).startswith("\x1b[0Ksection_start:")
    assert gitlab["dotenv"] and not gitlab["github_output"]
    assert gitlab["metadata_commit"] == SHA
    # The GitLab destination was chosen (and its API, on a closed port, not reached).
    assert "GitLab GET /api/v4/user: could not connect" in str(gitlab["comment"])


@pytest.mark.parametrize("value", NOT_TRUE)
@pytest.mark.parametrize("flag", ["GITLAB_CI", "GITHUB_ACTIONS"])
def test_false_empty_or_unset_is_not_that_platform_anywhere(
    flag: str, value: str | None, tmp_path: Path
) -> None:
    env = environ(flag, value, tmp_path)
    assert ciprovider.detect(env) is None
    assert type(platform_for(env)) is Local
    seen = what_the_tool_does(env, tmp_path)
    assert seen["platform"] == "local"
    # Plain log lines: no ::add-mask::, no ::group::, no section escape codes.
    assert seen["log"] == ["FAILED: Checkout flow", "  error: boom"]
    assert not seen["github_output"] and not seen["dotenv"]
    # Commit metadata does not come from the CI_* / GITHUB_* variables (the git of tmp_path: none).
    assert seen["metadata_commit"] is None
    assert seen["comment"] == "not posted: not running in GitHub Actions or GitLab CI"


def test_github_masks_and_groups_in_its_own_syntax(tmp_path: Path) -> None:
    seen = what_the_tool_does(environ("GITHUB_ACTIONS", "true", tmp_path), tmp_path)
    assert seen["log"] == ["::add-mask::s3cret-value", "::group::FAILED: Checkout flow"]
    assert seen["github_output"] and not seen["dotenv"]
    assert seen["metadata_commit"] == SHA


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({"CIRCLECI": "true"}, ciprovider.CIRCLECI),
        ({"CIRCLECI": "false"}, None),
        ({"BUILDKITE": "true"}, ciprovider.BUILDKITE),
        ({"BUILDKITE": ""}, None),
        ({"TF_BUILD": "True"}, ciprovider.AZURE),
        ({"TF_BUILD": "False"}, None),
        ({"BITBUCKET_BUILD_NUMBER": "17"}, ciprovider.BITBUCKET),
        ({"JENKINS_URL": "https://ci.example.test/"}, ciprovider.JENKINS),
        ({"JENKINS_URL": " "}, None),
        ({"GITLAB_CI": "false", "CIRCLECI": "true"}, ciprovider.CIRCLECI),
        ({}, None),
    ],
)
def test_other_providers_are_local_for_the_front_ends(env: dict[str, str], provider: str | None) -> None:
    assert ciprovider.detect(env) == provider
    assert type(platform_for(env)) is Local
    assert ciprovider.in_ci(env) is (provider is not None)


@pytest.mark.parametrize(
    ("ci", "live"), [("true", False), ("1", False), ("false", True), ("", True), (None, True)]
)
def test_the_live_line_is_for_terminals_outside_ci(ci: str | None, live: bool) -> None:
    main, child = pty.openpty()
    try:
        with os.fdopen(child, "w", closefd=False) as stream:
            env = {"TERM": "xterm"} if ci is None else {"TERM": "xterm", "CI": ci}
            assert Console(stream=stream, environ=env).interactive is live
    finally:
        os.close(child)
        os.close(main)
