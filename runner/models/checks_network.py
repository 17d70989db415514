"""The definitions of the request-level monitors other than API and URL: TCP, DNS, ICMP, TRACEROUTE,
GRPC and SSL (production's ChecksV1*Monitor and their requests). Read through check_definitions.py,
which imports this module when a check of one of these types is first read."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import math
from typing import Any, Literal

from pydantic import Field, field_validator

from runner.models.base import ApiModel, empty_list
from runner.models.checks_common import (
    DNS_PROTOCOLS,
    DNS_RECORD_TYPES,
    ICMP_INTERVAL_S,
    ICMP_REPLY_TIMEOUT_S,
    IP_FAMILIES,
    LATENCY_PROPERTIES,
    TRACEROUTE_PROTOCOLS,
    Assertion,
    CheckDefinition,
    Problem,
    _assertion_problems,
    _no_should_fail,
    _null_is,
    _one_of,
    _Request,
    _text,
)
from runner.models.problems import Loc


def _port_number(port: int | str | None) -> int | None:
    """The port as a number: an int, or a string of digits (a `{{VAR}}` filled in); else None."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.strip().isdigit():
        return int(port.strip())
    return None


def _port_value(value: Any) -> Any:
    """One message for a port of the wrong kind (the int | str union would give one per member)."""
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError("expected a port number from 1 to 65535 (or a {{VARIABLE}} that gives one)")


def _port_problems(port: int | str | None, required: bool) -> list[Problem]:
    if port is None and not required:
        return []
    if isinstance(port, str) and "{{" in port:
        return []  # a variable (ours: production's port is a number): checked again once filled in
    number = _port_number(port)
    if number is None or not 0 < number < 65536:
        return [(("request", "port"), "expected a port number from 1 to 65535")]
    return []


class TcpRequest(_Request):
    hostname: str = ""
    # A number in production's schema; a string here only to carry `{{VAR}}` (ours, docs/checks.md).
    port: int | str | None = None
    data: str | None = None
    body: str | None = None  # production's schema has both; `data` is what the docs and the CLI write
    url: str | None = None
    ipFamily: str = "IPv4"

    _port = field_validator("port", mode="before")(_port_value)

    @property
    def payload(self) -> str:
        return self.data or self.body or ""

    @property
    def port_number(self) -> int | None:
        return _port_number(self.port)


class DnsRequest(_Request):
    query: str = ""
    recordType: str = ""
    nameServer: str | None = None
    port: int | str | None = None  # as TCP's: a string only to carry `{{VAR}}`
    protocol: str = "UDP"

    _port = field_validator("port", mode="before")(_port_value)

    @property
    def port_number(self) -> int | None:
        return _port_number(self.port)


class IcmpRequest(_Request):
    """ChecksV1IcmpRequest; defaults from constructs/icmp-monitor.mdx."""

    hostname: str = ""
    ipFamily: str = "IPv4"
    pingCount: int = 10  # 1-50

    _family = field_validator("ipFamily", mode="before")(_null_is("IPv4"))
    _count = field_validator("pingCount", mode="before")(_null_is(10))


class TracerouteRequest(_Request):
    """ChecksV1TracerouteRequestRead; defaults from constructs/traceroute-monitor.mdx."""

    url: str = ""  # a host name or IP address, no scheme or port
    protocol: str = "TCP"
    port: int | None = None  # None: 443 for TCP, 33434 for UDP and SCTP; unused for ICMP
    ipFamily: str = "IPv4"
    maxHops: int = 30  # 1-64
    maxUnknownHops: int = 15  # 1-30
    ptrLookup: bool = True
    timeout: int = 10  # seconds for the whole trace, 1-30

    _protocol = field_validator("protocol", mode="before")(_null_is("TCP"))
    _family = field_validator("ipFamily", mode="before")(_null_is("IPv4"))
    _hops = field_validator("maxHops", mode="before")(_null_is(30))
    _unknown = field_validator("maxUnknownHops", mode="before")(_null_is(15))
    _ptr = field_validator("ptrLookup", mode="before")(_null_is(True))
    _timeout = field_validator("timeout", mode="before")(_null_is(10))

    @property
    def port_number(self) -> int:
        if self.port is not None:
            return self.port
        return 443 if self.protocol == "TCP" else 33434


class GrpcMetadataItem(ApiModel):
    """ChecksV1GrpcMetadataItem: one key and value sent as gRPC request metadata."""

    key: str = ""
    value: str = ""

    _value = field_validator("value", mode="before")(_text)


class GrpcConfig(ApiModel):
    """ChecksV1GrpcConfigRead; defaults from constructs/grpc-monitor.mdx (mode BEHAVIOR, tls true)."""

    mode: str = "BEHAVIOR"
    tls: bool = True
    metadata: list[GrpcMetadataItem] = Field(default_factory=empty_list)
    service: str | None = None  # HEALTH: the service to ask about ("" or None: the server)
    encoding: str | None = None  # PROTOBUF (or "", null); FLATBUFFERS does not run here
    bfbsContent: str | None = None
    serviceDefinition: str | None = None  # REFLECTION (default) or PROTO_FILE
    method: str | None = None  # BEHAVIOR: package.Service/Method
    protoContent: str | None = None
    message: str | None = None  # BEHAVIOR: the request message as JSON

    _mode = field_validator("mode", mode="before")(_null_is("BEHAVIOR"))
    _tls = field_validator("tls", mode="before")(_null_is(True))
    _metadata = field_validator("metadata", mode="before")(_null_is([]))


class GrpcRequest(_Request):
    """ChecksV1GrpcRequestRead: `url` is a host name or IP address (no scheme, no port)."""

    url: str = ""
    port: int | str | None = None  # a number or a string in production's schema (`{{VAR}}` here)
    ipFamily: str = "IPv4"
    skipSSL: bool = False
    timeout: int | None = None  # seconds for the call (grpc-monitor.mdx: default 60, 1-180)
    grpcConfig: GrpcConfig = Field(default_factory=GrpcConfig)

    _port = field_validator("port", mode="before")(_port_value)
    _family = field_validator("ipFamily", mode="before")(_null_is("IPv4"))
    _skip = field_validator("skipSSL", mode="before")(_null_is(False))
    _config = field_validator("grpcConfig", mode="before")(_null_is({}))

    @property
    def port_number(self) -> int | None:
        return _port_number(self.port)


class SslConfig(ApiModel):
    """ChecksV1SslConfig; defaults from its schema (port 443, handshake 10 s, 20 days)."""

    hostname: str = ""
    port: int | str | None = 443
    serverName: str | None = None  # SNI; hostname when unset
    ipFamily: str = "IPv4"
    skipChainValidation: bool = False
    handshakeTimeoutMs: int = 10_000  # 1000-30000
    alertDaysBeforeExpiry: int = 20  # 1-365: degraded within this many days of expiry
    securityBaseline: dict[str, Any] | None = None
    clientCertificateMode: str | None = None  # auto | explicit: a certificate stored in the account

    _port = field_validator("port", mode="before")(_port_value)
    _family = field_validator("ipFamily", mode="before")(_null_is("IPv4"))
    _skip = field_validator("skipChainValidation", mode="before")(_null_is(False))
    _handshake = field_validator("handshakeTimeoutMs", mode="before")(_null_is(10_000))
    _days = field_validator("alertDaysBeforeExpiry", mode="before")(_null_is(20))

    @property
    def port_number(self) -> int | None:
        return _port_number(self.port if self.port is not None else 443)


class SslRequest(_Request):
    """ChecksV1SslRequest: the target is in `sslConfig` (the construct's `request.hostname` and
    `port` are written there by the CLI's synthesize)."""

    sslConfig: SslConfig = Field(default_factory=SslConfig)
    sslClientCertificateId: str | None = None

    _config = field_validator("sslConfig", mode="before")(_null_is({}))


class TcpCheckDefinition(CheckDefinition):
    checkType: Literal["TCP"] = "TCP"
    request: TcpRequest = Field(default_factory=TcpRequest)

    def field_problems(self) -> list[Problem]:
        r = self.request
        out: list[Problem] = [] if r.hostname else [(("request", "hostname"), "required field is missing")]
        out += _port_problems(r.port, required=True)
        # `url` and `body` are in production's schema, undocumented; the connection goes to hostname
        # and sends data (production's constructs write only those). One that says something else
        # would be ignored here, and a check could pass that production runs otherwise: refused.
        if r.url and r.url != r.hostname:
            leave = "leave url out (or the same as hostname)"
            out.append((("request", "url"), f"TCP checks connect to hostname and port; {leave}"))
        if r.data and r.body and r.data != r.body:
            data_only = "the data to send goes in data; leave body out (or the same as data)"
            out.append((("request", "body"), data_only))
        return out + _one_of("ipFamily", r.ipFamily, IP_FAMILIES) + _assertion_problems("TCP", r.assertions)


class DnsCheckDefinition(CheckDefinition):
    checkType: Literal["DNS"] = "DNS"
    request: DnsRequest = Field(default_factory=DnsRequest)

    def field_problems(self) -> list[Problem]:
        r = self.request
        out: list[Problem] = [] if r.query else [(("request", "query"), "required field is missing")]
        out += _port_problems(r.port, required=False)
        return (
            out
            + _one_of("recordType", r.recordType, DNS_RECORD_TYPES)
            + _one_of("protocol", r.protocol, DNS_PROTOCOLS)
            + _assertion_problems("DNS", r.assertions)
        )


def _at(field: str) -> Loc:
    """`request.pingCount` -> ("request", "pingCount"): a path written here, never parsed from a message."""
    return tuple(field.split("."))


def _range(field: str, value: float, low: float, high: float, *, above_low: bool = False) -> list[Problem]:
    ok = (value > low if above_low else value >= low) and value <= high
    kind = "more than" if above_low else "from"
    return [] if ok else [(_at(field), f"expected a number {kind} {low:g} to {high:g}")]


def _host_only(field: str, host: str) -> list[Problem]:
    """A host name or IP address as ICMP and traceroute monitors take it: no scheme, port or path."""
    if not host:
        return [(_at(field), "required field is missing")]
    if "{{" in host:
        return []  # checked again once its variables are filled in
    bare = host.strip("[]")
    if "/" in host or (":" in bare and host.count(":") == 1) or " " in host:
        return [(_at(field), "a host name or IP address only, without scheme, port or path")]
    return []


def _latency_properties(source: str, assertions: list[Assertion], default: str | None) -> list[Problem]:
    """LATENCY (ICMP) and RESPONSE_TIME (traceroute) read one RTT statistic named by `property`."""
    out: list[Problem] = []
    for i, assertion in enumerate(assertions):
        prop = assertion.property or default
        if assertion.source == source and prop not in LATENCY_PROPERTIES:
            allowed = ", ".join(LATENCY_PROPERTIES)
            out.append((("request", "assertions", i, "property"), f"expected one of {allowed}"))
    return out


class IcmpCheckDefinition(CheckDefinition):
    """ChecksV1IcmpMonitor. Packet loss decides: at degradedPacketLossThreshold % (default 10) the run
    is degraded, at maxPacketLossThreshold % (default 20) it fails (constructs/icmp-monitor.mdx:
    "percentage at which the monitor is marked as ...")."""

    checkType: Literal["ICMP"] = "ICMP"
    request: IcmpRequest = Field(default_factory=IcmpRequest)
    degradedPacketLossThreshold: float | None = None
    maxPacketLossThreshold: float | None = None

    def packet_loss_limits(self) -> tuple[float, float]:
        """(degraded, failed) packet loss in percent, production's defaults where not set."""
        degraded = 10.0 if self.degradedPacketLossThreshold is None else self.degradedPacketLossThreshold
        failed = 20.0 if self.maxPacketLossThreshold is None else self.maxPacketLossThreshold
        return degraded, failed

    def response_limits_ms(self) -> tuple[float, float]:
        """None: ChecksV1IcmpMonitor has no response-time limits (packet loss decides)."""
        return math.inf, math.inf

    def attempt_limit(self) -> tuple[float, str]:
        """The time the pings need: production's 500 ms between them, our 2 s for the last reply and
        3 s for the name lookup."""
        count = max(self.request.pingCount, 1)
        seconds = (count - 1) * ICMP_INTERVAL_S + ICMP_REPLY_TIMEOUT_S + 3.0
        return seconds, f"the {seconds:g} s that {count} pings take ({ICMP_INTERVAL_S * 1000:g} ms apart)"

    def field_problems(self) -> list[Problem]:
        r = self.request
        out = _host_only("request.hostname", r.hostname) + _no_should_fail(self)
        out += _one_of("ipFamily", r.ipFamily, IP_FAMILIES)
        out += _range("request.pingCount", r.pingCount, 1, 50)
        for name in ("degradedPacketLossThreshold", "maxPacketLossThreshold"):
            value = getattr(self, name)
            out += [] if value is None else _range(name, value, 0, 100, above_low=True)
        return (
            out
            + _assertion_problems("ICMP", r.assertions)
            + _latency_properties("LATENCY", r.assertions, default=None)
        )


class TracerouteCheckDefinition(CheckDefinition):
    """ChecksV1TracerouteMonitor; degraded/maxResponseTime apply to the final hop's average RTT."""

    checkType: Literal["TRACEROUTE"] = "TRACEROUTE"
    request: TracerouteRequest = Field(default_factory=TracerouteRequest)

    def attempt_limit(self) -> tuple[float, str]:
        """The trace's `timeout`, then up to 1 s of PTR lookups (ours)."""
        return self.request.timeout + 1.5, f"the traceroute's timeout of {self.request.timeout} s"

    def field_problems(self) -> list[Problem]:
        r = self.request
        out = _host_only("request.url", r.url) + _no_should_fail(self)
        out += _one_of("protocol", r.protocol, TRACEROUTE_PROTOCOLS)
        out += _one_of("ipFamily", r.ipFamily, IP_FAMILIES)
        if r.port is not None:
            out += _range("request.port", r.port, 1, 65535)
        out += _range("request.maxHops", r.maxHops, 1, 64)
        out += _range("request.maxUnknownHops", r.maxUnknownHops, 1, 30)
        out += _range("request.timeout", r.timeout, 1, 30)
        return (
            out
            + _assertion_problems("TRACEROUTE", r.assertions)
            + _latency_properties("RESPONSE_TIME", r.assertions, default="avg")
        )


GRPC_MODES = ("BEHAVIOR", "HEALTH")
GRPC_SERVICE_DEFINITIONS = ("REFLECTION", "PROTO_FILE")
# grpc.health.v1 HealthCheckResponse.ServingStatus: what GRPC_HEALTHCHECK_STATUS compares (a number).
GRPC_HEALTH_STATUSES = {"UNKNOWN": 0, "SERVING": 1, "NOT_SERVING": 2, "SERVICE_UNKNOWN": 3}
# ssl-monitors/configuration.mdx: the properties of the CERTIFICATE and CONNECTION sources.
SSL_CERTIFICATE_PROPERTIES = (
    "daysUntilExpiry", "subjectCN", "issuerCN", "serialNumber", "fingerprintSha256",
    "issuerFingerprintSha256", "keySizeBits", "keyAlgorithm", "signatureAlgorithm", "sans", "selfSigned",
    "isCA",
)  # fmt: skip
SSL_CONNECTION_PROPERTIES = (
    "tlsVersion", "cipherSuite", "hostnameVerified", "chainTrusted", "ocspStapled", "ocspStatus",
    "resolvedIp",
)  # fmt: skip


def _grpc_assertion_problems(assertions: list[Assertion]) -> list[Problem]:
    """grpc-monitors/configuration.mdx: the health status is compared as its number ("the runner does
    not accept string labels"), with EQUALS or NOT_EQUALS only. A label would never pass: refused,
    naming the number."""
    out: list[Problem] = []
    for i, a in enumerate(assertions):
        if a.source != "GRPC_HEALTHCHECK_STATUS":
            continue
        if a.comparison not in ("EQUALS", "NOT_EQUALS"):
            out.append((("request", "assertions", i, "comparison"), "expected EQUALS or NOT_EQUALS"))
        if a.target.strip() not in ("0", "1", "2", "3"):
            number = GRPC_HEALTH_STATUSES.get(a.target.strip().upper())
            hint = f" ({number} for {a.target.strip().upper()})" if number is not None else ""
            numbers = ", ".join(f"{n} {label}" for label, n in GRPC_HEALTH_STATUSES.items())
            out.append((("request", "assertions", i, "target"), f"expected a number: {numbers}{hint}"))
    return out


class GrpcCheckDefinition(CheckDefinition):
    """ChecksV1GrpcMonitor: a gRPC health check (grpc.health.v1 Health/Check) or one unary call
    (BEHAVIOR, the method found through server reflection or the check's protoContent),
    protocols/grpc_monitor.py."""

    checkType: Literal["GRPC"] = "GRPC"
    request: GrpcRequest = Field(default_factory=GrpcRequest)

    def local_support(self, scripts: bool = False) -> str | None:
        reason = super().local_support(scripts)
        if reason is not None:
            return reason
        config = self.request.grpcConfig
        if config.encoding == "FLATBUFFERS":
            return "GRPC checks with encoding FLATBUFFERS cannot run locally; only PROTOBUF does"
        if self.request.skipSSL and config.tls:
            return (
                "GRPC checks with skipSSL cannot run locally (gRPC's TLS always verifies); trust the "
                "server's CA instead (SSL_CERT_FILE or NODE_EXTRA_CA_CERTS)"
            )
        return None

    def attempt_limit(self) -> tuple[float, str]:
        """maxResponseTime, or the call's `timeout` when that is shorter."""
        seconds, text = super().attempt_limit()
        timeout = self.request.timeout
        if timeout is not None and timeout < seconds:
            return float(timeout), f"the timeout of {timeout} s"
        return seconds, text

    def field_problems(self) -> list[Problem]:
        r, config = self.request, self.request.grpcConfig
        out = _host_only("request.url", r.url) + _port_problems(r.port, required=True) + _no_should_fail(self)
        out += _one_of("ipFamily", r.ipFamily, IP_FAMILIES)
        if config.mode not in GRPC_MODES:
            out.append((("request", "grpcConfig", "mode"), f"expected one of {', '.join(GRPC_MODES)}"))
        if config.mode == "BEHAVIOR":
            method = (config.method or "").strip()
            service, _, name = method.rpartition("/")
            if not service or not name or "/" in service.strip("/"):
                out.append((("request", "grpcConfig", "method"),
                            "required in BEHAVIOR mode: package.Service/Method"))  # fmt: skip
            if config.serviceDefinition not in (None, "", *GRPC_SERVICE_DEFINITIONS):
                allowed = ", ".join(GRPC_SERVICE_DEFINITIONS)
                out.append((("request", "grpcConfig", "serviceDefinition"), f"expected one of {allowed}"))
            if config.serviceDefinition == "PROTO_FILE" and not (config.protoContent or "").strip():
                needed = "required with serviceDefinition PROTO_FILE: the .proto file's text"
                out.append((("request", "grpcConfig", "protoContent"), needed))
        if r.timeout is not None:
            out += _range("request.timeout", r.timeout, 1, 180)
        for i, item in enumerate(config.metadata):
            if not item.key:
                out.append((("request", "grpcConfig", "metadata", i, "key"), "required field is missing"))
        return out + _assertion_problems("GRPC", r.assertions) + _grpc_assertion_problems(r.assertions)


class SslCheckDefinition(CheckDefinition):
    """ChecksV1SslMonitor: a TLS handshake with `sslConfig.hostname`, the certificate and the
    connection judged (protocols/ssl_monitor.py). degraded/maxResponseTime apply to the handshake."""

    checkType: Literal["SSL"] = "SSL"
    request: SslRequest = Field(default_factory=SslRequest)

    def local_support(self, scripts: bool = False) -> str | None:
        reason = super().local_support(scripts)
        if reason is not None:
            return reason
        if self.request.sslConfig.clientCertificateMode or self.request.sslClientCertificateId:
            return (
                "SSL checks with a client certificate cannot run locally: the certificate is stored in "
                "the Checkly account (clientCertificateMode, sslClientCertificateId)"
            )
        return None

    def attempt_limit(self) -> tuple[float, str]:
        """The handshake's timeout, and 3 s more for the name lookup and the connection (ours)."""
        ms = self.request.sslConfig.handshakeTimeoutMs
        return ms / 1000 + 3.0, f"the handshakeTimeoutMs of {ms} ms"

    def field_problems(self) -> list[Problem]:
        c = self.request.sslConfig
        at = ("request", "sslConfig")
        out = _host_only("request.sslConfig.hostname", c.hostname) + _no_should_fail(self)
        out += [((*at, "port"), message) for _, message in _port_problems(c.port, required=True)]
        if c.ipFamily not in IP_FAMILIES:
            out.append(((*at, "ipFamily"), f"expected one of {', '.join(IP_FAMILIES)}"))
        out += _range("request.sslConfig.handshakeTimeoutMs", c.handshakeTimeoutMs, 1000, 30000)
        out += _range("request.sslConfig.alertDaysBeforeExpiry", c.alertDaysBeforeExpiry, 1, 365)
        if c.securityBaseline is not None and not isinstance(c.securityBaseline, dict):
            out.append(((*at, "securityBaseline"), "expected an object"))
        for i, a in enumerate(self.request.assertions):
            allowed = {"CERTIFICATE": SSL_CERTIFICATE_PROPERTIES, "CONNECTION": SSL_CONNECTION_PROPERTIES}
            props = allowed.get(a.source)
            if props is not None and a.property not in props:
                out.append((("request", "assertions", i, "property"), f"expected one of {', '.join(props)}"))
        return out + _assertion_problems("SSL", self.request.assertions)
