"""The sticky pull-request comment / merge-request note, against a local fake of GitHub's and GitLab's API.

Runs go CLI -> emulator (real HTTP) for the checks and CLI -> fake platform (real HTTP) for the comment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import default_world_dict
from outcome_factory import outcome as make_outcome
from outcome_factory import result, sample_outcome, session
from platform_fake import GITHUB_BOT, GITHUB_TOKEN, GITLAB_TOKEN, FakePlatform, Fault, Request

from runner.ci import comment as comment_module
from runner.cli.action import build_argv
from runner.cli.main import main
from runner.emulator import Emulator
from runner.reports import render_json

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

PR = "shop/web#12"
MR = "42!3"
RUN_URL = "https://github.test/shop/web/actions/runs/777"
MARKER = "<!-- testsession-runner:comment key=testsession.yml@feature/checkout -->"


@pytest.fixture
def fake() -> Iterator[FakePlatform]:
    with FakePlatform() as server:
        yield server


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between retries, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr(comment_module, "SLEEP", waited.append)
    return waited


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sleeps: list[float]) -> Path:
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "GITLAB", "CI_", "TESTSESSION_", "RUNNER_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def github_env(monkeypatch: pytest.MonkeyPatch, fake: FakePlatform, tmp_path: Path, **event: Any) -> None:
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(event or {"pull_request": {"number": 12}}))
    values = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "GITHUB_API_URL": fake.url,
        "GITHUB_SERVER_URL": "https://github.test",
        "GITHUB_REPOSITORY": "shop/web",
        "GITHUB_RUN_ID": "777",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_HEAD_REF": "feature/checkout",
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def gitlab_env(monkeypatch: pytest.MonkeyPatch, fake: FakePlatform, token_variable: str) -> None:
    values = {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": fake.url + "/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_PROJECT_URL": "https://gitlab.test/shop/web",
        "CI_MERGE_REQUEST_IID": "3",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature/checkout",
        "CI_JOB_URL": "https://gitlab.test/shop/web/-/jobs/555",
        token_variable: GITLAB_TOKEN,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def use_emulator(monkeypatch: pytest.MonkeyPatch, emu: Emulator) -> None:
    monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
    monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emu.account_id)
    monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)


def run(*args: str) -> int:
    return main(["run", "--location", "eu-west-1", "--tag", "checkout", "--no-rca", *args])


def ours(fake: FakePlatform, thread: str) -> list[dict[str, Any]]:
    return [c for c in fake.platform.thread(thread) if c["body"].startswith("<!-- testsession-runner:")]


def comment_calls(fake: FakePlatform) -> list[Request]:
    """The requests on comments and notes (not the ones that ask who the token is)."""
    return [r for r in fake.platform.requests if "/comments" in r.path or "/notes" in r.path]


def saved_results(tmp_path: Path, exit_code: int = 1) -> str:
    outcome = sample_outcome()
    outcome.exitCode = exit_code
    path = tmp_path / "testsession-reports" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_json(outcome))
    return str(path)


def assert_no_token(tmp_path: Path, captured: str, fake: FakePlatform, *tokens: str) -> None:
    """Only an ::add-mask:: line (GitHub's way to hide a value, printed first) may hold a token."""
    lines = captured.splitlines()
    for token in tokens:
        if f"::add-mask::{token}" in lines:
            assert lines[0].startswith("::add-mask::"), "masked after something else was printed"
    texts = {"console": "\n".join(line for line in lines if not line.startswith("::add-mask::"))}
    texts.update({str(p): p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()})
    texts.update({f"comment {c['id']}": c["body"] for cs in fake.platform.comments.values() for c in cs})
    for token in tokens:
        leaks = [where for where, text in texts.items() if token in text]
        assert not leaks, f"token found in {leaks}"


def test_two_runs_on_a_pull_request_leave_one_comment_with_the_second_summary(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    world_factory: Callable[..., Emulator],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The failing check echoes the token: the reports and the comment must still never show it.
    world = default_world_dict()
    checkout = next(c for c in world["accounts"][0]["checks"] if c["name"] == "Checkout flow")
    checkout["errorMessage"] = f"401 from https://api.example.test with token {GITHUB_TOKEN}"
    use_emulator(monkeypatch, world_factory(world))
    github_env(monkeypatch, fake, clean_env)
    # 150 comments by people first, so that ours is on the second page; one quotes a marker in its text.
    for index in range(150):
        fake.platform.add(PR, f"review comment {index}")
    quoting = fake.platform.add(PR, "how does `<!-- testsession-runner:comment key=x -->` work?")

    assert run("--comment") == 1
    first = capsys.readouterr()
    [created] = ours(fake, PR)
    first_body = created["body"]
    assert "❌ Failed" in first_body and "Checkout flow" in first_body
    assert "with token ***" in first_body
    link = f"https://github.test/shop/web/pull/12#issuecomment-{created['id']}"
    assert f"comment: created the comment on pull request #12: {link}" in first.out

    assert run("--comment", "--env", "CHECKOUT_FIXED=true") == 0
    second = capsys.readouterr()
    [updated] = ours(fake, PR)
    assert updated["id"] == created["id"]
    assert "✅ Passed" in updated["body"] and "❌ Failed" not in updated["body"]
    assert updated["body"].startswith(f"{MARKER}\n")
    assert RUN_URL in updated["body"]
    assert "comment: updated the comment on pull request #12" in second.out
    assert quoting["body"].startswith("how does")  # untouched
    assert len(fake.platform.thread(PR)) == 152

    methods = [(r.method, r.path) for r in comment_calls(fake) if r.method != "GET"]
    assert methods == [
        ("POST", "/repos/shop/web/issues/12/comments"),
        ("PATCH", f"/repos/shop/web/issues/comments/{created['id']}"),
    ]
    assert all(r.headers["Authorization"] == f"Bearer {GITHUB_TOKEN}" for r in fake.platform.requests)
    assert max(int(r.query["page"][0]) for r in comment_calls(fake) if r.method == "GET") == 2
    # Who the token is: GET /user refuses the job's installation token, the GraphQL viewer answers.
    assert [(r.method, r.path) for r in fake.platform.requests[:2]] == [
        ("GET", "/user"),
        ("POST", "/graphql"),
    ]
    assert_no_token(clean_env, first.out + first.err + second.out + second.err, fake, GITHUB_TOKEN)


def test_two_runs_on_a_merge_request_leave_one_note_and_the_comment_command_updates_it(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    emulator: Emulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_emulator(monkeypatch, emulator)
    gitlab_env(monkeypatch, fake, "MY_GITLAB_TOKEN")
    fake.platform.add(MR, MARKER, system=True)  # a system note is never ours
    fake.platform.add(MR, "LGTM")

    assert run("--comment", "--gitlab-token-env", "MY_GITLAB_TOKEN") == 1
    assert run("--comment", "--gitlab-token-env", "MY_GITLAB_TOKEN", "--env", "CHECKOUT_FIXED=true") == 0
    out = capsys.readouterr()
    notes = [n for n in ours(fake, MR) if not n["system"]]
    assert len(notes) == 1 and "✅ Passed" in notes[0]["body"] and "❌ Failed" not in notes[0]["body"]
    assert "https://gitlab.test/shop/web/-/jobs/555" in notes[0]["body"]
    link = f"https://gitlab.test/shop/web/-/merge_requests/3#note_{notes[0]['id']}"
    assert f"comment: updated the note on merge request !3: {link}" in out.out

    # `testsession comment` on the saved results.json finds the same note (same spec and branch).
    assert main(["comment", "--gitlab-token-env", "MY_GITLAB_TOKEN"]) == 0
    assert len([n for n in ours(fake, MR) if not n["system"]]) == 1
    writes = [(r.method, r.path) for r in fake.platform.requests if r.method != "GET"]
    assert [r.path for r in fake.platform.requests if r.method == "GET"].count("/api/v4/user") == 3
    note = f"/api/v4/projects/42/merge_requests/3/notes/{notes[0]['id']}"
    assert writes == [("POST", "/api/v4/projects/42/merge_requests/3/notes"), ("PUT", note), ("PUT", note)]
    assert all(r.headers["PRIVATE-TOKEN"] == GITLAB_TOKEN for r in fake.platform.requests)
    assert_no_token(clean_env, out.out + out.err + capsys.readouterr().err, fake, GITLAB_TOKEN)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, "answered 403 Forbidden: simulated: the token may not write comments: give the job "
              "`permissions: pull-requests: write`"),
        (404, "answered 404 Not Found: simulated: the repository or pull request is not visible"),
        (422, "answered 422 Unprocessable Entity: simulated: GitHub refused the comment body"),
    ],
)  # fmt: skip
def test_a_refusal_is_one_warning_line_and_never_the_gate(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    status: int,
    expected: str,
) -> None:
    github_env(monkeypatch, fake, clean_env)
    fake.platform.faults.append(Fault("POST", status, path="/comments"))
    assert main(["comment", saved_results(clean_env)]) == 0
    out = capsys.readouterr()
    [line] = out.err.splitlines()
    prefix = "testsession: warning: comment: not posted: GitHub POST /repos/shop/web/issues/12/comments"
    assert line.startswith(prefix)
    assert expected in line
    assert out.out == ""
    assert [r.method for r in comment_calls(fake)] == ["GET", "POST"]  # a refused create is not resent
    assert_no_token(clean_env, out.out + out.err, fake, GITHUB_TOKEN)


def test_a_run_keeps_its_own_exit_code_when_the_comment_is_refused(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    emulator: Emulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_emulator(monkeypatch, emulator)
    github_env(monkeypatch, fake, clean_env)
    refused = {"message": "Resource not accessible by integration"}
    fake.platform.faults.append(Fault("GET", 403, body=refused, path="/comments"))
    assert run("--comment") == 1
    fake.platform.faults.append(Fault("GET", 404, path="/comments"))
    assert run("--comment", "--env", "CHECKOUT_FIXED=true") == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning: comment" in line]
    assert len(warnings) == 2 and "Resource not accessible by integration" in warnings[0]
    assert fake.platform.thread(PR) == []


def test_rate_limited_answers_are_retried_after_retry_after(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    sleeps: list[float],
    capsys: pytest.CaptureFixture[str],
) -> None:
    github_env(monkeypatch, fake, clean_env)
    results = saved_results(clean_env)
    fake.platform.faults += [
        Fault("GET", 429, {"Retry-After": "7"}, path="/comments"),
        Fault("GET", 502, path="/comments"),
        Fault("POST", 429, {"Retry-After": "12"}, path="/comments"),  # a create the platform did not do
    ]
    assert main(["comment", results]) == 0
    out = capsys.readouterr().out
    assert "comment: created" in out
    assert sleeps[0] == 7.0 and 0.0 <= sleeps[1] <= 2.0 and sleeps[2] == 12.0  # Retry-After; backoff
    assert [r.method for r in comment_calls(fake)] == ["GET", "GET", "GET", "POST", "POST"]
    assert len(ours(fake, PR)) == 1
    path = "/repos/shop/web/issues/12/comments"
    assert f"comment: GitHub answered 429 (rate limit) to GET {path}; retry 1 in 7.0 s" in out.splitlines()

    # Still limited after the last retry: a warning, nothing posted twice.
    sleeps.clear()
    fake.platform.faults += [Fault("PATCH", 429, {"Retry-After": "1"}) for _ in range(4)]
    assert main(["comment", results]) == 0
    err = capsys.readouterr().err
    assert "answered 429 Too Many Requests (gave up after 4 attempts)" in err and len(err.splitlines()) == 1
    assert "lifts in" not in err  # it did lift each time; the platform limited again
    assert sleeps == [1.0, 1.0, 1.0]

    # A wait longer than the comment's time limit is not waited for at all.
    sleeps.clear()
    fake.platform.faults.append(Fault("GET", 429, {"Retry-After": "999"}, path="/comments"))
    assert main(["comment", results]) == 0
    err = capsys.readouterr().err
    assert "GitHub's rate limit for this token lifts in 17 min, later than the comment waits" in err
    assert sleeps == []


def test_a_create_that_may_have_happened_is_not_sent_twice(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    fake.platform.faults.append(Fault("POST", 500, path="/comments"))
    assert main(["comment", saved_results(clean_env)]) == 0
    assert "answered 500" in capsys.readouterr().err
    assert [r.method for r in comment_calls(fake)] == ["GET", "POST"]


def test_a_comment_deleted_since_it_was_listed_is_posted_again(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    results = saved_results(clean_env)
    assert main(["comment", results]) == 0
    fake.platform.faults.append(Fault("PATCH", 404))
    assert main(["comment", results]) == 0
    assert "comment: created" in capsys.readouterr().out
    assert [r.method for r in comment_calls(fake)] == ["GET", "POST", "GET", "PATCH", "POST"]


def test_each_spec_and_an_explicit_key_get_a_comment_of_their_own(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    github_env(monkeypatch, fake, clean_env)
    results = saved_results(clean_env)
    for args in (["--spec", "./a.yml"], ["--spec", "b.yml"], ["--spec", "a.yml"], ["--key", "nightly"]):
        assert main(["comment", results, *args]) == 0
    keys = sorted(c["body"].splitlines()[0] for c in ours(fake, PR))
    assert keys == [
        "<!-- testsession-runner:comment key=a.yml@feature/checkout -->",
        "<!-- testsession-runner:comment key=b.yml@feature/checkout -->",
        "<!-- testsession-runner:comment key=nightly -->",
    ]
    assert main(["comment", results, "--key", "a b"]) == 2


def test_issue_comment_event_on_a_pull_request(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    github_env(monkeypatch, fake, clean_env, issue={"number": 31, "pull_request": {"url": "x"}})
    assert main(["comment", saved_results(clean_env)]) == 0
    assert len(ours(fake, "shop/web#31")) == 1


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({}, "not running in GitHub Actions or GitLab CI"),
        ({"github": {"head_commit": {"id": "abc"}}, "GITHUB_EVENT_NAME": "push"},
         "this run is not on a pull request (event push)"),
        ({"github": {"issue": {"number": 5}}, "GITHUB_EVENT_NAME": "issue_comment"},
         "this run is not on a pull request (event issue_comment)"),
        ({"github": {"pull_request": {"number": 12}}, "GITHUB_TOKEN": ""}, "GITHUB_TOKEN is not set"),
        ({"gitlab": True, "CI_MERGE_REQUEST_IID": ""}, "not a merge-request pipeline"),
        ({"gitlab": True, "TESTSESSION_GITLAB_TOKEN": ""}, "TESTSESSION_GITLAB_TOKEN is not set"),
    ],
)  # fmt: skip
def test_outside_a_pull_request_or_without_a_token_one_line_says_why(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: dict[str, Any],
    reason: str,
) -> None:
    setup = dict(setup)
    if "github" in setup:
        github_env(monkeypatch, fake, clean_env, **setup.pop("github"))
    if setup.pop("gitlab", False):
        gitlab_env(monkeypatch, fake, "TESTSESSION_GITLAB_TOKEN")
    for name, value in setup.items():
        monkeypatch.setenv(name, value)
    assert main(["comment", saved_results(clean_env, exit_code=1)]) == 0
    out = capsys.readouterr()
    assert out.out == ""
    [line] = out.err.splitlines()
    assert line.startswith("testsession: warning: comment: not posted: ") and reason in line
    assert fake.platform.requests == []


def test_a_long_summary_is_cut_to_the_limit_with_a_link_to_the_full_report(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    results = [
        result("failed", f"Check {i} ✓", "eu-west-1", error="é" * 6000 + f" failure {i}") for i in range(300)
    ]
    outcome = make_outcome([session(results, location="eu-west-1")])
    path = clean_env / "results.json"
    path.write_text(render_json(outcome))
    assert main(["comment", str(path)]) == 0
    assert "cut to 65,536 characters" in capsys.readouterr().out
    [posted] = ours(fake, PR)
    body = posted["body"]
    assert 60_000 < len(body) <= 65_536  # the fake refuses more with 422, as GitHub does
    assert "Cut to fit GitHub's limit of 65,536 characters:** the full summary" in body
    assert f"[job's reports]({RUN_URL})" in body
    assert body.rstrip().endswith("</sub>")


def test_spec_comment_setting_schema_and_action_input(capsys: pytest.CaptureFixture[str]) -> None:
    from runner.spec import parse_spec

    spec = parse_spec("runLocation: x\ncomment: true\n", "s.yml", {})
    assert spec.comment.enabled and spec.comment.gitlabTokenVariable == "TESTSESSION_GITLAB_TOKEN"
    spec = parse_spec("runLocation: x\ncomment: {enabled: true, gitlabTokenVariable: GL}\n", "s.yml", {})
    assert spec.comment.gitlabTokenVariable == "GL"
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "comment" in schema["properties"] and "CommentSettings" in schema["$defs"]
    assert "--comment" in build_argv({"INPUT_COMMENT": "true"})
    assert "--comment" not in build_argv({"INPUT_COMMENT": "false"})


def test_the_whole_comment_has_a_time_limit(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    monkeypatch.setattr(comment_module, "MAX_SECONDS", -1.0)
    assert main(["comment", saved_results(clean_env)]) == 0
    assert "gave up after -1 s" in capsys.readouterr().err
    assert fake.platform.requests == []


def test_only_the_tokens_own_comment_is_updated_whoever_copies_its_marker(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    results = saved_results(clean_env)
    # Someone pastes our marker first (by hand, or to have the bot overwrite their comment).
    planted = fake.platform.add(PR, f"{MARKER}\nplease overwrite me")
    assert main(["comment", results]) == 0
    assert main(["comment", results]) == 0
    assert planted["body"] == f"{MARKER}\nplease overwrite me"
    [mine] = [c for c in ours(fake, PR) if c["user"] == GITHUB_BOT]
    assert "comment: updated the comment" in capsys.readouterr().out
    writes = [(r.method, r.path) for r in comment_calls(fake) if r.method != "GET"]
    assert writes == [
        ("POST", "/repos/shop/web/issues/12/comments"),
        ("PATCH", f"/repos/shop/web/issues/comments/{mine['id']}"),
    ]


def test_a_personal_token_is_told_apart_by_get_user_alone(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    github_env(monkeypatch, fake, clean_env)
    fake.platform.installation_token = False
    assert main(["comment", saved_results(clean_env)]) == 0
    assert [(r.method, r.path) for r in fake.platform.requests][:2] == [
        ("GET", "/user"),
        ("GET", "/repos/shop/web/issues/12/comments"),
    ]
    assert len(ours(fake, PR)) == 1


def test_a_note_with_the_marker_by_another_user_is_not_ours_on_gitlab(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitlab_env(monkeypatch, fake, "TESTSESSION_GITLAB_TOKEN")
    planted = fake.platform.add(MR, f"{MARKER}\nmine, not the bot's")
    assert main(["comment", saved_results(clean_env)]) == 0
    assert planted["body"].endswith("mine, not the bot's")
    assert len(ours(fake, MR)) == 2
    assert ("GET", "/api/v4/user") in [(r.method, r.path) for r in fake.platform.requests]


def test_a_token_whose_identity_cannot_be_read_posts_nothing(
    clean_env: Path, fake: FakePlatform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    github_env(monkeypatch, fake, clean_env)
    fake.platform.faults.append(Fault("POST", 200, body={"errors": [{"message": "nope"}]}, path="/graphql"))
    assert main(["comment", saved_results(clean_env)]) == 0
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith("not posted: GitHub did not say which user the token is (GET /user)")
    assert comment_calls(fake) == []


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_githubs_primary_rate_limit_403_is_waited_out_like_a_429(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    sleeps: list[float],
    capsys: pytest.CaptureFixture[str],
    method: str,
) -> None:
    import time

    github_env(monkeypatch, fake, clean_env)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 20)}
    body = {"message": "API rate limit exceeded for installation ID 7."}
    fake.platform.faults.append(Fault(method, 403, headers, body, path="/comments"))
    assert main(["comment", saved_results(clean_env)]) == 0
    out = capsys.readouterr()
    assert "comment: created the comment" in out.out and out.err == ""
    assert len(sleeps) == 1 and 17.0 <= sleeps[0] <= 20.0  # until the reset, not a blind backoff
    assert "comment: GitHub answered 403 (rate limit) to " in out.out
    # The limited request is sent again (a create too: a rate-limited request was not acted on).
    assert [r.method for r in comment_calls(fake)] == (["GET", "GET", "POST"] if method == "GET" else
                                                       ["GET", "POST", "POST"])  # fmt: skip
    assert len(ours(fake, PR)) == 1


def test_a_rate_limit_that_lifts_after_the_deadline_gives_up_at_once_saying_when(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    sleeps: list[float],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import time

    github_env(monkeypatch, fake, clean_env)
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)}
    fault = Fault("GET", 403, headers, {"message": "API rate limit exceeded"}, path="/comments")
    fake.platform.faults.append(fault)
    assert main(["comment", saved_results(clean_env)]) == 0
    [line] = capsys.readouterr().err.splitlines()
    assert "GET /repos/shop/web/issues/12/comments answered 403 Forbidden: API rate limit exceeded: " in line
    assert "GitHub's rate limit for this token lifts in 60 min" in line
    assert "permissions" not in line  # not the hint for a refused token
    assert sleeps == []


def test_a_platform_that_cannot_be_reached_names_the_host_and_what_to_check(
    clean_env: Path,
    fake: FakePlatform,
    monkeypatch: pytest.MonkeyPatch,
    sleeps: list[float],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    github_env(monkeypatch, fake, clean_env)
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{port}")
    assert main(["comment", saved_results(clean_env)]) == 0
    out = capsys.readouterr()
    [line] = out.err.splitlines()
    assert line == (
        f"testsession: warning: comment: not posted: GitHub GET /user: could not connect to 127.0.0.1:{port} "
        "(nothing was sent) (gave up after 4 attempts); check that "
        f"http://127.0.0.1:{port} is GitHub's API for this job (GITHUB_API_URL) and that this runner can "
        "reach it (network, proxy settings HTTPS_PROXY/NO_PROXY, firewall)"
    )
    assert len(sleeps) == 3  # the client's policy: a read is tried again, with backoff
    assert out.out.count("retry") == 3


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"}, 30.0),  # GitHub primary
        (429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1030"}, 30.0),
        (403, {"Retry-After": "45", "x-ratelimit-remaining": "12"}, 45.0),  # GitHub secondary
        (403, {"x-ratelimit-remaining": "0"}, 60.0),  # no reset given: "at least one minute"
        (429, {"RateLimit-Remaining": "0", "RateLimit-Reset": "1010"}, 10.0),  # GitLab
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "900"}, 0.0),  # already passed
        (403, {"x-ratelimit-remaining": "4999"}, None),  # a refusal, not a limit
        (403, {}, None),
        (404, {"x-ratelimit-remaining": "0", "Retry-After": "5"}, None),
        (429, {}, None),  # rate limited without a wait: the policy's backoff
    ],
)  # fmt: skip
def test_which_answers_are_a_rate_limit_and_how_long_they_ask_to_wait(
    status: int, headers: dict[str, str], wait: float | None
) -> None:
    import requests.structures

    case_insensitive = requests.structures.CaseInsensitiveDict(headers)
    assert comment_module.rate_limit_wait(status, case_insensitive, now=1000.0) == wait
