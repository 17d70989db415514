"""SSL checks run for real against TLS servers on loopback, with certificates made here: from a
throw-away CA (trustme) trusted through the environment as a user's job trusts its own CA
(NODE_EXTRA_CA_CERTS), expiring in 9 days or 90, for another name, self-signed, expired."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from checks_servers import free_port
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from tls_server import TlsServer

from runner.checks import Attempt, Variable, VariableSources, run_check
from runner.checks.analysis.by_evidence import analyse_run
from runner.checks.assertions import ByProperty
from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.protocols.ssl_monitor import TLS_ORDER
from runner.models.check_definitions import SslCheckDefinition, parse_check_definition

NOW = datetime.datetime.now(datetime.timezone.utc)
STOPPED_WITHIN = 0.25


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusted(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CA given to the run as a user's CI job gives it: NODE_EXTRA_CA_CERTS."""
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(tmp_path / "ca.pem"))


def serve_issued(ca: trustme.CA, tmp: Path, *names: str, days: float) -> TlsServer:
    cert = ca.issue_cert(*names, not_after=NOW + datetime.timedelta(days=days, hours=1))
    return TlsServer(cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes(), tmp)


def self_signed(tmp: Path, days: float = 90) -> TlsServer:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "self.test")])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return TlsServer(cert.public_bytes(serialization.Encoding.PEM), key_pem, tmp)


@pytest.fixture
def servers() -> Iterator[list[TlsServer]]:
    started: list[TlsServer] = []
    yield started
    for server in started:
        server.stop()


def ssl_check(port: int, assertions: list[dict[str, Any]] | None = None, alert_days: int = 30,
              host: str = "127.0.0.1", **config: Any) -> SslCheckDefinition:  # fmt: skip
    ssl_config = {"hostname": host, "port": port, "alertDaysBeforeExpiry": alert_days, **config}
    request = {"sslConfig": ssl_config, "assertions": assertions or []}
    check = parse_check_definition({"name": "Cert", "checkType": "SSL", "request": request})
    assert isinstance(check, SslCheckDefinition)
    return check


def run(check: SslCheckDefinition) -> Attempt:
    return run_check(check, max_run_seconds=30).final


def days_over(target: str) -> dict[str, Any]:
    return {
        "source": "CERTIFICATE",
        "property": "daysUntilExpiry",
        "comparison": "GREATER_THAN",
        "target": target,
    }


def connection(prop: str, target: str) -> dict[str, Any]:
    return {"source": "CONNECTION", "property": prop, "comparison": "EQUALS", "target": target}


def test_a_certificate_expiring_in_9_days_fails_days_until_expiry_over_30(
    ca: trustme.CA, tmp_path: Path, trusted: None, servers: list[TlsServer]
) -> None:
    servers.append(server := serve_issued(ca, tmp_path, "127.0.0.1", days=9))
    attempt = run(ssl_check(server.port, [days_over("30")]))
    assert (attempt.error_class, attempt.error_kind) == (ErrorClass.ASSERTION_FAILURE, FailureKind.ASSERTION)
    assert attempt.message == "CERTIFICATE daysUntilExpiry GREATER_THAN 30: received 9"
    analysis, rule = analyse_run(attempt, attempt.message, "SSL", "Cert")
    assert rule == "rules-v1/run-ssl-assertion"
    assert "certificate for 127.0.0.1 expires in 9 days; alertDaysBeforeExpiry 30" in analysis.rootCause
    assert analysis.evidence[0].artifacts[0].name == "SSL_HANDSHAKE"
    # Without the assertion it passes, degraded: production raises a degraded alert within
    # alertDaysBeforeExpiry days of the expiry, and fails only once it has expired.
    bare = run(ssl_check(server.port))
    assert bare.passed and bare.degraded
    assert (
        bare.message
        == "the certificate for 127.0.0.1 expires in 9 days, within the alertDaysBeforeExpiry of 30"
    )
    assert run(ssl_check(server.port, alert_days=5)).degraded is False


def test_a_valid_90_day_certificate_from_a_trusted_ca_passes(
    ca: trustme.CA, tmp_path: Path, trusted: None, servers: list[TlsServer]
) -> None:
    servers.append(server := serve_issued(ca, tmp_path, "127.0.0.1", "localhost", days=90))
    assertions = [
        days_over("30"), connection("chainTrusted", "true"), connection("hostnameVerified", "true"),
        {"source": "CONNECTION", "property": "tlsVersion", "comparison": "EQUALS", "target": "TLS1.3"},
        {"source": "CONNECTION", "property": "tlsVersion", "comparison": "GREATER_THAN", "target": "TLS1.1"},
        {"source": "CERTIFICATE", "property": "sans", "comparison": "CONTAINS", "target": "localhost"},
        {"source": "JSON_RESPONSE", "property": "$.resolvedIp", "comparison": "EQUALS",
         "target": "127.0.0.1"},
        {"source": "RESPONSE_TIME", "comparison": "LESS_THAN", "target": "1000"},
    ]  # fmt: skip
    attempt = run(ssl_check(server.port, assertions, host="localhost"))
    assert attempt.passed and not attempt.degraded, attempt.message
    assert all(a.passed for a in attempt.assertions)
    assert attempt.request is not None and attempt.request.kind == "SSL"
    assert attempt.request.target == f"localhost:{server.port}"
    assert attempt.timing is not None and attempt.timing.tls_ms == attempt.response_time_ms
    assert attempt.body_excerpt is not None and attempt.body_excerpt.startswith(
        "certificate for localhost expires in 90 days; alertDaysBeforeExpiry 30; TLS1.3 "
    )


def test_the_chain_is_untrusted_without_the_ca_and_a_self_signed_certificate_fails_chain_trusted(
    ca: trustme.CA, tmp_path: Path, servers: list[TlsServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NODE_EXTRA_CA_CERTS", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    servers.append(signed := self_signed(tmp_path))
    attempt = run(ssl_check(signed.port, [connection("chainTrusted", "true")]))
    assert attempt.message == "CONNECTION chainTrusted EQUALS true: received false"
    assert attempt.error_class is ErrorClass.ASSERTION_FAILURE and not attempt.network_failure
    bare = run(ssl_check(signed.port))
    assert bare.error_kind is FailureKind.CHAIN_UNTRUSTED
    assert bare.message == (
        "the certificate chain for 127.0.0.1 is not trusted (self-signed certificate); issued by self.test"
    )
    analysis, rule = analyse_run(bare, bare.message, "SSL", "Cert")
    assert rule == "rules-v1/run-chain-untrusted" and "NODE_EXTRA_CA_CERTS" in analysis.codeFix
    # skipChainValidation: the chain is not verified, the rest is judged.
    skipped = run(ssl_check(signed.port, [connection("chainTrusted", "true")], skipChainValidation=True))
    assert skipped.message == "CONNECTION chainTrusted EQUALS true: received null"
    assert run(ssl_check(signed.port, skipChainValidation=True)).passed
    # The CA's certificate is not in the machine's store until the environment names it.
    servers.append(issued := serve_issued(ca, tmp_path, "127.0.0.1", days=90))
    assert run(ssl_check(issued.port)).error_kind is FailureKind.CHAIN_UNTRUSTED


def test_a_certificate_for_another_name_fails_hostname_verified(
    ca: trustme.CA, tmp_path: Path, trusted: None, servers: list[TlsServer]
) -> None:
    servers.append(server := serve_issued(ca, tmp_path, "other.example", days=90))
    attempt = run(ssl_check(server.port, [connection("hostnameVerified", "true")]))
    assert attempt.message == "CONNECTION hostnameVerified EQUALS true: received false"
    bare = run(ssl_check(server.port))
    assert bare.error_kind is FailureKind.HOSTNAME_MISMATCH
    assert bare.message == "the certificate does not cover 127.0.0.1: its names are other.example"
    assert analyse_run(bare, bare.message, "SSL", "Cert")[1] == "rules-v1/run-hostname-mismatch"


def test_the_security_baseline_fails_or_degrades_an_old_tls_version(
    ca: trustme.CA, tmp_path: Path, trusted: None, servers: list[TlsServer]
) -> None:
    """A server that speaks TLS 1.2 at most; a port given as a variable, as for TCP checks."""
    cert = ca.issue_cert("127.0.0.1", not_after=NOW + datetime.timedelta(days=90))
    pem, key = cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()
    servers.append(old := TlsServer(pem, key, tmp_path, ssl.TLSVersion.TLSv1_2))
    variables = VariableSources(session=(Variable("SSL_PORT", str(old.port)),))
    by_variable = ssl_check("{{SSL_PORT}}")  # type: ignore[arg-type]
    default = run_check(by_variable, max_run_seconds=30, variables=variables).final
    assert default.passed and not default.degraded, default.message  # production's minimum: TLS1.2
    strict = {"enabled": True, "minTLSVersion": {"value": "TLS1.3", "severity": "fail"}}
    failed = run(ssl_check(old.port, securityBaseline=strict))
    assert failed.error_kind is FailureKind.SECURITY_BASELINE
    assert failed.message == (
        "security baseline minTLSVersion failed: negotiated TLS1.2, minTLSVersion TLS1.3"
    )
    advice = {"recommendedTLSVersion": {"value": "TLS1.3", "severity": "degrade"}}
    degraded = run(ssl_check(old.port, securityBaseline=advice))
    assert degraded.passed and degraded.degraded
    assert degraded.message == (
        "security baseline recommendedTLSVersion (severity degrade): negotiated TLS1.2, "
        "recommendedTLSVersion TLS1.3"
    )
    assert run(ssl_check(old.port, securityBaseline={**strict, "enabled": False})).passed


def test_an_expired_certificate_fails(
    ca: trustme.CA, tmp_path: Path, trusted: None, servers: list[TlsServer]
) -> None:
    servers.append(server := serve_issued(ca, tmp_path, "127.0.0.1", days=-3))
    attempt = run(ssl_check(server.port))
    assert attempt.error_kind is FailureKind.CERTIFICATE_EXPIRED and attempt.message is not None
    assert attempt.message.startswith("the certificate for 127.0.0.1 expired 3 days ago (notAfter ")


@pytest.mark.timing  # measures real time: the `timing` phase, one test at a time (.ci/run)
def test_refused_silent_and_stopped() -> None:
    port = free_port()
    refused = run(ssl_check(port))
    assert (refused.error_class, refused.error_kind) == (
        ErrorClass.NETWORK_ERROR,
        FailureKind.CONNECTION_REFUSED,
    )
    assert refused.message == f"connection refused: 127.0.0.1:{port}"
    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog) and never speaks
    try:
        quiet = silent.getsockname()[1]
        timed_out = run(ssl_check(quiet, handshakeTimeoutMs=1000))
        assert timed_out.error_class is ErrorClass.TIMEOUT and 1000 <= timed_out.duration_ms < 4000
        assert timed_out.message == (
            f"timeout: no TLS handshake within the handshakeTimeoutMs of 1000 ms: 127.0.0.1:{quiet}"
        )
        stop, set_at = threading.Event(), []
        threading.Timer(0.3, lambda: (set_at.append(time.monotonic()), stop.set())).start()
        ran = run_check(ssl_check(quiet), max_run_seconds=30, stop=stop)
        assert ran.cancelled and time.monotonic() - set_at[0] < STOPPED_WITHIN
    finally:
        silent.close()


def test_tls_versions_are_ordered_and_a_target_off_the_scale_says_so() -> None:
    from runner.checks.assertions import Ranked, evaluate
    from runner.models.check_definitions import Assertion

    def check(comparison: str, target: str) -> tuple[bool, str]:
        assertion = Assertion(
            source="CONNECTION", property="tlsVersion", comparison=comparison, target=target
        )
        result = evaluate(assertion, {"CONNECTION": ByProperty({"tlsVersion": Ranked("TLS1.2", TLS_ORDER)})})
        return result.passed, result.detail

    assert check("GREATER_THAN", "TLS1.1") == (True, "received TLS1.2")
    assert check("GREATER_THAN", "TLS1.2") == (False, "received TLS1.2")
    assert check("LESS_THAN", "TLS1.3") == (True, "received TLS1.2")
    assert check("EQUALS", "TLS1.2") == (True, "received TLS1.2")
    assert check("GREATER_THAN", "1.1") == (
        False,
        "the target 1.1 is not one of TLS1.0 < TLS1.1 < TLS1.2 < TLS1.3",
    )


def test_the_definition_s_defaults_and_problems() -> None:
    check = parse_check_definition(
        {"name": "c", "checkType": "SSL", "request": {"sslConfig": {"hostname": "h"}}}
    )
    assert isinstance(check, SslCheckDefinition) and check.problems() == []
    config = check.request.sslConfig
    assert (config.port_number, config.alertDaysBeforeExpiry, config.handshakeTimeoutMs) == (443, 20, 10_000)
    assert check.response_limits_ms() == (3_000, 10_000)
    days_left = {"source": "CERTIFICATE", "property": "daysLeft", "comparison": "EQUALS", "target": "1"}
    wrong = ssl_check(443, [days_left], alert_days=400)
    assert wrong.problems()[0] == "request.sslConfig.alertDaysBeforeExpiry: expected a number from 1 to 365"
    assert wrong.problems()[1].startswith("request.assertions[0].property: expected one of daysUntilExpiry, ")
    mtls = ssl_check(443, clientCertificateMode="auto")
    assert mtls.local_support() is not None and "client certificate" in str(mtls.local_support())
