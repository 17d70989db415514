"""The container image, built with podman from the unchanged Dockerfile and run as users run it.

The container tests are marked `container` and deselected by default (pyproject's addopts):
`scripts/test-image.sh` sets podman up (../shared/container/podman-here.sh) and runs
`pytest -m container tests/test_image.py`. Without podman, or without the base image in podman's store
(no registry here), they skip with the reason. The ownership cases chown directories to other uids,
so they need root (as CI runs).

Every container runs with --network=none (the emulator is in-process, on the container's loopback) and
the main job also as the Kubernetes example runs it: uid 1001, read-only root filesystem, a tmpfs /tmp,
no capabilities, the spec mounted read-only under /etc/testsession, the reports under /workspace.
The browser checks' case reaches examples/local-app/shop.py on the host (--network host): API, BROWSER,
MULTI_STEP and PLAYWRIGHT checks run in the image with its Node, Chromium and Playwright, nothing
fetched, and no process (nor zombie) is left beside the init once the run is over.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_env import PASSWORD, Shop, missing
from conftest import REPO_ROOT, TEST_SPEED, default_world_dict
from gitrepo import git

from runner import __version__
from runner.checks.protocols.browser.setup import find_playwright

BASE = "docker.io/library/python:3.12-slim-bookworm"
IMAGE = "localhost/testsession:test"
BUILD_LIMIT = 600.0  # measured: 47 s cold, 31 s with a changed source, on a loaded 2-core machine
RUN_LIMIT = 120.0
STOP_TIMEOUT = 20  # podman stop -t: SIGTERM, then SIGKILL after this many seconds
IMAGE_USER = 1001
OTHER_UID = 4242  # a directory owner that is neither root nor the image's user
# The k8s example's pod: examples/k8s-presync-job.yaml
WORLD = "/etc/testsession/world.yml"  # beside the spec: the demo world at test speed
K8S_LIKE = ["--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def podman(*args: str, timeout: float = RUN_LIMIT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def image() -> str:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/test-image.sh installs and configures it)")
    if podman("image", "exists", BASE).returncode != 0:
        pytest.skip(
            f"the base image {BASE} is not in podman's store and there is no registry to pull it from "
            "(scripts/test-image.sh builds a stand-in)"
        )
    build = podman("build", "--pull=never", "-t", IMAGE, str(REPO_ROOT), timeout=BUILD_LIMIT)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return IMAGE


@pytest.fixture
def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the ownership cases chown directories to other uids: run as root (as CI does)")


@pytest.fixture
def etc(tmp_path: Path) -> Path:
    """What the k8s example mounts at /etc/testsession: the spec, plus a fast world for the emulator."""
    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copy(REPO_ROOT / "examples" / "testsession.yml", etc / "testsession.yml")
    world = default_world_dict()
    world["settings"]["speed"] = TEST_SPEED
    (etc / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    for path in (etc, *etc.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return etc


@pytest.fixture
def names() -> Iterator[list[str]]:
    """Container names a test starts; each removed afterwards (only those)."""
    started: list[str] = []
    yield started
    for name in started:
        podman("rm", "--force", "--time", "0", name)


def directory(path: Path, uid: int, gid: int | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, uid if gid is None else gid)
    path.chmod(0o755)
    return path


def run_job(
    image: str, etc: Path, *options: str, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The main job on the emulator: `run /etc/testsession/testsession.yml --emulator` (exit 1: the demo
    world has a failing check)."""
    return podman(
        "run", "--rm", "--network=none", "-v", f"{etc}:/etc/testsession:ro", *options, image,
        "run", "/etc/testsession/testsession.yml", "--emulator", "--world", WORLD, *args,
    )  # fmt: skip


def reports_in(folder: Path, owner: int) -> dict[str, Any]:
    """The three reports, parsed and owned by `owner`; results.json's content."""
    names = {p.name for p in folder.iterdir()}
    assert names == {"junit.xml", "summary.md", "results.json"}, names
    for path in folder.iterdir():
        assert path.stat().st_uid == owner, f"{path} belongs to uid {path.stat().st_uid}"
    ET.parse(folder / "junit.xml")
    assert (folder / "summary.md").stat().st_size > 0
    data: dict[str, Any] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.container
@pytest.mark.timeout(900)
def test_version(image: str) -> None:
    done = podman("run", "--rm", "--network=none", image, "--version")
    assert done.returncode == 0, done.stderr
    assert __version__ in done.stdout


@pytest.mark.container
@pytest.mark.timeout(900)
def test_runs_as_the_numeric_non_root_user(image: str) -> None:
    inspect = podman("image", "inspect", "--format", "{{.Config.User}} {{.Config.WorkingDir}}", image)
    assert inspect.stdout.split() == [f"{IMAGE_USER}:{IMAGE_USER}", "/workspace"]
    done = podman("run", "--rm", "--network=none", "--entrypoint", "id", image)
    assert done.stdout.startswith(f"uid={IMAGE_USER}(testsession) gid={IMAGE_USER}(testsession)"), done.stdout


@pytest.mark.container
@pytest.mark.timeout(900)
def test_main_job_in_a_workspace_owned_by_the_image_user(
    image: str, etc: Path, tmp_path: Path, needs_root: None
) -> None:
    workspace = directory(tmp_path / "workspace", IMAGE_USER)
    done = run_job(image, etc, *K8S_LIKE, "-v", f"{workspace}:/workspace")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verdict: FAILED" in done.stdout
    data = reports_in(workspace / "testsession-reports", IMAGE_USER)
    assert data["exitCode"] == 1
    c = data["counts"]
    assert (c["passed"], c["failed"], c["degraded"], c["flaky"], c["error"]) == (1, 1, 1, 1, 1)


@pytest.mark.container
@pytest.mark.timeout(900)
def test_main_job_as_the_caller_with_the_user_flag(image: str, etc: Path, tmp_path: Path) -> None:
    # As root, `--user "$(id -u):$(id -g)"` would be 0:0 and prove nothing: a stand-in caller that
    # has no account in the image, as a host user has none.
    uid, gid = (OTHER_UID, OTHER_UID) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    workspace = directory(tmp_path / "workspace", uid, gid)
    done = run_job(image, etc, "--user", f"{uid}:{gid}", "-v", f"{workspace}:/workspace")
    assert done.returncode == 1, done.stdout + done.stderr
    assert reports_in(workspace / "testsession-reports", uid)["exitCode"] == 1


@pytest.mark.container
@pytest.mark.timeout(900)
def test_unwritable_workspace_fails_at_once_with_the_fix(
    image: str, etc: Path, tmp_path: Path, needs_root: None
) -> None:
    workspace = directory(tmp_path / "workspace", OTHER_UID)  # as GitLab's docker executor leaves it
    started = time.monotonic()
    done = run_job(image, etc, "-v", f"{workspace}:/workspace")
    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "testsession: error: reports.json: cannot write testsession-reports/results.json "
        f"as uid {IMAGE_USER} (Permission denied: testsession-reports); "
    )
    assert line.endswith('--user "$(id -u):$(id -g)", or choose another path')
    assert done.stdout == ""  # nothing triggered, no emulator started
    assert os.listdir(workspace) == []
    assert elapsed < 5, f"{elapsed:.1f} s (container start included)"


@pytest.mark.container
@pytest.mark.timeout(900)
def test_commit_metadata_from_a_repository_owned_by_another_user(
    image: str, etc: Path, tmp_path: Path, needs_root: None
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Jane Doe\n\temail = jane@example.com\n", encoding="utf-8")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ("init", "-q", "-b", "feature/image"),
        ("commit", "-q", "--allow-empty", "-m", "Ship the image"),
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=30)
    commit = git(repo, "rev-parse", "HEAD")
    for path in [repo, *repo.rglob("*")]:
        os.lchown(path, OTHER_UID, OTHER_UID)
    reports = directory(tmp_path / "reports", IMAGE_USER)
    done = run_job(
        image, etc, *K8S_LIKE, "-v", f"{repo}:/workspace:ro", "-v", f"{reports}:/reports",
        args=("--junit", "/reports/junit.xml", "--markdown", "/reports/summary.md",
              "--json", "/reports/results.json"),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    data = reports_in(reports, IMAGE_USER)
    assert data["commit"]["commitId"] == commit
    assert data["commit"]["branchName"] == "feature/image"
    assert data["commit"]["commitMessage"].startswith("Ship the image")
    assert "dubious ownership" not in done.stderr


@pytest.mark.container
@pytest.mark.timeout(900)
def test_podman_stop_cancels_the_session_and_leaves_partial_reports(
    image: str, etc: Path, tmp_path: Path, names: list[str], needs_root: None
) -> None:
    workspace = directory(tmp_path / "workspace", IMAGE_USER)
    name = f"testsession-test-{uuid.uuid4().hex[:12]}"
    names.append(name)
    started = podman(
        "run", "-d", "--name", name, "--network=none", *K8S_LIKE, "-v", f"{etc}:/etc/testsession:ro",
        "-v", f"{workspace}:/workspace", image,
        "run", "--location", "eu-west-1", "--tag", "hang", "--emulator", "--world", WORLD,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    # The check tagged `hang` never finishes: wait for the session's link line, then stop.
    deadline = time.monotonic() + RUN_LIMIT
    while "Test session " not in (logs := podman("logs", name)).stdout:
        assert time.monotonic() < deadline, logs.stdout + logs.stderr
        time.sleep(0.5)
    sent = time.monotonic()
    stop = podman("stop", "--time", str(STOP_TIMEOUT), name, timeout=STOP_TIMEOUT + 30)
    elapsed = time.monotonic() - sent
    assert stop.returncode == 0, stop.stderr
    code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    logs = podman("logs", name)
    assert code == "143", logs.stdout + logs.stderr  # 137 would be the SIGKILL after the timeout
    assert elapsed < STOP_TIMEOUT
    data = reports_in(workspace / "testsession-reports", IMAGE_USER)
    assert data["partial"] is True and data["verdict"] == "interrupted"
    assert data["message"] == "interrupted by SIGTERM"
    assert data["sessions"][0]["status"] == "CANCELLED"
    assert "Traceback" not in logs.stderr


# Every process of the container, as `ps` would list it (the image has no procps): "pid state name".
PS = """import os
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    name, rest = stat.split("(", 1)[1].rsplit(")", 1)
    print("process", pid, rest.split()[0], name)
"""


def all_check_types(folder: Path, shop_url: str) -> Path:
    """A checks file of the four kinds that need more than Python: an API check beside a BROWSER, a
    MULTI_STEP and a PLAYWRIGHT suite (tests/playwright_suite, its node_modules copied in: a user's
    project is installed before the run)."""
    e2e = folder / "e2e"
    shutil.copytree(REPO_ROOT / "tests" / "playwright_suite", e2e)
    playwright = find_playwright(Path("/nonexistent"), None, progress=lambda _: None,
                                 deadline=time.monotonic() + 300, stop=None)  # fmt: skip
    shutil.copytree(playwright.root / "node_modules", e2e / "node_modules", symlinks=True)
    login = """const { test, expect } = require('@playwright/test')
test('shopper signs in', async ({ page }) => {
  await page.goto(`${process.env.SHOP_URL}/login`)
  await page.getByLabel('Username').fill('shopper')
  await page.getByLabel('Password').fill(process.env.SHOP_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Welcome, shopper')
})
"""
    cart = """const { test, expect } = require('@playwright/test')
test('products, then the cart', async ({ request }) => {
  await expect(await request.get(`${process.env.SHOP_URL}/api/products`,
    { headers: { Authorization: 'Bearer s3cret-shop-token' } })).toBeOK()
  await expect(await request.get(`${process.env.SHOP_URL}/api/cart`)).toBeOK()
})
"""
    checks = [
        {"name": "Products API", "checkType": "API",
         "request": {"url": "{{SHOP_URL}}/api/products",
                     "headers": [{"key": "Authorization", "value": "Bearer s3cret-shop-token"}],
                     "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]}},
        {"name": "Sign in", "checkType": "BROWSER", "script": login},
        {"name": "Products and cart", "checkType": "MULTI_STEP", "script": cart},
        {"name": "Shop suite", "checkType": "PLAYWRIGHT", "workingDir": "e2e",
         "testCommand": "npx playwright test --project=chromium"},
    ]  # fmt: skip
    variables = [{"key": "SHOP_URL", "value": shop_url}, {"key": "MARKER", "value": "-"},
                 {"key": "SHOP_PASSWORD", "value": PASSWORD, "secret": True}]  # fmt: skip
    path = folder / "checks.yml"
    path.write_text(yaml.safe_dump({"checks": checks, "variables": variables}), encoding="utf-8")
    for item in [folder, *folder.rglob("*")]:
        if not item.is_symlink():
            item.chmod(0o777 if item.is_dir() else 0o666)  # the suite writes its config beside theirs
    return path


@pytest.mark.container
@pytest.mark.timeout(900)
def test_every_check_type_runs_against_an_app_outside_and_leaves_no_process(
    image: str, tmp_path: Path
) -> None:
    if (reason := missing()) is not None:
        pytest.skip(reason)  # the host's Playwright is the suite project's node_modules
    entrypoint = json.loads(
        podman("image", "inspect", "--format", "{{json .Config.Entrypoint}}", image).stdout
    )
    assert entrypoint == ["tini", "--", "testsession"]  # an init that reaps as PID 1, then the tool
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # The image's init, and after the run a listing of what is left (the run's own exit code kept).
    script = f"testsession run --checks checks.yml; code=$?; sleep 1; python -c '{PS}'; exit $code"
    shop = Shop()
    try:
        all_check_types(workspace, shop.url)
        done = podman(
            "run", "--rm", "--network", "host", "-v", f"{workspace}:/workspace",
            "--entrypoint", json.dumps([*entrypoint[:-1], "sh", "-c", script]), image,
            timeout=600,
        )  # fmt: skip
    finally:
        shop.stop()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert "installing @playwright/test" not in out  # the image's own: nothing fetched
    data = json.loads((workspace / "testsession-reports" / "results.json").read_text(encoding="utf-8"))
    verdicts = {r["checkType"]: r["verdict"] for s in data["sessions"] for r in s["results"]}
    assert verdicts == dict.fromkeys(("API", "BROWSER", "MULTI_STEP", "PLAYWRIGHT"), "passed"), verdicts
    left = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("process ")]
    names = {name for _, _, name in left}
    assert left[0][0] == "1" and left[0][2] == "tini", left
    assert not [p for p in left if p[1] == "Z"], left  # every orphan reaped
    assert names <= {"tini", "sh", "python"}, left  # no browser, Node or helper outlives the run


def test_the_k8s_example_runs_the_image_as_these_tests_do() -> None:
    """Not a container test: ties examples/k8s-presync-job.yaml to the user and paths checked above."""
    docs = list(yaml.safe_load_all((REPO_ROOT / "examples" / "k8s-presync-job.yaml").read_text()))
    (job,) = [d for d in docs if d["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == IMAGE_USER == pod["securityContext"]["runAsGroup"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["workingDir"] == "/workspace"
    assert container["args"][:2] == ["run", "/etc/testsession/testsession.yml"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/etc/testsession"]["readOnly"] is True
    assert {"/workspace", "/tmp"} <= set(mounts)
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    spec = yaml.safe_load(config["data"]["testsession.yml"])
    assert "reports" not in spec  # the defaults: /workspace/testsession-reports/..., as checked above
