"""Secrets never leave the process: the API key, `secret: true` values and the GitHub action's secret-env
values, in GitHub and GitLab mode, with --verbose, in passing and failing runs, while the service sends
them back in check names, error messages and analyses. Credentials in the repository's URL never reach
the service or a report.

Each run is a fresh process (as in CI): `python -m runner.cli.action` for GitHub, `python -m runner run`
for GitLab, against an emulator whose world echoes every secret.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import Ran, child_env, run_here

REPO = Path(__file__).resolve().parent.parent
API_KEY = "tsk_LEAKCHECK_3f9a8b7c5d1e2f40"
ACCOUNT = "0c0ffee0-1eak-4c4e-8c4e-5ec2e75ec2e7"
# Secret values as people have them: plain, and with characters every report format escapes.
SPEC_SECRET = "specSecretPlain_7c4d1a9e"
SPEC_SECRET_ODD = "sp&c<S3>cr\"e't|`*_[x](y)#%{9f2e}"
ACTION_SECRET = "act10n+Secret/Zm9vYmFy==\\n"
GIT_PASSWORD = "G1tPassw0rdLEAK"
GITLAB_TOKEN = "glcitokenLEAK42"
SECRETS = (API_KEY, SPEC_SECRET, SPEC_SECRET_ODD, ACTION_SECRET, GIT_PASSWORD, GITLAB_TOKEN)
# What the service echoes back: the values the run knows as secret. (The git and GitLab credentials
# are not secrets of the run; they must simply never be sent, so the service cannot echo them.)
ECHO = " | ".join((API_KEY, SPEC_SECRET, SPEC_SECRET_ODD, ACTION_SECRET))

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is needed to build a repo")


def world() -> dict[str, Any]:
    """One account whose failing check carries every secret in its name and its error message."""
    return {
        "settings": {"analysisDelaySeconds": 1},
        "accounts": [
            {
                "id": ACCOUNT,
                "keys": [{"key": API_KEY, "role": "read-write"}],
                "checks": [
                    {"id": "chk-ok", "name": "Healthy API", "tags": ["ok"], "behaviour": "pass"},
                    {
                        "id": "chk-leak",
                        "name": f"Leaky check {SPEC_SECRET} {SPEC_SECRET_ODD}",
                        "checkType": "BROWSER",
                        "tags": ["bad"],
                        "behaviour": "fail",
                        "errorMessage": f"Error: login with {ECHO} failed (HTTP 401)",
                    },
                    {
                        "id": "chk-when",
                        "name": "Echoes the variable",
                        "tags": ["bad"],
                        "behaviour": "pass",
                        # The value arrives from the runner; the check then fails quoting it.
                        "when": [
                            {
                                "env": {"DB_PASSWORD": SPEC_SECRET},
                                "behaviour": "error",
                                "errorMessage": f"TypeError: password {SPEC_SECRET} rejected by {API_KEY}",
                            }
                        ],
                    },
                ],
            }
        ],
    }


SPEC = """\
name: secrets ${SESSION_SUFFIX:-run}
runLocation: eu-west-1
environmentVariables:
  - {key: DB_PASSWORD, value: "${DB_PASSWORD_FROM_CI}", secret: true}
  - {key: ODD_PASSWORD, value: "${ODD_PASSWORD_FROM_CI}", secret: true}
  - {key: PUBLIC_URL, value: https://preview.example.com}
rca: {timeoutSeconds: 30}
reports:
  junit: out/junit.xml
  markdown: out/summary.md
  json: out/results.json
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True, timeout=30)


def workspace(tmp_path: Path) -> Path:
    """A repository whose origin carries credentials, with the spec in it."""
    work = tmp_path / "ws"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "testsession.yml").write_text(SPEC, encoding="utf-8")
    git(work, "add", "testsession.yml")
    git(work, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "spec")
    git(work, "remote", "add", "origin", f"https://deploy:{GIT_PASSWORD}@git.example.com/acme/shop.git")
    return work


def base_env(tmp_path: Path) -> dict[str, str]:
    env = child_env()
    config = tmp_path / "gitconfig"
    config.write_text("")
    env.update(
        {
            "GIT_CONFIG_GLOBAL": str(config),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(tmp_path),
            "CI": "true",
            "DB_PASSWORD_FROM_CI": SPEC_SECRET,
            "ODD_PASSWORD_FROM_CI": SPEC_SECRET_ODD,
        }
    )
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=90
    )


def _json_strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in (*_json_strings(k), *_json_strings(v))]
    if isinstance(data, list):
        return [s for item in data for s in _json_strings(item)]
    return []


def views(text: str) -> list[str]:
    """The text as its readers see it: an escaped secret (XML, HTML, JSON, markdown, workflow commands)
    is still a leak."""
    found = [text, html.unescape(text), re.sub(r"\\([^\w\s])", r"\1", text), urllib.parse.unquote(text)]
    found.append(urllib.parse.unquote_plus(text))
    found.append(html.unescape(re.sub(r"\\([^\w\s])", r"\1", text)))
    for chunk in [text, *(line.partition("=")[2] for line in text.splitlines())]:
        with contextlib.suppress(ValueError):
            found += _json_strings(json.loads(chunk))
    if text.lstrip().startswith("<?xml"):
        root = ET.fromstring(text.encode("utf-8"))
        for element in root.iter():
            found += [element.text or "", element.tail or "", *element.attrib.values()]
    return found


def leaks(name: str, text: str, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    seen = views(text)
    return [f"{name}: {secret!r}" for secret in secrets if any(secret in view for view in seen)]


def check_stdout_github(stdout: str) -> list[str]:
    """Only ::add-mask:: lines may hold a secret. The action's own secrets (key, secret-env) are masked
    before any other line; the spec's, known once the spec is read, before anything but the echo of
    the command line (which cannot hold them)."""
    found = []
    lines = stdout.splitlines()
    masks = [i for i, line in enumerate(lines) if line.startswith("::add-mask::")]
    first_other = next((i for i in range(len(lines)) if i not in masks), len(lines))
    for secret in (API_KEY, ACTION_SECRET):
        assert f"::add-mask::{secret}" in lines[:first_other], f"{secret!r} not masked first"
    assert lines[first_other].startswith("testsession run")
    second_other = next((i for i in range(first_other + 1, len(lines)) if i not in masks), len(lines))
    for secret in (SPEC_SECRET, SPEC_SECRET_ODD):
        assert f"::add-mask::{secret}" in lines[:second_other], f"{secret!r} not masked before use"
    for index, line in enumerate(lines):
        if line.startswith("::add-mask::"):
            continue
        found += leaks(f"stdout line {index + 1}", line)
    return found


def files_under(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.parts and p.name != "testsession.yml"
    }


def stored_metadata(emu: Any) -> list[str]:
    """The sessions as the service stored them (GET /v1/test-sessions/{id}), as text."""
    headers = {"Authorization": f"Bearer {API_KEY}", "X-Service-Account": ACCOUNT}
    texts = []
    for session_id in list(emu.backend.snapshot().sessions):
        response = requests.get(f"{emu.url}/v1/test-sessions/{session_id}", headers=headers, timeout=5)
        assert response.status_code == 200
        metadata = response.json()["metadata"] or {}
        texts.append(json.dumps(metadata))
        assert metadata.get("repoUrl") in ("https://git.example.com/acme/shop.git",
                                           "https://gitlab.example.com/acme/shop")  # fmt: skip
    return texts


@pytest.mark.parametrize(("tag", "expected"), [("ok", 0), ("bad", 1)], ids=["passing", "failing"])
def test_github_mode_leaks_nothing(tmp_path: Path, world_factory: Any, tag: str, expected: int) -> None:
    emu = world_factory(world())
    work = workspace(tmp_path)
    github = tmp_path / "github"
    github.mkdir()
    env = base_env(tmp_path)
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(github / "output"),
            "GITHUB_STEP_SUMMARY": str(github / "summary"),
            "GITHUB_ENV": str(github / "env"),
            "GITHUB_PATH": str(github / "path"),
            "GITHUB_STATE": str(github / "state"),
            "GITHUB_WORKSPACE": str(work),
            "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
            "GITHUB_REF": "refs/heads/main",
            "GITHUB_EVENT_NAME": "push",
            "INPUT_API_KEY": API_KEY,
            "INPUT_ACCOUNT_ID": ACCOUNT,
            "INPUT_BASE_URL": emu.url,
            "INPUT_TAGS": tag,
            "INPUT_VERBOSE": "true",
            "INPUT_SECRET_ENV": f"ACTION_SECRET={ACTION_SECRET}",
        }
    )
    proc = run(["-m", "runner.cli.action"], env, work)
    assert proc.returncode == expected, proc.stdout + proc.stderr
    found = check_stdout_github(proc.stdout)
    found += leaks("stderr", proc.stderr)
    outputs = files_under(github)
    assert {"output", "summary"} <= set(outputs)
    for name, text in {**outputs, **files_under(work)}.items():
        found += leaks(name, text)
    for text in stored_metadata(emu):
        found += leaks("session metadata", text)
    assert found == []
    # The run did its work: the masked texts are there, not dropped.
    results = json.loads((work / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["exitCode"] == expected
    if expected:
        assert "***" in outputs["output"] and "***" in (work / "out" / "junit.xml").read_text()
        names = {r["name"] for s in results["sessions"] for r in s["results"]}
        assert "Leaky check *** ***" in names


@pytest.mark.parametrize(("tag", "expected"), [("ok", 0), ("bad", 1)], ids=["passing", "failing"])
def test_gitlab_mode_leaks_nothing(tmp_path: Path, world_factory: Any, tag: str, expected: int) -> None:
    emu = world_factory(world())
    work = workspace(tmp_path)
    env = base_env(tmp_path)
    env.update(
        {
            "GITLAB_CI": "true",
            "TESTSESSION_DOTENV": str(work / "out" / "testsession.env"),
            "TESTSESSION_API_KEY": API_KEY,
            "TESTSESSION_ACCOUNT_ID": ACCOUNT,
            "TESTSESSION_BASE_URL": emu.url,
            "CI_COMMIT_SHA": "0123456789abcdef0123456789abcdef01234567",
            "CI_COMMIT_REF_NAME": "main",
            "CI_PROJECT_URL": f"https://gitlab-ci-token:{GITLAB_TOKEN}@gitlab.example.com/acme/shop",
            "CI_REPOSITORY_URL": f"https://gitlab-ci-token:{GITLAB_TOKEN}@gitlab.example.com/acme/shop.git",
        }
    )
    proc = run(["-m", "runner", "run", "--tag", tag, "--verbose"], env, work)
    assert proc.returncode == expected, proc.stdout + proc.stderr
    # Without the action there is no secret-env: ACTION_SECRET is ordinary text of the service here.
    secrets = tuple(s for s in SECRETS if s != ACTION_SECRET)
    found = leaks("stdout", proc.stdout, secrets) + leaks("stderr", proc.stderr, secrets)
    written = files_under(work)
    assert "out/testsession.env" in written
    for name, text in written.items():
        found += leaks(name, text, secrets)
    for text in stored_metadata(emu):
        found += leaks("session metadata", text, secrets)
    assert found == []
    assert f"TESTSESSION_EXIT_CODE={expected}" in written["out/testsession.env"]


def test_usage_error_with_secret_env_leaks_nothing(tmp_path: Path) -> None:
    """A run that ends before it starts (no such spec) still masks first and prints no secret."""
    env = base_env(tmp_path)
    output = tmp_path / "output"
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(output),
            "INPUT_API_KEY": API_KEY,
            "INPUT_SPEC": "missing.yml",
            "INPUT_SECRET_ENV": f"ACTION_SECRET={ACTION_SECRET}\nBROKEN LINE {ACTION_SECRET}",
        }
    )
    proc = run(["-m", "runner.cli.action"], env, tmp_path)
    assert proc.returncode == 2
    assert leaks("stdout", proc.stdout.replace(f"::add-mask::{ACTION_SECRET}", "")) == []
    assert leaks("stderr", proc.stderr) == []
    assert leaks("output", output.read_text()) == []


# --- issue 16: encoded echoes, tokens in a URL's query, secrets too short to mask ------------------


def test_percent_encoded_echo_and_query_token_leak_nothing(tmp_path: Path, world_factory: Any) -> None:
    """The service echoes the secrets URL-encoded (a proxy quoting the request line); the origin URL
    carries a GitLab private_token in its query: neither reaches any output or the service."""
    echoed = world()
    spelled = [
        urllib.parse.quote(SPEC_SECRET_ODD, safe=""),
        urllib.parse.quote(SPEC_SECRET_ODD),
        urllib.parse.quote_plus(SPEC_SECRET_ODD),
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), urllib.parse.quote(SPEC_SECRET_ODD, safe="")),
    ]
    assert all(s != SPEC_SECRET_ODD for s in spelled)
    leaky = echoed["accounts"][0]["checks"][1]
    # A secret used as a host name comes back lower-cased (libcurl, IDNA): still the secret.
    host = f"{SPEC_SECRET.lower()}.invalid"
    spelled.append(SPEC_SECRET.lower())
    leaky["errorMessage"] = f"Error: GET /login?p={' ?p='.join(spelled[:-1])} failed (HTTP 401) via {host}"
    emu = world_factory(echoed)
    work = workspace(tmp_path)
    git(
        work,
        "remote",
        "set-url",
        "origin",
        f"https://git.example.com/acme/shop.git?private_token={GIT_PASSWORD}",
    )
    env = base_env(tmp_path)
    env.update(
        {
            "GITLAB_CI": "true",
            "TESTSESSION_API_KEY": API_KEY,
            "TESTSESSION_ACCOUNT_ID": ACCOUNT,
            "TESTSESSION_BASE_URL": emu.url,
        }
    )
    proc = run(["-m", "runner", "run", "--tag", "bad", "--verbose"], env, work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    secrets = (API_KEY, SPEC_SECRET, SPEC_SECRET_ODD, GIT_PASSWORD)
    found = leaks("stdout", proc.stdout, secrets) + leaks("stderr", proc.stderr, secrets)
    for name, text in files_under(work).items():
        found += leaks(name, text, secrets)
        found += [f"{name}: {s!r}" for s in spelled if s in text]
    for text in stored_metadata(emu):  # asserts repoUrl is the bare https://git.example.com/acme/shop.git
        found += leaks("session metadata", text, secrets)
    assert found == []
    assert "GET /login?p=*** ?p=***" in (work / "out" / "results.json").read_text()
    assert "via ***.invalid" in (work / "out" / "results.json").read_text()


@pytest.mark.parametrize(
    ("query", "stored"),
    [
        (f"?ref={SPEC_SECRET}&page=2", "https://git.example.com/acme/shop.git?page=2"),
        (f"?q=v-{urllib.parse.quote(SPEC_SECRET_ODD)}", None),
    ],
    ids=["ordinary-name", "inside-a-value"],
)
def test_a_secret_under_an_ordinary_query_parameter_never_reaches_the_service(
    tmp_path: Path, world_factory: Any, query: str, stored: str | None
) -> None:
    """The origin URL carries a spec secret under a name that says nothing (`ref`), or inside a
    value: the service's copy of metadata.repoUrl drops the parameter, or the URL when it cannot."""
    emu = world_factory(world())
    work = workspace(tmp_path)
    git(work, "remote", "set-url", "origin", f"https://git.example.com/acme/shop.git{query}")
    env = base_env(tmp_path)
    env.update(TESTSESSION_API_KEY=API_KEY, TESTSESSION_ACCOUNT_ID=ACCOUNT, TESTSESSION_BASE_URL=emu.url)
    proc = run(["-m", "runner", "run", "--tag", "ok", "--verbose"], env, work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (session,) = json.loads((work / "out" / "results.json").read_text(encoding="utf-8"))["sessions"]
    session_id = session["testSessionId"]
    headers = {"Authorization": f"Bearer {API_KEY}", "X-Service-Account": ACCOUNT}
    answer = requests.get(f"{emu.url}/v1/test-sessions/{session_id}", headers=headers, timeout=5)
    metadata = answer.json()["metadata"]
    assert metadata.get("repoUrl") == stored
    assert metadata["commitId"]  # the rest of the commit metadata is still sent
    assert leaks("session metadata", json.dumps(metadata), (SPEC_SECRET, SPEC_SECRET_ODD)) == []
    if stored is None:
        assert "metadata: repoUrl: left out, it holds a secret value of this run" in proc.stderr


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("spec", "secret variable DB_PASSWORD"),
        ("flag", "--secret-env PIN"),
        ("action", "--secret-env PIN"),
        ("api-key", "TESTSESSION_API_KEY"),
        ("action-api-key", "TESTSESSION_API_KEY"),
    ],
)
def test_secret_too_short_to_mask_is_refused(tmp_path: Path, source: str, named: str) -> None:
    """A 1-2 character secret cannot be masked without shredding ordinary text: exit 2, one line
    naming the variable, nothing sent (no base URL is reachable here). In this process: the refusal
    comes before anything is written or sent (the runs above test the processes' output)."""
    from runner.cli.action import main as action

    def run(argv: list[str], env: dict[str, str], cwd: Path) -> Ran:
        if argv == ["-m", "runner.cli.action"]:
            return run_here([], env, cwd, entry=action)
        assert argv[:2] == ["-m", "runner"]
        return run_here(argv[2:], env, cwd)

    work = workspace(tmp_path)
    env = base_env(tmp_path)
    env.update(
        {
            "TESTSESSION_API_KEY": API_KEY,
            "TESTSESSION_ACCOUNT_ID": ACCOUNT,
            "TESTSESSION_BASE_URL": "http://127.0.0.1:9",
        }
    )
    if source == "spec":
        env["DB_PASSWORD_FROM_CI"] = "q7"
        procs = [
            run(["-m", "runner", "validate", "testsession.yml"], env, work),
            run(["-m", "runner", "run"], env, work),
        ]
    elif source == "flag":
        env["PIN"] = "7"
        procs = [run(["-m", "runner", "run", "--secret-env", "PIN"], env, work)]
    elif source == "action":
        env.update({"GITHUB_ACTIONS": "true", "INPUT_API_KEY": API_KEY, "INPUT_SECRET_ENV": "PIN=7"})
        procs = [run(["-m", "runner.cli.action"], env, work)]
    elif source == "api-key":
        env["TESTSESSION_API_KEY"] = "k7"
        session_id = "5b0e6c3a-7d7e-4b3c-9a53-2f0f6f1f0a11"  # well formed: the key is what is refused
        argvs = (["run"], ["sessions", "get", session_id])
        procs = [run(["-m", "runner", *argv], env, work) for argv in argvs]
    else:
        env.update({"GITHUB_ACTIONS": "true", "INPUT_API_KEY": "k"})
        procs = [run(["-m", "runner.cli.action"], env, work)]
    for proc in procs:
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert named in proc.stderr and "at least 3 characters" in proc.stderr
        assert "Traceback" not in proc.stderr
        if source.endswith("api-key"):  # one line, and the key is not in it
            (line,) = proc.stderr.splitlines()
            assert line.startswith("testsession: error: TESTSESSION_API_KEY: a secret must be at least 3")
            assert " k7" not in line and "'k'" not in line


def test_query_credentials_are_stripped_from_urls() -> None:
    from runner.core.redact import strip_url_credentials

    assert (
        strip_url_credentials("https://u:p@gitlab.com/g/p.git?private_token=glpat-x&ref=main#access_token=y")
        == "https://gitlab.com/g/p.git?ref=main"
    )
    for name in ("token", "access_token", "key", "api_key", "password", "sig", "X-Amz-Signature"):
        assert strip_url_credentials(f"https://h/r.git?{name}=v1&page=2") == "https://h/r.git?page=2"
    assert strip_url_credentials("https://h/r.git?t=s3cretvalue", ["s3cretvalue"]) == "https://h/r.git"
    assert strip_url_credentials("https://h/r.git?monkey=1") == "https://h/r.git?monkey=1"
    assert strip_url_credentials("git@github.com:o/r.git") == "git@github.com:o/r.git"


def test_one_search_of_the_outcome_json_finds_every_secret_or_defers_to_field_by_field() -> None:
    """The run's last masking looks for the secrets in the outcome's JSON once: absent there means
    absent from every string; a secret whose JSON form differs (a quote, a backslash, non-ASCII
    written as \\u) never takes that shortcut."""
    from pydantic import BaseModel

    from runner.core.redact import Redactor, redact_data

    class Row(BaseModel):
        name: str
        notes: list[str]

    plain = Redactor(["tok-3f9a-Secret"])
    clean = Row(name="api check", notes=["received 200"])
    leaky = Row(name="api check", notes=["echo: TOK-3F9A-SECRET (a proxy upper-cased it)"])
    assert plain.absent_from_json(clean.model_dump_json())
    assert not plain.absent_from_json(leaky.model_dump_json())
    assert "TOK-3F9A" not in json.dumps(redact_data(leaky.model_dump(), plain))
    for escaped in ('pa"ss-word', "pa\\ss-word", "pässword-1"):
        odd = Redactor([escaped])
        assert not odd.absent_from_json(clean.model_dump_json())  # masked string by string instead
    assert Redactor().absent_from_json(leaky.model_dump_json())  # no secret: nothing to mask
