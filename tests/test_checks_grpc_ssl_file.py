"""`testsession run --checks FILE` with a GRPC and an SSL check in production's shape against real
local servers: exit 0 when both pass, 1 when the servers fail them; results.json and junit.xml say
which and why. The CA of the TLS server reaches the run as a user's job gives it (NODE_EXTRA_CA_CERTS)."""

from __future__ import annotations

import datetime
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from grpc_server import GrpcServer, start_grpc
from helpers import run_here
from tls_server import TlsServer

NOW = datetime.datetime.now(datetime.timezone.utc)


@pytest.fixture(scope="module")
def grpc_server() -> Iterator[GrpcServer]:
    server = start_grpc()
    try:
        yield server
    finally:
        server.stop()


def checks(grpc_port: int, service: str, ssl_port: int) -> list[dict[str, Any]]:
    """The issue's payloads."""
    return [
        {
            "name": "Greeter health",
            "checkType": "GRPC",
            "degradedResponseTime": 5000,
            "maxResponseTime": 10000,
            "request": {
                "url": "127.0.0.1",
                "port": grpc_port,
                "grpcConfig": {"mode": "HEALTH", "tls": False, "service": service},
                "assertions": [
                    {"source": "GRPC_HEALTHCHECK_STATUS", "comparison": "EQUALS", "target": "1"},
                    # The check's own bound (maxResponseTime), not 1 s: under load 15 the first call
                    # (grpc's import, the channel) took 2.6 s and the passing run failed.
                    {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "10000"},
                ],
            },
        },
        {
            "name": "Shop certificate",
            "checkType": "SSL",
            "request": {
                "sslConfig": {"hostname": "127.0.0.1", "port": ssl_port, "alertDaysBeforeExpiry": 30},
                "assertions": [
                    {"source": "CERTIFICATE", "property": "daysUntilExpiry", "comparison": "GREATER_THAN",
                     "target": "30"},
                    {"source": "CONNECTION", "property": "chainTrusted", "comparison": "EQUALS",
                     "target": "true"},
                ],
            },
        },
    ]  # fmt: skip


def run(
    tmp_path: Path, ca_file: Path, defs: list[dict[str, Any]], rca: bool = False
) -> tuple[int, str, dict[str, Any], ET.Element]:
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(defs), encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
           "NODE_EXTRA_CA_CERTS": str(ca_file)}  # fmt: skip
    ran = run_here(["run", "--checks", "checks.yml", *([] if rca else ["--no-rca"])], env, tmp_path)
    reports = tmp_path / "testsession-reports"
    data = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    return ran.returncode, ran.stdout + ran.stderr, data, ET.parse(reports / "junit.xml").getroot()


def test_a_grpc_and_an_ssl_check_pass_then_fail_as_their_servers_decide(
    grpc_server: GrpcServer, tmp_path: Path
) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    good = ca.issue_cert("127.0.0.1", not_after=NOW + datetime.timedelta(days=90, hours=1))
    soon = ca.issue_cert("127.0.0.1", not_after=NOW + datetime.timedelta(days=9, hours=1))
    (tmp_path / "certs").mkdir()
    valid = TlsServer(good.cert_chain_pems[0].bytes(), good.private_key_pem.bytes(), tmp_path / "certs")
    expiring = TlsServer(soon.cert_chain_pems[0].bytes(), soon.private_key_pem.bytes(), tmp_path / "certs")
    try:
        code, out, data, junit = run(tmp_path, tmp_path / "ca.pem", checks(grpc_server.port, "", valid.port))
        results = {r["name"]: r for s in data["sessions"] for r in s["results"]}
        assert code == 0, out
        assert {n: r["verdict"] for n, r in results.items()} == {
            "Greeter health": "passed", "Shop certificate": "passed",
        }  # fmt: skip
        assert "Greeter health (GRPC, local)" in out and "Shop certificate (SSL, local)" in out
        assert junit.get("failures") == "0" and junit.get("tests") == "2"

        failing = checks(grpc_server.port, "shop.Down", expiring.port)
        code, out, data, junit = run(tmp_path, tmp_path / "ca.pem", failing, rca=True)
        results = {r["name"]: r for s in data["sessions"] for r in s["results"]}
        assert code == 1, out
        assert {n: r["verdict"] for n, r in results.items()} == {
            "Greeter health": "failed", "Shop certificate": "failed",
        }  # fmt: skip
        assert "GRPC_HEALTHCHECK_STATUS EQUALS 1: received 2" in json.dumps(results["Greeter health"])
        assert "CERTIFICATE daysUntilExpiry GREATER_THAN 30: received 9" in json.dumps(
            results["Shop certificate"]
        )
        failed = {case.get("name"): case.find("failure") for case in junit.iter("testcase")}
        assert all(failure is not None for failure in failed.values()) and len(failed) == 2, failed
        assert junit.get("failures") == "2"
        # The analyses cite the evidence: the certificate's days against alertDaysBeforeExpiry.
        assert "certificate for 127.0.0.1 expires in 9 days; alertDaysBeforeExpiry 30; TLS1.3" in out
        assert "NOT_SERVING (2)" in out
    finally:
        valid.stop()
        expiring.stop()
