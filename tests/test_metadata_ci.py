"""Commit metadata from each CI provider's variables, and the spec's own values over them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.metadata import resolve_metadata
from runner.models import GithubMetadata, SessionMetadata

SHA = "0123456789abcdef0123456789abcdef01234567"
PR_SHA = "fedcba9876543210fedcba9876543210fedcba98"

PROVIDERS = {
    "github-push": (
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_SHA": SHA,
            "GITHUB_REF": "refs/heads/feature/login",
            "GITHUB_REF_NAME": "feature/login",
            "GITHUB_REF_TYPE": "branch",
            "GITHUB_ACTOR": "octocat",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "acme/shop",
        },
        {
            "commitId": SHA,
            "branchName": "feature/login",
            "commitOwner": "octocat",
            "repoUrl": "https://github.com/acme/shop",
        },
    ),
    "gitlab": (
        {
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": SHA,
            "CI_COMMIT_REF_NAME": "main",
            "CI_COMMIT_AUTHOR": "Jane Doe <jane@example.com>",
            "CI_COMMIT_TITLE": "Fix the checkout",
            "CI_COMMIT_MESSAGE": "Fix the checkout\n\nLong body",
            "CI_PROJECT_URL": "https://gitlab.example.com/acme/shop",
        },
        {
            "commitId": SHA,
            "branchName": "main",
            "commitOwner": "Jane Doe",
            "commitMessage": "Fix the checkout",
            "repoUrl": "https://gitlab.example.com/acme/shop",
        },
    ),
    "gitlab-merge-request": (
        {
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": SHA,
            "CI_COMMIT_REF_NAME": "refs/merge-requests/7/head",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature/cart",
            "CI_COMMIT_MESSAGE": "Cart: totals\n\nbody",
        },
        {"commitId": SHA, "branchName": "feature/cart", "commitMessage": "Cart: totals"},
    ),
    "circleci": (
        {
            "CIRCLECI": "true",
            "CIRCLE_SHA1": SHA,
            "CIRCLE_BRANCH": "main",
            "CIRCLE_USERNAME": "jdoe",
            "CIRCLE_REPOSITORY_URL": "git@github.com:acme/shop.git",
        },
        {
            "commitId": SHA,
            "branchName": "main",
            "commitOwner": "jdoe",
            "repoUrl": "git@github.com:acme/shop.git",  # scp-like: the user is not a secret
        },
    ),
    "jenkins": (
        {
            "JENKINS_URL": "https://jenkins.example.com/",
            "GIT_COMMIT": SHA,
            "GIT_BRANCH": "origin/release/1.2",
            "GIT_AUTHOR_NAME": "Jane Doe",
            "GIT_URL": "https://builder:t0ken@git.example.com/acme/shop.git",
        },
        {
            "commitId": SHA,
            "branchName": "release/1.2",
            "commitOwner": "Jane Doe",
            "repoUrl": "https://git.example.com/acme/shop.git",
        },
    ),
    "jenkins-change": (
        {"JENKINS_HOME": "/var/jenkins", "GIT_COMMIT": SHA, "CHANGE_AUTHOR": "jdoe", "GIT_BRANCH": "PR-3"},
        {"commitId": SHA, "commitOwner": "jdoe", "branchName": "PR-3"},
    ),
    "buildkite": (
        {
            "BUILDKITE": "true",
            "BUILDKITE_COMMIT": SHA,
            "BUILDKITE_BRANCH": "main",
            "BUILDKITE_BUILD_AUTHOR": "Jane Doe",
            "BUILDKITE_MESSAGE": "Ship it\nmore",
            "BUILDKITE_REPO": "git@github.com:acme/shop.git",
        },
        {
            "commitId": SHA,
            "branchName": "main",
            "commitOwner": "Jane Doe",
            "commitMessage": "Ship it",
            "repoUrl": "git@github.com:acme/shop.git",
        },
    ),
    "azure": (
        {
            "TF_BUILD": "True",
            "BUILD_SOURCEVERSION": SHA,
            "BUILD_SOURCEBRANCH": "refs/heads/feature/x",
            "BUILD_SOURCEBRANCHNAME": "x",
            "BUILD_REQUESTEDFOR": "Jane Doe",
            "BUILD_SOURCEVERSIONMESSAGE": "Azure change",
            "BUILD_REPOSITORY_URI": "https://dev.azure.com/acme/_git/shop",
        },
        {
            "commitId": SHA,
            "branchName": "feature/x",
            "commitOwner": "Jane Doe",
            "commitMessage": "Azure change",
            "repoUrl": "https://dev.azure.com/acme/_git/shop",
        },
    ),
    "azure-pull-request": (
        {
            "TF_BUILD": "True",
            "BUILD_SOURCEVERSION": SHA,
            "SYSTEM_PULLREQUEST_SOURCECOMMITID": PR_SHA,
            "BUILD_SOURCEBRANCH": "refs/pull/12/merge",
            "SYSTEM_PULLREQUEST_SOURCEBRANCH": "refs/heads/feature/y",
        },
        {"commitId": PR_SHA, "branchName": "feature/y"},
    ),
    "bitbucket": (
        {
            "BITBUCKET_BUILD_NUMBER": "17",
            "BITBUCKET_COMMIT": SHA,
            "BITBUCKET_BRANCH": "main",
            "BITBUCKET_GIT_HTTP_ORIGIN": "http://bitbucket.org/acme/shop",
        },
        {"commitId": SHA, "branchName": "main", "repoUrl": "http://bitbucket.org/acme/shop"},
    ),
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_ci_provider(provider: str, tmp_path: Path) -> None:
    environ, expected = PROVIDERS[provider]
    logs: list[str] = []
    metadata = resolve_metadata(None, environ, tmp_path, logs.append)
    got = metadata.model_dump(exclude_none=True, exclude={"github"})
    assert {k: got.get(k) for k in expected} == expected, logs
    assert metadata.environment is None  # never derived from CI


def test_spec_values_win_over_ci_and_environment_is_kept(tmp_path: Path) -> None:
    environ, _ = PROVIDERS["gitlab"]
    own = SessionMetadata(environment="preview", branchName="from-spec", commitMessage="")
    metadata = resolve_metadata(own, environ, tmp_path, lambda _: None)
    assert metadata.environment == "preview"
    assert metadata.branchName == "from-spec"
    assert metadata.commitMessage == "Fix the checkout"  # empty in the spec: filled
    assert metadata.commitId == SHA


def test_github_pull_request_uses_the_head_sha_of_the_event(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"head": {"sha": PR_SHA, "ref": "feature/pay"}}}))
    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SHA": SHA,  # the merge commit
        "GITHUB_REF": "refs/pull/9/merge",
        "GITHUB_REF_NAME": "9/merge",
        "GITHUB_HEAD_REF": "feature/pay",
        "GITHUB_BASE_REF": "main",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_ACTOR": "octocat",
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "123",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_WORKFLOW": "deploy",
        "GITHUB_JOB": "checks",
    }
    metadata = resolve_metadata(None, environ, tmp_path, lambda _: None)
    assert (metadata.commitId, metadata.branchName) == (PR_SHA, "feature/pay")
    assert metadata.github == GithubMetadata(
        reporting=True,
        repository="acme/shop",
        sha=PR_SHA,
        runId="123",
        runAttempt="2",
        workflow="deploy",
        job="checks",
        eventName="pull_request",
        ref="refs/pull/9/merge",
        headRef="feature/pay",
        baseRef="main",
        serverUrl="https://github.com",
    )


def test_github_push_message_from_the_event_and_spec_github_wins(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"head_commit": {"message": "Add totals\n\nDetails"}}))
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": SHA, "GITHUB_EVENT_PATH": str(event)}
    environ["GITHUB_JOB"] = "j"
    own = SessionMetadata(github=GithubMetadata(reporting=False))
    metadata = resolve_metadata(own, environ, tmp_path, lambda _: None)
    assert metadata.commitMessage == "Add totals"
    assert metadata.github is not None
    assert (metadata.github.reporting, metadata.github.job) == (False, "j")


def test_unreadable_github_event_file_is_logged_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "event.json"
    bad.write_text("{not json")
    logs: list[str] = []
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": SHA, "GITHUB_EVENT_PATH": str(bad)}
    metadata = resolve_metadata(None, environ, tmp_path, logs.append)
    assert metadata.commitId == SHA
    assert any(line.startswith("metadata: commitId: GitHub event file") for line in logs), logs


def test_github_tag_push_is_not_a_branch(tmp_path: Path) -> None:
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_REF": "refs/tags/v1.0", "GITHUB_REF_NAME": "v1.0",
               "GITHUB_REF_TYPE": "tag", "GITHUB_SHA": SHA}  # fmt: skip
    assert resolve_metadata(None, environ, tmp_path, lambda _: None).branchName is None


def test_no_github_block_outside_github_actions(tmp_path: Path) -> None:
    environ, _ = PROVIDERS["gitlab"]
    assert resolve_metadata(None, environ, tmp_path, lambda _: None).github is None


def test_credentials_are_stripped_and_long_values_cut(tmp_path: Path) -> None:
    environ = {
        "BUILDKITE": "true",
        "BUILDKITE_COMMIT": SHA,
        "BUILDKITE_BRANCH": "b" * 1000,
        "BUILDKITE_BUILD_AUTHOR": "Jane\nDoe",
        "BUILDKITE_MESSAGE": "m" * 2000 + "\nsecond line",
        "BUILDKITE_REPO": "https://x-access-token:ghs_s3cr3t@github.com/acme/shop.git",
    }
    own = SessionMetadata(repoUrl="https://user:pa55word@git.example.com/a.git")
    metadata = resolve_metadata(own, environ, tmp_path, lambda _: None)
    assert metadata.repoUrl == "https://git.example.com/a.git"  # the spec's own URL is cleaned too
    assert metadata.commitMessage == "m" * 511 + "…"
    assert metadata.branchName == "b" * 255
    assert metadata.commitOwner == "Jane Doe"
    environ.pop("BUILDKITE_BRANCH")
    ci_url = resolve_metadata(None, environ, tmp_path, lambda _: None).repoUrl
    assert ci_url == "https://github.com/acme/shop.git"


def test_a_commit_that_is_not_a_sha_is_left_to_git(tmp_path: Path) -> None:
    logs: list[str] = []
    environ = {"BUILDKITE": "true", "BUILDKITE_COMMIT": "HEAD"}
    metadata = resolve_metadata(None, environ, tmp_path, logs.append)
    assert metadata.commitId is None
    assert "metadata: commitId: BUILDKITE_COMMIT is not a commit sha; using git" in logs
