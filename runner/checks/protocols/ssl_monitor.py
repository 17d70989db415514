"""SSL checks: a TLS handshake with `sslConfig.hostname`, the certificate and the connection judged.

Production's rules (ssl-monitors/overview.mdx and configuration.mdx, constructs/ssl-monitor.mdx):
- The host name is resolved (ipFamily), a TCP connection opened to `port` (443), a full handshake
  made within `handshakeTimeoutMs` (10 s), sending `serverName` (else the host name) as SNI.
- The run fails at the first stage that fails: DNS, connect, handshake (NETWORK_ERROR `dns_lookup`,
  `connection_refused`, `tls`; TIMEOUT), the host name not covered by the certificate
  (`hostname_mismatch`), the chain not trusted (`chain_untrusted`, unless `skipChainValidation`),
  an expired certificate (`certificate_expired`), a security-baseline rule of severity `fail`
  (`security_baseline`). These are judged after the assertions, like a 4xx (an assertion that fails
  names the failure first). A certificate within `alertDaysBeforeExpiry` days (20) of its expiry
  degrades the run ("raise a degraded alert"); so does a baseline rule of severity `degrade`.
- degraded/maxResponseTime (3000/10000 ms) apply to the handshake's time, which RESPONSE_TIME reads.
- CERTIFICATE and CONNECTION read the documented properties (daysUntilExpiry, subjectCN, issuerCN,
  sans, keySizeBits ... ; tlsVersion `TLS1.3`, cipherSuite, hostnameVerified, chainTrusted,
  resolvedIp; tlsVersion ordered TLS1.0 < TLS1.3 for GREATER_THAN and LESS_THAN); JSON_RESPONSE a
  JSONPath into the response document (`$.certificate.subjectCN`), TEXT_RESPONSE that document as text.
Ours, where production is silent or Python cannot see it:
- Trust is the machine's (trust.py: SSL_CERT_FILE, the system's store, certifi, NODE_EXTRA_CA_CERTS)
  verified by OpenSSL; a chain that does not verify (self-signed, unknown CA, expired) is
  `chainTrusted: false` with OpenSSL's reason, read from a second handshake that takes any
  certificate. With skipChainValidation the chain is not verified (`chainTrusted` null).
- The host name matches a DNS name of the certificate's SANs (a `*.` wildcard for one left-most
  label) or one of its IP addresses; no fallback to the subject's CN (as browsers and Go).
- daysUntilExpiry is whole days, rounded down (negative once expired). `sans` is one text, the
  names joined by ", " (so CONTAINS is membership). cipherSuite is OpenSSL's name (IANA's for TLS
  1.3). Not evaluated here: OCSP (ocspStapled, ocspStatus are null), the intermediate certificates
  (issuerFingerprintSha256 is null), and the baseline's weakCipherSuite, knownBadCA,
  ocspMustStapleRespected and sctPresent rules (the evidence says so).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import select
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import runner.checks.protocols.sockets as sockets
from runner.checks.assertions import ByProperty, Ranked
from runner.checks.failures import Failure, FailureKind
from runner.checks.outcome import RequestSummary, TimingPhases
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.protocols.socket_fields import filled_port
from runner.checks.protocols.trust import inspecting_context, verifying_context
from runner.checks.variables import Substitution
from runner.models.check_definitions import SslCheckDefinition

TLS_VERSIONS = {"TLSv1": "TLS1.0", "TLSv1.1": "TLS1.1", "TLSv1.2": "TLS1.2", "TLSv1.3": "TLS1.3"}
TLS_ORDER = ("TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3")
# ssl-monitors/overview.mdx: weak signature algorithms (Go's names).
WEAK_SIGNATURES = frozenset({"MD2-RSA", "MD5-RSA", "SHA1-RSA", "DSA-SHA1", "ECDSA-SHA1"})
# ChecksV1SslConfig.securityBaseline's defaults: (value, severity) of each rule evaluated here.
BASELINE_DEFAULTS: dict[str, tuple[Any, str]] = {
    "minTLSVersion": ("TLS1.2", "fail"),
    "minKeySizeBits": (2048, "fail"),
    "weakSignatureAlgorithm": (None, "fail"),
    "recommendedTLSVersion": ("TLS1.3", "ignore"),
    "recommendedKeySizeBits": (3072, "ignore"),
}
NOT_EVALUATED = ("weakCipherSuite", "knownBadCA", "ocspMustStapleRespected", "sctPresent")


class SslProtocol(CheckProtocol[SslCheckDefinition]):
    def fill(self, check: SslCheckDefinition, subst: Substitution) -> SslCheckDefinition:
        """`{{VARIABLES}}` in hostname, serverName and port, as in TCP's (socket_fields.py)."""
        config = check.request.sslConfig
        changes: dict[str, Any] = {}
        for name in ("hostname", "serverName"):
            value = getattr(config, name)
            if isinstance(value, str) and "{{" in value:
                changes[name] = subst.render(value, f"request.sslConfig.{name}", encode=False).strip()
        if isinstance(config.port, str) and "{{" in config.port:
            changes["port"] = filled_port(config.port, subst, "request.sslConfig.port")
        if not changes:
            return check
        request = check.request.model_copy(update={"sslConfig": config.model_copy(update=changes)})
        return check.model_copy(update={"request": request})

    def perform(self, check: SslCheckDefinition, job: Job) -> Observation:
        probe = _Probe(check, job)
        failure = probe.run()
        seen = probe.seen
        implicit, degraded = (None, None) if failure or seen is None else verdict(check, seen)
        values: dict[str, Any] = {"RESPONSE_TIME": round(probe.handshake_ms or probe.clock.ms())}
        document: dict[str, Any] = {}
        if seen is not None:
            document = seen.document(probe.resolved_ip)
            values |= {
                "CERTIFICATE": ByProperty(seen.certificate),
                "CONNECTION": ByProperty(
                    {**document["connection"], "tlsVersion": Ranked(seen.tls_version, TLS_ORDER)}
                ),
                "JSON_RESPONSE": document,
                "TEXT_RESPONSE": json.dumps(document, separators=(",", ":")),
            }
        span = probe.clock.span
        timing = TimingPhases(
            dns_ms=span(None, "resolved"), connect_ms=span("resolved", "connected"),
            tls_ms=probe.handshake_ms, first_byte_ms=None, download_ms=None,
            total_ms=probe.handshake_ms if probe.handshake_ms is not None else probe.clock.ms(),
        )  # fmt: skip
        return Observation(
            request=RequestSummary(kind="SSL", method="TLS", target=probe.target, remote_address=probe.where),
            timing=timing,
            failure=failure,
            cancelled=probe.cancelled,
            excerpt=job.cut(transcript(check, seen, probe.target), job.limits.excerpt_chars)
            if seen
            else None,
            values=values,
            implicit=implicit,
            degraded=degraded,
        )


PROTOCOL = SslProtocol()


@dataclass
class Seen:
    """What one handshake showed: the connection and the leaf certificate's facts."""

    tls_version: str
    cipher: str
    chain_trusted: bool | None  # None: not verified (skipChainValidation)
    trust_reason: str  # OpenSSL's reason when not trusted
    hostname_verified: bool
    certificate: dict[str, Any]
    expired: bool
    baseline: list[dict[str, Any]] = field(default_factory=list)

    def connection(self, resolved_ip: str | None) -> dict[str, Any]:
        return {
            "tlsVersion": self.tls_version, "cipherSuite": self.cipher,
            "hostnameVerified": self.hostname_verified, "chainTrusted": self.chain_trusted,
            "ocspStapled": None, "ocspStatus": None, "resolvedIp": resolved_ip,
        }  # fmt: skip

    def document(self, resolved_ip: str | None) -> dict[str, Any]:
        """Production's response shape (CheckResultSsl.response), as far as it is known here."""
        return {
            "resolvedIp": resolved_ip,
            "protocol": self.tls_version,
            "cipherSuite": self.cipher,
            "hostnameVerified": self.hostname_verified,
            "chainTrusted": self.chain_trusted,
            "chainTrustDetail": self.trust_reason or None,
            "daysUntilExpiry": self.certificate["daysUntilExpiry"],
            "certificate": self.certificate,
            "connection": self.connection(resolved_ip),
            "securityBaseline": {"rules": self.baseline, "notEvaluated": list(NOT_EVALUATED)},
        }


class _Probe:
    """One attempt: lookup, connect, handshake (twice when the chain does not verify)."""

    def __init__(self, check: SslCheckDefinition, job: Job) -> None:
        self.check, self.job = check, job
        self.config = check.request.sslConfig
        self.clock = sockets.Stopwatch()
        port = self.config.port_number or 443
        host = self.config.hostname
        self.target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.where = self.target
        self.resolved_ip: str | None = None
        self.handshake_ms: float | None = None
        self.cancelled = False
        self.seen: Seen | None = None

    def run(self) -> Failure | None:
        config, deadline, stop = self.config, self.job.bounds.deadline, self.job.stop
        port = self.config.port_number or 443
        try:
            try:
                address = sockets.resolve(config.hostname, port, sockets.family_of(config.ipFamily),
                                          socket.SOCK_STREAM, deadline, stop)  # fmt: skip
            except OSError:
                return Failure(
                    FailureKind.DNS_LOOKUP, f"DNS lookup failed: {config.hostname} ({config.ipFamily})"
                )
            self.clock.mark("resolved")
            self.where, self.resolved_ip = address.shown, str(address.address[0])
            trusted, reason = None, ""
            if not config.skipChainValidation:
                tls, failure, reason = self._handshake(address, verifying_context(self.job.limits))
                if failure is not None:
                    return failure
                trusted = tls is not None
                if tls is not None:
                    self._read(tls, trusted, reason)
                    return None
            tls, failure, _ = self._handshake(address, inspecting_context())
            if failure is not None:
                return failure
            assert tls is not None  # any certificate is taken: only a failure ends without one
            self._read(tls, trusted, reason)
            return None
        except sockets.Stopped:
            self.cancelled = True
            return None
        except sockets.DeadlineReached:
            what = "no TLS handshake" if "connected" in self.clock.marks else "no connection"
            return Failure(
                FailureKind.TIMEOUT, f"timeout: {what} within {self.job.bounds.text}: {self.where}"
            )

    def _handshake(
        self, address: sockets.Target, context: ssl.SSLContext
    ) -> tuple[ssl.SSLSocket | None, Failure | None, str]:
        """(the socket after a full handshake, or None when the chain does not verify; a failure; why
        the chain does not verify)."""
        deadline, stop = self.job.bounds.deadline, self.job.stop
        try:
            sock = sockets.connect(address, socket.SOCK_STREAM, deadline, stop)
        except OSError as exc:
            connect = (FailureKind.CONNECTION_FAILED, "connection failed")
            return None, sockets.os_failure(exc, self.where, otherwise=connect, reset=False), ""
        self.clock.mark("connected")
        started = time.monotonic()
        handshake_end = min(deadline, started + self.config.handshakeTimeoutMs / 1000)
        name = self.config.serverName or self.config.hostname
        sni = None if _is_ip(name) else name
        try:
            tls = context.wrap_socket(sock, server_hostname=sni, do_handshake_on_connect=False)
        except BaseException:
            sock.close()
            raise
        try:
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    _wait(tls, handshake_end, stop, write=False)
                except ssl.SSLWantWriteError:
                    _wait(tls, handshake_end, stop, write=True)
        except ssl.SSLCertVerificationError as exc:
            tls.close()
            return None, None, str(exc.verify_message or exc.reason or "not trusted")
        except sockets.DeadlineReached:
            tls.close()
            if handshake_end < deadline:
                limit = f"the handshakeTimeoutMs of {self.config.handshakeTimeoutMs} ms"
                return (
                    None,
                    Failure(FailureKind.TIMEOUT, f"timeout: no TLS handshake within {limit}: {self.where}"),
                    "",
                )
            raise
        except (ssl.SSLError, OSError) as exc:
            tls.close()
            reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
            if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno in sockets.RESET:
                reason = "the connection was reset during the handshake"
            return (
                None,
                Failure(FailureKind.TLS, f"TLS handshake failed ({str(reason).lower()}): {self.where}"),
                "",
            )
        except BaseException:
            tls.close()
            raise
        self.handshake_ms = round((time.monotonic() - started) * 1000, 3)
        return tls, None, ""

    def _read(self, tls: ssl.SSLSocket, trusted: bool | None, reason: str) -> None:
        try:
            der = tls.getpeercert(binary_form=True) or b""
            version, cipher = tls.version() or "", (tls.cipher() or ("", "", 0))[0]
        finally:
            tls.close()
        certificate, expired, names = certificate_facts(der, time.time())
        tls_version = TLS_VERSIONS.get(version, version)
        hostname_ok = matches(self.config.hostname, names)
        seen = Seen(tls_version, cipher, trusted, reason, hostname_ok, certificate, expired)
        if hostname_ok and trusted is not False:  # production: skipped when an earlier step fails
            seen.baseline = baseline(self.config.securityBaseline, tls_version, certificate)
        self.seen = seen


def _wait(tls: ssl.SSLSocket, deadline: float, stop: Any, write: bool) -> None:
    while True:
        if stop is not None and stop.is_set():
            raise sockets.Stopped
        left = deadline - time.monotonic()
        if left <= 0:
            raise sockets.DeadlineReached
        wait = min(sockets.SLICE, left)
        ready = select.select([], [tls], [], wait)[1] if write else select.select([tls], [], [], wait)[0]
        if ready:
            return


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def certificate_facts(der: bytes, now: float) -> tuple[dict[str, Any], bool, list[str]]:
    """(the CERTIFICATE properties, expired, the SANs) of a DER certificate, read by `cryptography`
    (imported here: only an SSL check needs it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
    from cryptography.x509.oid import NameOID

    cert = x509.load_der_x509_certificate(der)

    def cn(name: x509.Name) -> str | None:
        found = name.get_attributes_for_oid(NameOID.COMMON_NAME)
        return str(found[0].value) if found else None

    names: list[str] = []
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [*san.get_values_for_type(x509.DNSName),
                 *(str(ip) for ip in san.get_values_for_type(x509.IPAddress))]  # fmt: skip
    except x509.ExtensionNotFound:
        pass
    try:
        is_ca = bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        is_ca = False
    key = cert.public_key()
    algorithm, size = "unknown", None
    if isinstance(key, rsa.RSAPublicKey):
        algorithm, size = "RSA", key.key_size
    elif isinstance(key, ec.EllipticCurvePublicKey):
        algorithm, size = "ECDSA", key.key_size
    elif isinstance(key, dsa.DSAPublicKey):
        algorithm, size = "DSA", key.key_size
    elif isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        algorithm = "Ed25519" if isinstance(key, ed25519.Ed25519PublicKey) else "Ed448"
    hash_name = cert.signature_hash_algorithm.name.upper() if cert.signature_hash_algorithm else ""
    sig_key = {"RSA": "RSA", "ECDSA": "ECDSA", "DSA": "DSA"}.get(algorithm, algorithm)
    # Go's names (production's runner): SHA256-RSA, ECDSA-SHA256, DSA-SHA1.
    signature = f"{hash_name}-RSA" if sig_key == "RSA" else f"{sig_key}-{hash_name}" if hash_name else sig_key
    not_after = cert.not_valid_after_utc
    seconds_left = not_after.timestamp() - now
    facts = {
        "subjectCN": cn(cert.subject),
        "issuerCN": cn(cert.issuer),
        "serialNumber": format(cert.serial_number, "X"),
        "fingerprintSha256": hashlib.sha256(der).hexdigest(),
        "issuerFingerprintSha256": None,
        "keySizeBits": size,
        "keyAlgorithm": algorithm,
        "signatureAlgorithm": signature,
        "sans": ", ".join(names),
        "selfSigned": cert.issuer == cert.subject,
        "isCA": is_ca,
        "daysUntilExpiry": math.floor(seconds_left / 86400),
        "notBefore": cert.not_valid_before_utc.isoformat(),
        "notAfter": not_after.isoformat(),
    }
    return facts, seconds_left < 0, names


def matches(host: str, names: list[str]) -> bool:
    """The host name (or IP address) is covered by one of the certificate's SANs (RFC 6125: a `*`
    stands for the whole left-most label only)."""
    host = host.strip("[]").rstrip(".").lower()
    if _is_ip(host):
        wanted = ipaddress.ip_address(host)
        return any(_is_ip(n) and ipaddress.ip_address(n) == wanted for n in names)
    for name in names:
        name = name.rstrip(".").lower()
        if name == host:
            return True
        if name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]:
            return True
    return False


def baseline(
    config: dict[str, Any] | None, tls_version: str, certificate: dict[str, Any]
) -> list[dict[str, Any]]:
    """Each rule evaluated here: {rule, value, severity, passed, detail}."""
    config = config or {}
    if config.get("enabled") is False:
        return []
    out: list[dict[str, Any]] = []
    for rule, (default, default_severity) in BASELINE_DEFAULTS.items():
        given = config.get(rule)
        own: dict[str, Any] = given if isinstance(given, dict) else {}
        value = own.get("value", default)
        severity = own.get("severity", default_severity)
        if severity == "ignore":
            continue
        if rule.endswith("TLSVersion"):
            rank = TLS_ORDER.index(tls_version) if tls_version in TLS_ORDER else -1
            passed = rank >= (TLS_ORDER.index(value) if value in TLS_ORDER else 0)
            detail = f"negotiated {tls_version or 'an unknown version'}, {rule} {value}"
        elif rule.endswith("KeySizeBits"):
            size = certificate.get("keySizeBits")
            passed = certificate.get("keyAlgorithm") != "RSA" or (size or 0) >= int(value)
            detail = f"{certificate.get('keyAlgorithm')} key of {size} bits, {rule} {value}"
        else:
            algorithm = str(certificate.get("signatureAlgorithm"))
            passed = algorithm not in WEAK_SIGNATURES
            detail = f"the certificate is signed with {algorithm}"
        out.append({"rule": rule, "value": value, "severity": severity, "passed": passed, "detail": detail})
    return out


def verdict(check: SslCheckDefinition, seen: Seen) -> tuple[Failure | None, str | None]:
    """(the failure the handshake's facts imply, why it is degraded) in production's order of stages."""
    config, cert = check.request.sslConfig, seen.certificate
    host = config.hostname
    days, alert = cert["daysUntilExpiry"], config.alertDaysBeforeExpiry
    if not seen.hostname_verified:
        names = cert["sans"] or "none"
        message = f"the certificate does not cover {host}: its names are {names}"
        return Failure(FailureKind.HOSTNAME_MISMATCH, message, network=False), None
    if seen.expired:
        message = f"the certificate for {host} expired {-days} days ago (notAfter {cert['notAfter']})"
        return Failure(FailureKind.CERTIFICATE_EXPIRED, message, network=False), None
    if seen.chain_trusted is False:
        issuer = cert["issuerCN"] or "an unnamed issuer"
        message = f"the certificate chain for {host} is not trusted ({seen.trust_reason}); issued by {issuer}"
        return Failure(FailureKind.CHAIN_UNTRUSTED, message, network=False), None
    failed = [r for r in seen.baseline if not r["passed"]]
    for rule in failed:
        if rule["severity"] == "fail":
            message = f"security baseline {rule['rule']} failed: {rule['detail']}"
            return Failure(FailureKind.SECURITY_BASELINE, message, network=False), None
    if days <= alert:
        return (
            None,
            f"the certificate for {host} expires in {days} days, within the alertDaysBeforeExpiry of {alert}",
        )
    for rule in failed:  # severity degrade (fail returned above)
        return None, f"security baseline {rule['rule']} (severity degrade): {rule['detail']}"
    return None, None


def transcript(check: SslCheckDefinition, seen: Seen | None, target: str) -> str:
    """The summary line the analysis quotes, then the facts (one per line)."""
    if seen is None:
        return ""
    config, cert = check.request.sslConfig, seen.certificate
    days = cert["daysUntilExpiry"]
    when = f"expired {-days} days ago" if seen.expired else f"expires in {days} days"
    trust = {True: "chain trusted", False: f"chain not trusted ({seen.trust_reason})",
             None: "chain not verified (skipChainValidation)"}[seen.chain_trusted]  # fmt: skip
    name = "hostname verified" if seen.hostname_verified else "hostname not covered"
    head = (
        f"certificate for {config.hostname} {when}; alertDaysBeforeExpiry {config.alertDaysBeforeExpiry}; "
        f"{seen.tls_version} {seen.cipher}; {trust}; {name}"
    )
    lines = [
        head,
        f"subject CN={cert['subjectCN']}, issuer CN={cert['issuerCN']}, SANs: {cert['sans'] or 'none'}",
        f"valid {cert['notBefore']} to {cert['notAfter']}; "
        f"{cert['keyAlgorithm']} {cert['keySizeBits']} bits, "
        f"{cert['signatureAlgorithm']}; sha256 {cert['fingerprintSha256']}",
    ]
    for rule in seen.baseline:
        state = "ok" if rule["passed"] else "violated"
        lines.append(f"baseline {rule['rule']} ({rule['severity']}): {state}, {rule['detail']}")
    return "\n".join(lines)
