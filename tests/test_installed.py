"""What users install: the wheel `pip install .` builds, installed (no `-e`) into a venv of its own with
its dependencies from the index, run from a directory outside the checkout (a copy of examples/ beside
it), so the checkout's runner/ cannot be imported. The README's commands, a BROWSER and a MULTI_STEP
check, a PLAYWRIGHT suite and the API checks run from it; then each Python of `requires-python`
imports the same wheel, starts, and runs the shop's checks.

Marked `installed`: deselected unless `-m installed` names it (.ci/run's "installed package" step,
~1-2 min: a venv and a pip install per Python, from pip's cache when warm):

    python -m pytest -q -n 0 -rs -m installed tests/test_installed.py

A missing interpreter, or Node/Playwright/Chromium for the browser checks, skips with the reason
(`-rs` prints it); the suite's own browser tests say the same."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_env import needs_browser
from checks_servers import free_port
from doc_blocks import README, code_blocks, commands
from helpers import child_env
from tracked import fresh_clone

from runner.checks.protocols.browser.setup import find_playwright

# A test's fixtures count towards its time: a venv per Python and pip installs, ~1 min each on a
# loaded 2-core machine, run within the first test that needs them.
pytestmark = [pytest.mark.installed, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parent.parent
VERSIONS = ("3.10", "3.11", "3.12", "3.13")  # requires-python >= 3.10, up to the newest released
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip install .` builds in a fresh clone (build isolation, the backend of [build-system]):
    a copy of the tracked files, as a checkout's build/ and egg-info of an earlier build hid files
    missing from the package."""
    out = tmp_path_factory.mktemp("wheel")
    source = fresh_clone(tmp_path_factory.mktemp("clone"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = out.glob("testsession_runner-*.whl")
    return found


@dataclass(frozen=True)
class Install:
    """A venv with the wheel installed, and a directory outside the checkout to run it in."""

    bin: Path
    workdir: Path

    def env(self, **extra: str) -> dict[str, str]:
        """A user's shell: the venv's bin first on PATH, no other venv, no PYTHONPATH."""
        env = {k: v for k, v in child_env(**extra).items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        others = [
            p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(sys.prefix) / "bin"
        ]
        env["PATH"] = os.pathsep.join([str(self.bin), *others])
        env["VIRTUAL_ENV"] = str(self.bin.parent)
        return env

    def run(self, command: str, timeout: float = 180, **extra: str) -> subprocess.CompletedProcess[str]:
        """`command` (a shell line, as the README writes it) in the work directory."""
        argv = shlex.split(command)
        argv[0] = str(self.bin / argv[0])  # the venv's testsession / python, not one found elsewhere
        return subprocess.run(argv, cwd=self.workdir, env=self.env(**extra), capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip


ASK = "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"


def interpreter(version: str) -> str:
    """python3.X on PATH, else pyenv's, when it runs, is that version and can make a venv with pip;
    else why there is none (Debian's python3.X without python3.X-venv has no ensurepip)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [
        shutil.which(f"python{version}"),
        *sorted(map(str, pyenv.glob(f"{version}.*/bin/python{version}"))),
    ]
    tried = []
    for candidate in filter(None, candidates):
        try:
            said = subprocess.run([candidate, "-c", ASK], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{candidate}: {exc}")
            continue
        if said.stdout.strip() == version:
            return candidate
        tried.append(f"{candidate}: {(said.stderr.strip().splitlines() or [said.stdout.strip()])[-1]}")
    raise LookupError(
        f"LOUD SKIP: no Python {version} with venv and ensurepip here (python{version} on PATH, or "
        f"pyenv's){': ' if tried else ''}{'; '.join(tried)}"
    )


def install(python: str, wheel: Path, where: Path) -> Install:
    venv = where / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workdir = where / "work"
    shutil.copytree(REPO / "examples", workdir / "examples")
    return Install(venv / "bin", workdir)


@pytest.fixture(scope="module")
def other_pythons(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Install | str]]]:
    """The wheel in a venv of each other Python, installed in the background from the module's first
    test on (two at a time, beside this Python's install and the README's commands: pip waits on the
    index and the disk as much as on a core); each one the venv, or why there is none."""

    def one(version: str) -> Install | str:
        try:
            python = interpreter(version)
        except LookupError as exc:
            return str(exc)
        return install(python, wheel, tmp_path_factory.mktemp(f"python{version}"))

    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {version: pool.submit(one, version) for version in VERSIONS if version != HERE}


@pytest.fixture(scope="module")
def user(
    wheel: Path, other_pythons: dict[str, Future[Install | str]], tmp_path_factory: pytest.TempPathFactory
) -> Install:
    """The wheel in a venv of this Python: the full set of the README's commands runs here."""
    return install(sys.executable, wheel, tmp_path_factory.mktemp("user"))


class Shop:
    """examples/local-app/shop.py (the copy beside the install) on free ports; the variables that
    point the checks files at it."""

    def __init__(self, user: Install, broken: bool = False) -> None:
        self.port, self.tcp_port, self.dns_port = free_port(), free_port(), free_port()
        flags = ["--broken"] if broken else []
        self.process = subprocess.Popen(
            [str(user.bin / "python"), "examples/local-app/shop.py", *flags, "--port", str(self.port),
             "--tcp-port", str(self.tcp_port), "--dns-port", str(self.dns_port)],
            cwd=user.workdir, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        assert self.process.stdout.readline().startswith("shop ("), "examples/local-app/shop.py did not start"

    def variables(self) -> dict[str, str]:
        return {"SHOP_URL": f"http://127.0.0.1:{self.port}", "SHOP_TCP_PORT": str(self.tcp_port),
                "SHOP_DNS_PORT": str(self.dns_port)}  # fmt: skip

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(5)


@pytest.fixture
def shop(user: Install) -> Iterator[Shop]:
    started = Shop(user)
    yield started
    started.stop()


def verdicts(user: Install) -> dict[tuple[str, str], str]:
    """(name, checkType) -> verdict of every result in the run's results.json."""
    data = json.loads((user.workdir / "testsession-reports" / "results.json").read_text())
    return {(r["name"], r["checkType"]): r["verdict"] for s in data["sessions"] for r in s["results"]}


def readme_line(heading: str, start: str = "testsession ") -> str:
    """The README's command under `heading` that starts with `start`."""
    for block in code_blocks(README, heading, "sh"):
        for line in commands(block, start):
            return line
    raise AssertionError(f"README: no `{start}...` command under {heading!r}")


def said(ran: subprocess.CompletedProcess[str]) -> str:
    return f"exit {ran.returncode}\n{ran.stdout[-4000:]}\n{ran.stderr[-4000:]}"


def test_the_package_is_imported_from_the_venv_not_the_checkout(user: Install) -> None:
    ran = user.run("python -c 'import runner; print(runner.__file__)'")
    assert ran.returncode == 0, said(ran)
    location = Path(ran.stdout.strip())
    assert location.is_relative_to(user.bin.parent) and "site-packages" in location.parts, location
    version = user.run("testsession --version")
    assert version.returncode == 0 and version.stdout.startswith("testsession"), said(version)


def test_the_readmes_first_command_runs_the_demo_world_and_exits_1(user: Install) -> None:
    line = readme_line("## The two commands", "pip install . && ").split("&&", 1)[1].strip()
    ran = user.run(line)
    assert ran.returncode == 1, said(ran)  # the demo world has failing checks, as the README says
    for report in ("junit.xml", "summary.md", "results.json"):
        assert (user.workdir / "testsession-reports" / report).is_file()


@pytest.mark.parametrize("broken", [False, True], ids=["good build", "broken build"])
def test_the_readmes_local_checks_pass_on_the_good_build_and_fail_on_the_broken(
    user: Install, broken: bool
) -> None:
    shop = Shop(user, broken=broken)
    try:
        ran = user.run(readme_line("## Run your checks against a local build"), **shop.variables())
    finally:
        shop.stop()
    assert ran.returncode == (1 if broken else 0), said(ran)
    found = verdicts(user)
    assert found[("Products API", "API")] == "passed", found
    assert found[("Cart API", "API")] == ("failed" if broken else "passed"), found


SKIP_WITHOUT_BROWSER, BROWSER = needs_browser()


@SKIP_WITHOUT_BROWSER
@BROWSER
def test_browser_and_multi_step_checks_run_from_the_installed_package(user: Install, shop: Shop) -> None:
    """The checks file of the README's browser paragraph: the Playwright fixtures and reporter that
    the package ships (the .cjs files a wheel once lacked) are what a BROWSER check loads."""
    ran = user.run("testsession run --checks examples/shop-browser-checks.yml", **shop.variables())
    assert ran.returncode == 0, said(ran)
    assert verdicts(user) == {("Sign in", "BROWSER"): "passed", ("Products and cart", "MULTI_STEP"): "passed"}


@SKIP_WITHOUT_BROWSER
@BROWSER
def test_a_playwright_suite_runs_from_the_installed_package(user: Install, shop: Shop) -> None:
    """tests/playwright_suite as a user's project beside the checks file (docs/checks.md), its
    node_modules the Playwright that browser checks install."""
    project = user.workdir / "e2e"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(REPO / "tests" / "playwright_suite", project)
    playwright = find_playwright(Path("/nonexistent"), None, progress=lambda _: None,
                                 deadline=time.monotonic() + 300, stop=None)  # fmt: skip
    (project / "node_modules").symlink_to(playwright.root / "node_modules", target_is_directory=True)
    (user.workdir / "suite-checks.yml").write_text(
        "checks:\n"
        "  - {name: Shop suite, checkType: PLAYWRIGHT, workingDir: e2e,\n"
        "     testCommand: npx playwright test --project=chromium}\n"
        "variables:\n"
        "  - {key: SHOP_URL, value: '${SHOP_URL}'}\n"
        "  - {key: SHOP_PASSWORD, value: correct-horse-battery, secret: true}\n"
    )
    ran = user.run("testsession run --checks suite-checks.yml", **shop.variables())
    assert ran.returncode == 0, said(ran)
    assert verdicts(user) == {("Shop suite", "PLAYWRIGHT"): "passed"}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_python_of_requires_python_imports_starts_and_runs_the_shops_checks(
    version: str, request: pytest.FixtureRequest
) -> None:
    """The import, `--version`, `--help` and a local checks run; the full suite runs on one Python."""
    found: Install | str
    found = (
        request.getfixturevalue("user")
        if version == HERE
        else request.getfixturevalue("other_pythons")[version].result()
    )
    if isinstance(found, str):
        pytest.skip(found)
    installed = found
    for command in ("python -c 'import runner.cli.main'", "testsession --version", "testsession --help"):
        ran = installed.run(command)
        assert ran.returncode == 0, f"Python {version}: {command}: {said(ran)}"
    shop = Shop(installed)
    try:
        ran = installed.run("testsession run --checks examples/shop-checks.yml", **shop.variables())
    finally:
        shop.stop()
    assert ran.returncode == 0, f"Python {version}: {said(ran)}"
    assert set(verdicts(installed).values()) <= {"passed", "flaky"}
