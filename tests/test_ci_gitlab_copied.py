"""examples/gitlab-ci.yml as a user copies it: the jobs it adds, and its `testsession` job's
`before_script` and `script` run in bash as a GitLab runner runs them, with nothing but what GitLab sets
and the user's own variables (`env -i`): the package installed by the template's own pip line (into a
fresh venv that stands in for the image's Python), TESTSESSION_CHECKS the only setting, against the
example shop started outside the job, BROWSER, MULTI_STEP and API checks among the checks.

The package is installed from a copy of this checkout (what the Dockerfile copies), standing in for the
archive URL the template names: the tests talk only to loopback. The Playwright of the browser checks'
runtime is where GitLab's cache restores it (.testsession-cache/), linked to this machine's; Node and
Chromium are the machine's (the template's apt-get runs only when they are missing, as root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_env import PASSWORD, Shop, needs_browser
from checks_servers import free_port
from test_ci_local_checks import merged

from runner.checks.protocols.browser.setup import DEFAULT_RUNTIME, RUNTIMES, cache_root

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "examples" / "gitlab-ci.yml"


def jobs() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    return data


def job(name: str) -> dict[str, Any]:
    """The job as GitLab sees it once `extends` is resolved (hashes merged key by key)."""
    found = dict(jobs()[name])
    return merged(job(found["extends"]), found) if "extends" in found else found


def test_including_the_template_adds_one_job_and_the_rest_is_opt_in() -> None:
    keywords = {"default", "include", "stages", "variables", "workflow"}
    visible = [name for name in jobs() if not name.startswith(".") and name not in keywords]
    assert visible == ["testsession"]
    for hidden in (".testsession-local", ".testsession-mr", ".testsession-shard", ".testsession-merge"):
        assert hidden in jobs(), hidden
        assert hidden in TEMPLATE.read_text(encoding="utf-8").split(".testsession:\n")[0]  # named on top
    testsession = job("testsession")
    variables = testsession["variables"]
    assert variables["TESTSESSION_SPEC"] == ""  # no spec forced on a checks file
    assert variables["TESTSESSION_CHECKS"] == ""
    assert variables["TESTSESSION_BROWSERS"] == "auto"
    # An installable requirement: a direct reference (name @ URL), not a bare name that is not on PyPI.
    assert " @ https://" in variables["TESTSESSION_PACKAGE"]
    assert testsession["image"].endswith("-bookworm")  # Debian: the apt-get of Node and Chromium works
    # Nothing in a job needs this repository's examples.
    assert "examples/" not in yaml.safe_dump(jobs())


# What the GitLab runner sets in every job (and HOME, PATH from the image); CI_API_V4_URL points at
# a closed port: the baseline's download fails at once and the run goes on without one.
def gitlab_env(workdir: Path, python_bin: Path) -> dict[str, str]:
    return {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir.parent / "home"),
        "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(workdir), "CI_JOB_NAME": "testsession",
        "CI_COMMIT_SHA": "89abcdef0123456789abcdef0123456789abcdef", "CI_COMMIT_BRANCH": "feature/cart",
        "CI_COMMIT_REF_NAME": "feature/cart", "CI_COMMIT_REF_SLUG": "feature-cart",
        "CI_COMMIT_TITLE": "Fix the cart", "CI_DEFAULT_BRANCH": "main", "CI_PIPELINE_ID": "77",
        "CI_JOB_ID": "78", "CI_PROJECT_ID": "42", "CI_PROJECT_URL": "https://gitlab.example.com/acme/shop",
        "CI_API_V4_URL": f"http://127.0.0.1:{free_port()}/api/v4", "CI_JOB_TOKEN": "job-token",
        "CI_PIPELINE_SOURCE": "push",
    }  # fmt: skip


CHECKS = """\
checks:
  - name: Products API
    checkType: API
    request:
      url: "{url}/api/products"
      headers: [{{key: Authorization, value: "Bearer s3cret-shop-token"}}]
      assertions: [{{source: STATUS_CODE, comparison: EQUALS, target: "200"}}]
  - name: Sign in
    checkType: BROWSER
    script: |
      const {{ test, expect }} = require('@playwright/test')
      test('shopper signs in', async ({{ page }}) => {{
        await page.goto('{url}/login')
        await page.getByLabel('Username').fill('shopper')
        await page.getByLabel('Password').fill('{password}')
        await page.getByRole('button', {{ name: 'Sign in' }}).click()
        await expect(page.getByRole('heading', {{ level: 1 }})).toHaveText('Welcome, shopper')
      }})
  - name: Cart
    checkType: MULTI_STEP
    script: |
      const {{ test, expect }} = require('@playwright/test')
      test('the cart', async ({{ request }}) => {{
        await expect(await request.get('{url}/api/cart')).toBeOK()
      }})
"""


@pytest.fixture(scope="module")
def job_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv: the image's Python, with nothing of ours installed."""
    root = tmp_path_factory.mktemp("image-python")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    return root / "venv" / "bin"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What pip installs: this checkout's package files (the Dockerfile's .dockerignore lets the same
    through), built and installed non-editable by the template's pip line."""
    source = tmp_path_factory.mktemp("package") / "testsession-runner"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "runner", source / "runner", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return f"testsession-runner @ file://{source}"


def run_template_job(
    workdir: Path, python_bin: Path, package: str, **user: str
) -> subprocess.CompletedProcess[str]:
    testsession = job("testsession")
    env = gitlab_env(workdir, python_bin)
    env.update({key: str(value) for key, value in testsession["variables"].items()})
    env["TESTSESSION_PACKAGE"] = package  # the archive URL's stand-in (no network but loopback)
    env.update(user)
    # GitLab's cache restored: the Playwright an earlier pipeline installed (this machine's).
    version = RUNTIMES[DEFAULT_RUNTIME]
    cached = workdir / ".testsession-cache" / "testsession"
    cached.mkdir(parents=True, exist_ok=True)
    if not (cached / f"playwright-{version}").exists():
        (cached / f"playwright-{version}").symlink_to(cache_root() / f"playwright-{version}")
    script = "\n".join([*testsession["before_script"], *testsession["script"]])
    return subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "-eo", "pipefail", "-c", script],
        cwd=workdir, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def read_dotenv(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


BROWSER = needs_browser()


# A pip install in a fresh venv (~50 s on a loaded 2-core machine): with the image tests
# (scripts/test-image.sh, and .ci/run where podman is not set up), as test_ci_docker's.
@pytest.mark.container
@BROWSER[0]
@BROWSER[1]
@pytest.mark.timeout(600)
def test_the_job_with_only_a_checks_file_runs_every_check_type(
    tmp_path: Path, job_python: Path, package: str
) -> None:
    """The broken shop (its cart store is down, its sign-in page changed): exit 1, the reports, the
    dotenv, each failure named. (The good build's pass, in the image: test_image.py.)"""
    workdir = tmp_path / "project"
    workdir.mkdir()
    (tmp_path / "home").mkdir()
    shop = Shop(broken=True)
    try:
        (workdir / "checks.yml").write_text(CHECKS.format(url=shop.url, password=PASSWORD), encoding="utf-8")
        proc = run_template_job(workdir, job_python, package, TESTSESSION_CHECKS="checks.yml")
    finally:
        shop.stop()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-5000:]
    assert "no such file" not in out and "Traceback" not in out
    assert "installing" not in out.split("testsession run")[0]  # Node and Chromium were there: no apt-get
    reports = workdir / "testsession-reports"
    assert {p.name for p in reports.iterdir()} >= {
        "junit.xml",
        "summary.md",
        "results.json",
        "testsession.env",
    }
    values = read_dotenv(reports / "testsession.env")
    assert values["TESTSESSION_EXIT_CODE"] == "1" and values["TESTSESSION_STATUS"] == "failed"
    assert (values["TESTSESSION_TOTAL"], values["TESTSESSION_PASSED"], values["TESTSESSION_FAILED"]) == (
        "3", "1", "2",
    )  # fmt: skip
    assert "GET http://127.0.0.1:" in out and "/api/cart received 503" in out  # MULTI_STEP
    assert 'expected "Welcome, shopper", received "Your account"' in out  # BROWSER
    data = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    verdicts = {r["checkType"]: r["verdict"] for s in data["sessions"] for r in s["results"]}
    assert verdicts == {"API": "passed", "BROWSER": "failed", "MULTI_STEP": "failed"}


def test_the_job_says_which_checks_need_a_browser(tmp_path: Path) -> None:
    """The before_script's decision (`python -m runner.cli.action --browsers`), as the template calls it."""
    (tmp_path / "api.yml").write_text(CHECKS.split("  - name: Sign in")[0].format(url="http://x"))
    (tmp_path / "browser.yml").write_text(CHECKS.format(url="http://x", password="p"))
    (tmp_path / "spec.yml").write_text("checks: browser.yml\n")
    (tmp_path / "bad.yml").write_text("checks: [{name: x, checkType: NOPE}]\n")

    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shim / "python").chmod(0o755)
    (step,) = [line for line in job("testsession")["before_script"] if "--browsers" in line]

    def decide(**variables: str) -> str:
        env = {"PATH": f"{shim}:{os.environ['PATH']}", **variables}  # Node and Chromium: no apt-get
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", step + '\necho "$browsers"'],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        return done.stdout + done.stderr

    assert "browsers=false" in decide(TESTSESSION_CHECKS="api.yml")
    assert f"browsers=true\nplaywright={RUNTIMES[DEFAULT_RUNTIME]}" in decide(
        TESTSESSION_CHECKS="browser.yml"
    )
    assert "browsers=true" in decide(TESTSESSION_SPEC="spec.yml")  # the spec's `checks:`
    assert "browsers=false" in decide(TESTSESSION_CHECKS="bad.yml")  # the run names its problems
    assert "browsers=false" in decide()  # the service's checks: nothing runs here
    assert "browsers=true" in decide(TESTSESSION_BROWSERS="true")
    assert "browsers=false" in decide(TESTSESSION_CHECKS="browser.yml", TESTSESSION_BROWSERS="false")
    assert "input browsers: expected auto, true or false" in decide(TESTSESSION_BROWSERS="yes please")


def test_the_template_is_valid_for_gitlab() -> None:
    if shutil.which("check-jsonschema") is None:
        pytest.skip("check-jsonschema is not installed (the test extra)")
    done = subprocess.run(
        ["check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", str(TEMPLATE)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_node_npm_and_chromium_are_installed_with_apt_get_only_when_missing(tmp_path: Path) -> None:
    """An image without them (python:3.12-slim-bookworm): the before_script apt-gets Debian's packages
    (apt-get recorded here, not run); an image without apt-get: one line saying what is missing."""
    (tmp_path / "browser.yml").write_text(CHECKS.format(url="http://x", password="p"))
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shim / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/apt.log\n')
    for tool in shim.iterdir():
        tool.chmod(0o755)
    (step,) = [line for line in job("testsession")["before_script"] if "--browsers" in line]
    bash = shutil.which("bash") or "/bin/bash"
    env = {"PATH": str(shim), "TESTSESSION_CHECKS": "browser.yml", "HOME": str(tmp_path)}  # no node, npm
    done = subprocess.run([bash, "-eo", "pipefail", "-c", step + '\necho "cache: $XDG_CACHE_HOME"'],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "testsession: browser checks: installing nodejs npm chromium (Debian's packages)" in done.stdout
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq", "install -y -qq --no-install-recommends nodejs npm chromium",
    ]  # fmt: skip
    assert f"cache: {tmp_path}/.testsession-cache" in done.stdout  # where the job's cache: keeps it
    (shim / "apt-get").unlink()
    done = subprocess.run([bash, "-eo", "pipefail", "-c", step], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "need nodejs npm chromium and this image has no apt-get" in done.stdout
