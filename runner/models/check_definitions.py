"""Check definitions as production's GET /v1/checks/{id} returns them (ChecksV1Check).

Lenient like every response model: unknown fields and values are kept, never fatal, so a definition
exported from a real account always loads. A definition written by hand (a world file) is read strictly
on top of that: `hand_written_problems()` names each value of the wrong type and each key of a request
that production does not know, so a typo (`assertion:`, `path:` for `property:`) is an error, not an
assertion quietly dropped. Whether a definition can run on this machine is a separate
question, answered by `local_support()` (its check type) and `problems()` (its fields): API, URL, TCP,
DNS, ICMP, TRACEROUTE, GRPC, SSL, BROWSER, MULTI_STEP and PLAYWRIGHT checks run locally; every other
type (AGENTIC, HEARTBEAT, ...), and an API check with a setup or teardown script where Node is missing,
is recognised and reported as not runnable here, HEARTBEAT and AGENTIC with their own reason.
Which types run here, how, and by which protocol of the engine is said once, in CHECK_KINDS.

Sources: production's OpenAPI (ChecksV1ApiCheck, ChecksV1ApiRequest, ChecksV1UrlRequest,
ChecksV1TcpRequest, ChecksV1DnsRequest, ChecksV1IcmpMonitor, ChecksV1IcmpRequest,
ChecksV1TracerouteMonitor, ChecksV1TracerouteRequestRead and their assertion schemas) and its construct
docs (constructs/api-check.mdx, url-monitor.mdx, tcp-monitor.mdx, dns-monitor.mdx, icmp-monitor.mdx,
traceroute-monitor.mdx) for the defaults; ChecksV1GrpcMonitor, ChecksV1GrpcRequestRead,
ChecksV1GrpcConfigRead, ChecksV1SslMonitor, ChecksV1SslRequest, ChecksV1SslConfig with
constructs/grpc-monitor.mdx and ssl-monitor.mdx.
"""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import math
from collections.abc import Mapping
from enum import Enum
from functools import cache
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, Discriminator, Field, Tag, TypeAdapter, ValidationError, field_validator

from runner.models.base import ApiModel, empty_list
from runner.models.problems import Loc, clean_loc, error_message, format_loc, model_at, unknown_key_message
from runner.models.test_command import DEFAULT_TEST_COMMAND, TestCommandError, parse_test_command


class Runs(Enum):
    """How a check of a type runs on this machine."""

    REQUEST = "request"  # its `request` is performed by a request-level protocol
    SCRIPT = "script"  # its `script` (Playwright Test) runs with Node, Playwright and Chromium
    SUITE = "suite"  # the user's own Playwright project, run where it is (a Playwright check suite)


class CheckKind(NamedTuple):
    """What this version says of one checkType, once: whether and how it runs here (None: never,
    `reason` says why in production's terms), the engine's protocol module that runs it
    (runner/checks/protocols/), whether that protocol queues its own attempts, and whether production
    runs it in a browser (its analyses read a browser's report)."""

    runs: Runs | None
    protocol: str | None = None
    self_queued: bool = False
    browser: bool = False
    reason: str | None = None


# Every check type this version knows, the one place that says whether it runs here. The engine
# (protocols/__init__.py), the checks file and world loaders (checks/declared.py, checksfile.py),
# `checks export` and the analysers read it; tests/test_check_kinds.py holds them to it.
CHECK_KINDS: dict[str, CheckKind] = {
    "API": CheckKind(Runs.REQUEST, "http"),
    "URL": CheckKind(Runs.REQUEST, "http"),
    "TCP": CheckKind(Runs.REQUEST, "tcp"),
    "DNS": CheckKind(Runs.REQUEST, "dns"),
    "ICMP": CheckKind(Runs.REQUEST, "icmp"),
    "TRACEROUTE": CheckKind(Runs.REQUEST, "traceroute"),
    "GRPC": CheckKind(Runs.REQUEST, "grpc_monitor"),
    "SSL": CheckKind(Runs.REQUEST, "ssl_monitor"),
    # At most TESTSESSION_BROWSER_CONCURRENCY browsers at once, checks ready together share one run.
    "BROWSER": CheckKind(Runs.SCRIPT, "browser", self_queued=True, browser=True),
    "MULTI_STEP": CheckKind(Runs.SCRIPT, "browser", self_queued=True, browser=True),
    "PLAYWRIGHT": CheckKind(Runs.SUITE, "playwright", browser=True),
    # Types that never run here, in production's terms (ours: the wording; the facts are its docs').
    # heartbeat-monitors/overview.mdx: "heartbeat monitors work passively".
    "HEARTBEAT": CheckKind(
        None,
        reason="HEARTBEAT checks cannot run locally: a heartbeat monitor is passive, production waits for "
        "your scheduled job to ping its URL within the period and grace and alerts when no ping comes; "
        "there is no request to make against a build (ping it from the job itself)",
    ),
    # agentic-checks/overview.mdx: "Checkly runs the agent in a browser-capable runtime".
    "AGENTIC": CheckKind(
        None,
        browser=True,
        reason="AGENTIC checks cannot run locally: production's AI agent carries out the check's prompt "
        "(and keeps the script it learned) in Checkly's own runtime, and no such agent runs here; a "
        "BROWSER or MULTI_STEP check with the same steps can",
    ),
}
NEVER_HERE = CheckKind(None)  # a type this version does not know (one production adds later)


def kind_of(check_type: str | None) -> CheckKind:
    return CHECK_KINDS.get(check_type or "", NEVER_HERE)


def _types(runs: Runs) -> tuple[str, ...]:
    return tuple(name for name, kind in CHECK_KINDS.items() if kind.runs is runs)


# The table's lists, by how they run.
LOCAL_CHECK_TYPES = _types(Runs.REQUEST)
SCRIPT_CHECK_TYPES = _types(Runs.SCRIPT)
SUITE_CHECK_TYPES = _types(Runs.SUITE)
RUNNABLE_CHECK_TYPES = (*LOCAL_CHECK_TYPES, *SCRIPT_CHECK_TYPES, *SUITE_CHECK_TYPES)
NOT_RUNNABLE_REASONS: dict[str, str] = {name: k.reason for name, k in CHECK_KINDS.items() if k.reason}
# A suite's `browsers` (production installs them: the browsers of the config's projects).
SUITE_BROWSERS = ("chromium", "firefox", "webkit")
# Production's runtimes (runtimeId; OpenAPI ChecksV1BrowserCheck.runtimeId): null is the account's active one.
RUNTIME_IDS = ("2026.04", "2025.04", "2024.09", "2024.02", "2023.09", "2023.02", "2022.10")

# (degradedResponseTime, maxResponseTime) in ms when a definition leaves them out or null: the
# construct docs' defaults (api-check.mdx 10000/20000, url-monitor.mdx 3000/5000, tcp-monitor.mdx
# 4000/5000, dns-monitor.mdx 500/1000).
DEFAULT_RESPONSE_TIMES_MS: dict[str, tuple[float, float]] = {
    "API": (10_000, 20_000),
    "URL": (3_000, 5_000),
    "TCP": (4_000, 5_000),
    "DNS": (500, 1_000),
    # traceroute-monitor.mdx: final-hop avg RTT (traceroute-monitors/configuration.mdx says 3000/5000;
    # the construct's table, what the CLI writes, says 10000/20000: that one). ICMP: none apply
    # (ChecksV1IcmpMonitor has no response-time limits; packet loss decides, icmp.py).
    "TRACEROUTE": (10_000, 20_000),
    # grpc-monitor.mdx 10000/20000; ssl-monitor.mdx 3000/10000 (the TLS handshake's time).
    "GRPC": (10_000, 20_000),
    "SSL": (3_000, 10_000),
}

COMPARISONS = (
    "EQUALS", "NOT_EQUALS", "HAS_KEY", "NOT_HAS_KEY", "HAS_VALUE", "NOT_HAS_VALUE", "IS_EMPTY",
    "NOT_EMPTY", "GREATER_THAN", "LESS_THAN", "CONTAINS", "NOT_CONTAINS", "IS_NULL", "NOT_NULL",
)  # fmt: skip
_TCP_COMPARISONS = (
    "EQUALS", "NOT_EQUALS", "IS_EMPTY", "NOT_EMPTY", "LESS_THAN", "GREATER_THAN", "CONTAINS", "NOT_CONTAINS",
)  # fmt: skip
# Which sources and comparisons each check type's assertion schema allows.
ASSERTION_SOURCES: dict[str, tuple[str, ...]] = {
    "API": ("STATUS_CODE", "JSON_BODY", "HEADERS", "TEXT_BODY", "RESPONSE_TIME"),
    "URL": ("STATUS_CODE",),
    "TCP": ("RESPONSE_DATA", "RESPONSE_TIME"),
    "DNS": ("RESPONSE_CODE", "TEXT_ANSWER", "JSON_ANSWER", "RESPONSE_TIME"),
    "ICMP": ("LATENCY", "JSON_RESPONSE"),
    "TRACEROUTE": ("RESPONSE_TIME", "HOP_COUNT", "PACKET_LOSS"),
    # ChecksV1GrpcAssertionRead, ChecksV1SslAssertion.
    "GRPC": (
        "RESPONSE_TIME",
        "GRPC_RESPONSE",
        "TEXT_BODY",
        "GRPC_METADATA",
        "GRPC_HEALTHCHECK_STATUS",
        "GRPC_STATUS_CODE",
    ),
    "SSL": ("CERTIFICATE", "CONNECTION", "RESPONSE_TIME", "JSON_RESPONSE", "TEXT_RESPONSE"),
}
_ICMP_COMPARISONS = (
    "EQUALS", "NOT_EQUALS", "IS_EMPTY", "NOT_EMPTY", "GREATER_THAN", "LESS_THAN", "CONTAINS", "NOT_CONTAINS",
    "IS_NULL", "NOT_NULL",
)  # fmt: skip
ASSERTION_COMPARISONS: dict[str, tuple[str, ...]] = {
    "API": COMPARISONS,
    "URL": ("EQUALS", "NOT_EQUALS", "LESS_THAN", "GREATER_THAN"),
    "TCP": _TCP_COMPARISONS,
    "DNS": COMPARISONS,
    "ICMP": _ICMP_COMPARISONS,
    # ChecksV1TracerouteAssertionRead: any string; the builders write numbers: ICMP's list (ours).
    "TRACEROUTE": _ICMP_COMPARISONS,
    "GRPC": COMPARISONS,  # the CLI's grpc-assertion-validation.ts: the shared list, for every source
    # ChecksV1SslAssertion: any string; ssl-monitors/configuration.mdx lists the comparisons of each
    # property's type (number, string, boolean ...): all of them are in ICMP's list.
    "SSL": _ICMP_COMPARISONS,
}
# LATENCY and RESPONSE_TIME (traceroute) properties: RTT statistics in ms.
LATENCY_PROPERTIES = ("avg", "min", "max", "stdDev")
TRACEROUTE_PROTOCOLS = ("TCP", "ICMP", "UDP", "SCTP")
# icmp-monitors/overview.mdx: "a 500 ms interval between each ping"; the wait for a reply is ours.
ICMP_INTERVAL_S = 0.5
ICMP_REPLY_TIMEOUT_S = 2.0
# OPTIONS: the construct doc lists it, the OpenAPI enum does not; both are accepted.
HTTP_METHODS = ("GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS")
BODY_TYPES = ("JSON", "FORM", "RAW", "GRAPHQL", "NONE")
IP_FAMILIES = ("IPv4", "IPv6")
DNS_RECORD_TYPES = ("A", "AAAA", "CNAME", "MX", "TXT", "SOA", "NS", "HTTPS")
DNS_PROTOCOLS = ("UDP", "TCP")
SCRIPT_FIELDS = ("localSetupScript", "localTearDownScript", "setupSnippetId", "tearDownSnippetId")
# (field path from the check, what is allowed): a problem of a definition, typed, never parsed back.
Problem = tuple[Loc, str]


def _text(value: Any) -> Any:
    """null -> "", and a number or true/false as the CLI's builders write it (`target.toString()`)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


class KeyValue(ApiModel):
    """A header or query parameter (ChecksV1KeyValue)."""

    key: str = ""
    value: str = ""
    locked: bool = False

    _value = field_validator("value", mode="before")(_text)


class SharedFileRef(ApiModel):
    """A file of a Checkly project that a script imports (its path in the project and its text)."""

    path: str = ""
    content: str = ""


class CheckEnvironmentVariable(ApiModel):
    """ChecksV1EnvironmentVariable: `value` may be null (a secret production does not reveal)."""

    key: str = ""
    value: str | None = None
    locked: bool = False
    secret: bool = False


class BasicAuth(ApiModel):
    username: str = ""
    password: str = ""

    _values = field_validator("username", "password", mode="before")(_text)


class Assertion(ApiModel):
    """{source, comparison, property, target, regex}; every field a string on the wire."""

    source: str = ""
    comparison: str = ""
    property: str = ""
    target: str = ""
    regex: str | None = None

    _texts = field_validator("property", "target", mode="before")(_text)


class _Request(ApiModel):
    assertions: list[Assertion] = Field(default_factory=empty_list)

    @field_validator("assertions", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        return [] if value is None else value


class ApiRequest(_Request):
    method: str = "GET"
    url: str = ""
    followRedirects: bool = True  # api-check.mdx: default true
    skipSSL: bool = False
    ipFamily: str = "IPv4"
    body: str = ""
    bodyType: str = "NONE"
    headers: list[KeyValue] = Field(default_factory=empty_list)
    queryParameters: list[KeyValue] = Field(default_factory=empty_list)
    basicAuth: BasicAuth | None = None

    _body = field_validator("body", mode="before")(_text)

    @field_validator("headers", "queryParameters", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, dict):  # an older shape: {name: value}
            return [{"key": k, "value": v} for k, v in value.items()]
        return value

    @field_validator("followRedirects", "skipSSL", mode="before")
    @classmethod
    def _null_flag(cls, value: Any, info: Any) -> Any:
        if value is None:
            return info.field_name == "followRedirects"
        return value


class UrlRequest(_Request):
    method: str = "GET"  # production: always GET
    url: str = ""
    followRedirects: bool = True
    skipSSL: bool = False
    ipFamily: str = "IPv4"


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


def _null_is(default: Any) -> Any:
    """A before-validator: production's nullable field left null means its documented default."""

    def validator(cls: Any, value: Any) -> Any:
        return default if value is None else value

    return classmethod(validator)


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


class CheckDefinition(ApiModel):
    """The fields every check type shares; the request stays as production sent it."""

    id: str | None = None
    name: str = ""
    checkType: str = ""
    activated: bool | None = None
    shouldFail: bool = False
    tags: list[str] = Field(default_factory=empty_list)
    degradedResponseTime: float | None = None
    maxResponseTime: float | None = None
    environmentVariables: list[CheckEnvironmentVariable] = Field(default_factory=empty_list)
    request: Any = None
    localSetupScript: str | None = None
    localTearDownScript: str | None = None
    setupSnippetId: int | str | None = None
    tearDownSnippetId: int | str | None = None
    # A Checkly project's scripts (runner/checkly): their paths in the project, the files they import
    # and the project's folder (its node_modules). Ours, next to production's fields.
    setupScriptPath: str | None = None
    tearDownScriptPath: str | None = None
    sharedFiles: list[SharedFileRef] = Field(default_factory=empty_list)
    projectDir: str | None = None
    # A browser check's Playwright settings as the CLI deploys them ({timeout, use: {baseURL, ...}}):
    # for the browser runner (issue 29) to honour.
    playwrightConfig: dict[str, Any] | None = None

    # Set (parse_check_definition(data, checked=True)) on a definition made from data whose
    # definition_problems() were found empty when its check loaded (declared.CheckPlan): problems()
    # does not find them again at each attempt. A slot, not a private attribute (a dict per model);
    # a changed copy (model_copy: a protocol's fill) does not carry it and is looked at again.
    __slots__ = ("_checked",)

    @field_validator("environmentVariables", "tags", "sharedFiles", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("shouldFail", mode="before")
    @classmethod
    def _null_false(cls, value: Any) -> Any:
        return False if value is None else value

    def local_support(self, scripts: bool = False) -> str | None:
        """None when this check can run on this machine, else why not (one sentence). `scripts`:
        Node is there to run an API check's setup and teardown scripts (runner/checks/scripts.py)."""
        if self.checkType in NOT_RUNNABLE_REASONS:
            return NOT_RUNNABLE_REASONS[self.checkType]
        if self.checkType not in RUNNABLE_CHECK_TYPES:
            kind = self.checkType or "(no checkType)"
            runnable = ", ".join(RUNNABLE_CHECK_TYPES[:-1]) + f" and {RUNNABLE_CHECK_TYPES[-1]}"
            return f"{kind} checks cannot run locally: only {runnable} checks can"
        used = self.script_fields()
        if used and not scripts:
            return f"checks with setup or teardown scripts cannot run locally ({', '.join(used)})"
        snippets = [name for name in used if name.endswith("SnippetId")]
        if snippets:  # a snippet lives in the account, by id: its text is not in the definition
            return f"checks with setup or teardown snippets cannot run locally ({', '.join(snippets)})"
        return None

    def script_fields(self) -> list[str]:
        """The setup and teardown script fields it gives: only then is Node looked for."""
        return [name for name in SCRIPT_FIELDS if getattr(self, name) not in (None, "")]

    def field_problems(self) -> list[Problem]:
        """(field path, what is allowed) for each field that keeps a runnable type from running."""
        return []

    def retries_apply(self) -> bool:
        """Whether a retry strategy (the check's or the session's) retries a failed run."""
        return True

    def definition_problems(self) -> list[Problem]:
        """Every field's problems: the files a script imports (any type may carry them), then the type's."""
        return [*_file_path_problems(self), *self.field_problems()]

    def problems(self) -> list[str]:
        """definition_problems() as `field.path: what is allowed` lines (none for a definition its
        load already found none in: `_checked`)."""
        if getattr(self, "_checked", False):
            return []
        return [f"{format_loc(loc)}: {message}" for loc, message in self.definition_problems()]

    def attempt_limit(self) -> tuple[float, str]:
        """How long one attempt may take, and how its timeout names that bound: maxResponseTime (a type
        whose limits judge something else than the attempt's time says its own)."""
        _, max_ms = self.response_limits_ms()
        return max_ms / 1000, f"the maxResponseTime of {max_ms:g} ms"

    def response_limits_ms(self) -> tuple[float, float]:
        """(degradedResponseTime, maxResponseTime) in ms, production's defaults where not set."""
        degraded, maximum = DEFAULT_RESPONSE_TIMES_MS.get(self.checkType, DEFAULT_RESPONSE_TIMES_MS["API"])
        if self.degradedResponseTime is not None:
            degraded = self.degradedResponseTime
        if self.maxResponseTime is not None:
            maximum = self.maxResponseTime
        return degraded, maximum


MAX_NAME_BYTES = 255  # a file or folder name's bound on Linux, macOS and Windows file systems
MAX_PATH_BYTES = 1024  # a path's, well inside every system's (macOS: 1024)


def _path_problem(path: str) -> str | None:
    """Why a file's path in a Checkly project cannot be written as a file on this machine; None: it can
    (a path that leaves the project is skipped when the files are written, as before)."""
    bad = next((c for c in path if ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None:
        return f"contains the character U+{ord(bad):04X}; a path is printable text without control characters"
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return f"{len(path.encode('utf-8'))} bytes long; a path is at most {MAX_PATH_BYTES} bytes"
    long = next((part for part in _parts(path) if len(part.encode("utf-8")) > MAX_NAME_BYTES), None)
    if long is not None:
        size = len(long.encode("utf-8"))
        return f"has a name of {size} bytes; a file or folder name is at most {MAX_NAME_BYTES} bytes"
    return None


def _parts(path: str) -> tuple[str, ...]:
    """The names of a path as the script runners write it (a Windows-made path has backslashes)."""
    return tuple(part for part in path.replace("\\", "/").split("/") if part not in ("", "."))


def _file_path_problems(check: CheckDefinition) -> list[Problem]:
    """sharedFiles and the script paths: each path a file can have, and no path both a file and the
    folder of another (bad names used to fail each attempt as "internal error of the local executor")."""
    out: list[Problem] = []
    files: dict[tuple[str, ...], Loc] = {}
    folders: dict[tuple[str, ...], Loc] = {}
    named: list[tuple[Loc, str]] = [
        ((name,), value)
        for name in ("scriptPath", "setupScriptPath", "tearDownScriptPath")
        if isinstance(value := getattr(check, name, None), str)
    ]
    named += [(("sharedFiles", index, "path"), f.path) for index, f in enumerate(check.sharedFiles)]
    for loc, path in named:
        problem = _path_problem(path)
        if problem is not None:
            out.append((loc, problem))
            continue
        if loc[0] != "sharedFiles":
            continue  # a script path names the script's folder; its file is written under our own name
        parts = _parts(path)
        files.setdefault(parts, loc)
        for end in range(1, len(parts)):
            folders.setdefault(parts[:end], loc)
    for parts, loc in files.items():
        if parts in folders:
            other = format_loc(folders[parts])
            out.append(
                (loc, f"{'/'.join(parts)} is a file here and a folder in {other}; a path is one or the other")
            )
    return out


def _assertion_problems(check_type: str, assertions: list[Assertion]) -> list[Problem]:
    sources, comparisons = ASSERTION_SOURCES[check_type], ASSERTION_COMPARISONS[check_type]
    out: list[Problem] = []
    for i, assertion in enumerate(assertions):
        if assertion.source not in sources:
            out.append((("request", "assertions", i, "source"), f"expected one of {', '.join(sources)}"))
        if assertion.comparison not in comparisons:
            allowed = ", ".join(comparisons)
            out.append((("request", "assertions", i, "comparison"), f"expected one of {allowed}"))
    return out


def _one_of(field: str, value: str, allowed: tuple[str, ...]) -> list[Problem]:
    return [] if value in allowed else [(("request", field), f"expected one of {', '.join(allowed)}")]


def _http_url(url: str) -> list[Problem]:
    if not url:
        return [(("request", "url"), "required field is missing")]
    # Variables may make the scheme ({{BASE_URL}}/health): checked again after substitution.
    if "{{" in url or url.lower().startswith(("http://", "https://")):
        return []
    return [(("request", "url"), "must start with http:// or https://")]


class ApiCheckDefinition(CheckDefinition):
    checkType: Literal["API"] = "API"
    request: ApiRequest = Field(default_factory=ApiRequest)

    def field_problems(self) -> list[Problem]:
        r = self.request
        return [
            *_http_url(r.url),
            *_one_of("method", r.method.upper(), HTTP_METHODS),
            *_one_of("bodyType", r.bodyType, BODY_TYPES),
            *_one_of("ipFamily", r.ipFamily, IP_FAMILIES),
            *_assertion_problems("API", r.assertions),
        ]


# --- a plain API request: known without a parse to have no problem ------------------------------------
#
# A checks file of thousands of API checks is mostly requests like `{method: GET, url: ..., assertions:
# [{source: STATUS_CODE, comparison: EQUALS, target: "200"}]}`. `plain_api_request` says, in a few
# microseconds, that such a request is one ApiCheckDefinition parses and finds nothing wrong with:
# only fields of ApiRequest, each of its exact type (no conversion a validator would make) and a value
# `field_problems` accepts. Anything else (a number for a target, a header given as a mapping, a
# field left to production) is not plain: the caller reads it the full way, with its messages.
_PLAIN_REQUEST_TYPES: dict[str, type] = {
    "method": str, "url": str, "body": str, "bodyType": str, "ipFamily": str,
    "followRedirects": bool, "skipSSL": bool, "assertions": list, "headers": list, "queryParameters": list,
}  # fmt: skip
_PLAIN_ASSERTION_TYPES: dict[str, tuple[type, ...]] = {
    "source": (str,), "comparison": (str,), "property": (str,), "target": (str,), "regex": (str, type(None)),
}  # fmt: skip
_PLAIN_PAIR_TYPES: dict[str, tuple[type, ...]] = {"key": (str,), "value": (str,), "locked": (bool,)}


def plain_api_request(request: Any) -> bool:
    """True when `request` is an API check's request that parses as it is, without a problem
    (hand_written_problems and ApiCheckDefinition.field_problems would find none); False: read it
    the full way."""
    if type(request) is not dict:
        return False
    for key, value in request.items():
        if _PLAIN_REQUEST_TYPES.get(key) is not type(value):
            return False
    url = request.get("url")
    if not url or not ("{{" in url or url.lower().startswith(("http://", "https://"))):  # as _http_url
        return False
    if request.get("method", "GET").upper() not in _PLAIN_METHODS:
        return False
    if request.get("bodyType", "NONE") not in _PLAIN_BODY_TYPES:
        return False
    if request.get("ipFamily", "IPv4") not in _PLAIN_IP_FAMILIES:
        return False
    for assertion in request.get("assertions", ()):
        if type(assertion) is not dict:
            return False
        for key, value in assertion.items():
            if type(value) not in _PLAIN_ASSERTION_TYPES.get(key, ()):
                return False
        if assertion.get("source") not in _API_SOURCES or assertion.get("comparison") not in _API_COMPARISONS:
            return False
    for pair in (*request.get("headers", ()), *request.get("queryParameters", ())):
        if type(pair) is not dict:
            return False
        for key, value in pair.items():
            if type(value) not in _PLAIN_PAIR_TYPES.get(key, ()):
                return False
    return True


# The same lists as sets (a membership test per field of thousands of checks).
_PLAIN_METHODS = frozenset(HTTP_METHODS)
_PLAIN_BODY_TYPES = frozenset(BODY_TYPES)
_PLAIN_IP_FAMILIES = frozenset(IP_FAMILIES)
_API_SOURCES = frozenset(ASSERTION_SOURCES["API"])
_API_COMPARISONS = frozenset(ASSERTION_COMPARISONS["API"])


class UrlCheckDefinition(CheckDefinition):
    checkType: Literal["URL"] = "URL"
    request: UrlRequest = Field(default_factory=UrlRequest)

    def field_problems(self) -> list[Problem]:
        r = self.request
        return [
            *_http_url(r.url),
            # Always GET (production's schema: enum [GET]); another method would be sent as GET.
            *_one_of("method", r.method.upper(), ("GET",)),
            *_one_of("ipFamily", r.ipFamily, IP_FAMILIES),
            *_assertion_problems("URL", r.assertions),
        ]


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


class ScriptCheckDefinition(CheckDefinition):
    """A BROWSER or MULTI_STEP check: its Playwright Test `script` and the runtime it was written for."""

    script: str | None = None
    runtimeId: str | None = None
    scriptPath: str | None = None  # the script's path in its Checkly project: its imports are relative to it

    def field_problems(self) -> list[Problem]:
        out: list[Problem] = (
            []
            if (self.script or "").strip()
            else [(("script",), "required field is missing (the Playwright Test code)")]
        )
        if self.runtimeId is not None and self.runtimeId not in RUNTIME_IDS:
            out.append((("runtimeId",), f"expected one of {', '.join(RUNTIME_IDS)} or null"))
        return out + _playwright_config_problems(self.playwrightConfig)

    def response_limits_ms(self) -> tuple[float, float]:
        """None: production's browser checks have no response limits, only the type's run limit (the
        world's maxRunSeconds, 240 s as production's); a world's `never` leaves the run unbounded."""
        return math.inf, math.inf


class BrowserCheckDefinition(ScriptCheckDefinition):
    checkType: Literal["BROWSER"] = "BROWSER"


class MultiStepCheckDefinition(ScriptCheckDefinition):
    checkType: Literal["MULTI_STEP"] = "MULTI_STEP"


# What production's browser checks take of a `playwrightConfig` (browser-checks/playwright-support.mdx,
# "Supported configuration options"); the rest production does not read, and neither do we.
PLAYWRIGHT_CONFIG_KEYS = ("timeout", "use", "expect")
PLAYWRIGHT_USE_KEYS = (
    "baseURL", "colorScheme", "geolocation", "locale", "permissions", "timezoneId", "viewport",
    "deviceScaleFactor", "hasTouch", "isMobile", "javaScriptEnabled", "extraHTTPHeaders", "httpCredentials",
    "ignoreHTTPSErrors", "offline", "actionTimeout", "navigationTimeout", "testIdAttribute",
    "connectOptions", "contextOptions", "bypassCSP", "proxy",
)  # fmt: skip


def _playwright_config_problems(config: dict[str, Any] | None) -> list[Problem]:
    if config is None:
        return []
    out: list[Problem] = []
    timeout = config.get("timeout")
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if timeout is not None and not (number and timeout >= 0):
        out.append((("playwrightConfig", "timeout"), "expected a number of milliseconds, 0 or more"))
    for key in ("use", "expect"):
        if config.get(key) is not None and not isinstance(config[key], dict):
            out.append((("playwrightConfig", key), "expected an object"))
    return out


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


def _no_should_fail(check: CheckDefinition) -> list[Problem]:
    """ICMP and traceroute monitors carry shouldFail, but production's docs do not say what it does
    to them: run as if it were unset, a check could pass here that production fails. Refused (ours);
    so is a Playwright check suite's (its schema has none)."""
    if not check.shouldFail:
        return []
    return [(("shouldFail",), f"not run here for {check.checkType} checks (production's docs do not say "
             "what it does to them); leave it out or false")]  # fmt: skip


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


class PlaywrightCheckDefinition(CheckDefinition):
    """ChecksV1PlaywrightCheck: a Playwright check suite, the user's Playwright project run by its
    testCommand in workingDir (defaults from the OpenAPI). Production installs the project's
    dependencies with installCommand and runs Playwright there; here the project is the user's own
    folder, never installed into (protocols/playwright)."""

    checkType: Literal["PLAYWRIGHT"] = "PLAYWRIGHT"
    testCommand: str = DEFAULT_TEST_COMMAND
    workingDir: str | None = None
    installCommand: str = ""
    browsers: list[str] = Field(default_factory=lambda: ["chromium"])
    playwrightVersion: str | None = None

    _command = field_validator("testCommand", mode="before")(_null_is(DEFAULT_TEST_COMMAND))
    _install = field_validator("installCommand", mode="before")(_null_is(""))
    _browsers = field_validator("browsers", mode="before")(_null_is(["chromium"]))

    def field_problems(self) -> list[Problem]:
        out = _no_should_fail(self)  # not in ChecksV1PlaywrightCheck at all
        try:
            parse_test_command(self.testCommand)
        except TestCommandError as exc:
            out.append((("testCommand",), str(exc)))
        # Firefox and WebKit are known: whether their builds are installed is the run's to say
        # (protocols/playwright: the check fails closed naming the install command, the rest runs).
        if not self.browsers or any(b not in SUITE_BROWSERS for b in self.browsers):
            out.append((("browsers",), f"expected a list of {', '.join(SUITE_BROWSERS)}"))
        return out

    def response_limits_ms(self) -> tuple[float, float]:
        """None: a suite has no response limits, only the type's run limit (the world's
        maxRunSeconds, 1800 s as production's 30 minutes)."""
        return math.inf, math.inf

    def retries_apply(self) -> bool:
        """configuration.mdx: "Checkly retry strategies do not apply to Playwright Check Suites"
        (Playwright's own `retries` do)."""
        return False


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


def _kind(value: Any) -> str:
    check_type = value.get("checkType") if isinstance(value, dict) else getattr(value, "checkType", None)
    return check_type if check_type in RUNNABLE_CHECK_TYPES else "OTHER"


# The definition model of each check type (`_kind`'s answer).
DEFINITION_MODELS: dict[str, type[CheckDefinition]] = {
    "API": ApiCheckDefinition,
    "URL": UrlCheckDefinition,
    "TCP": TcpCheckDefinition,
    "DNS": DnsCheckDefinition,
    "BROWSER": BrowserCheckDefinition,
    "MULTI_STEP": MultiStepCheckDefinition,
    "ICMP": IcmpCheckDefinition,
    "TRACEROUTE": TracerouteCheckDefinition,
    "PLAYWRIGHT": PlaywrightCheckDefinition,
    "GRPC": GrpcCheckDefinition,
    "SSL": SslCheckDefinition,
    "OTHER": CheckDefinition,
}


@cache
def _adapter(kind: str) -> TypeAdapter[CheckDefinition]:
    """The tagged union of one type, built the first time a definition of that type is read: one
    union of all ten built them all at import (a third of the models' start-up), where a run reads a
    type or two. Errors are the union's, the tag first in their location (`API.request.url`)."""
    union: Any = Annotated[Annotated[DEFINITION_MODELS[kind], Tag(kind)], Discriminator(_kind)]
    adapter: TypeAdapter[CheckDefinition] = TypeAdapter(union)
    return adapter


def parse_check_definition(data: Any, *, checked: bool = False) -> CheckDefinition:
    """The typed definition of one check from production's JSON (pydantic.ValidationError if broken).
    `checked`: the caller found definition_problems() of this same data empty (a check's plan, made
    when it loaded): problems() answers none without looking again."""
    definition = _adapter(_kind(data)).validate_python(data)
    if checked:
        object.__setattr__(definition, "_checked", True)
    return definition


# --- definitions written by hand (a world file) ---------------------------------------------------

# The request of each type that runs here. Their fields are exactly production's (OpenAPI
# ChecksV1ApiRequest, ChecksV1UrlRequest, ChecksV1TcpRequest, ChecksV1DnsRequest, ChecksV1IcmpRequest,
# ChecksV1TracerouteRequestRead, with ChecksV1ApiAssertion & co., ChecksV1KeyValue, ChecksV1BasicAuth;
# tests/test_world_definitions.py holds production's lists), so a definition `checks export` wrote,
# fields we do not use included, passes, and any other key is a typo.
REQUEST_MODELS: dict[str, type[ApiModel]] = {
    "API": ApiRequest,
    "URL": UrlRequest,
    "TCP": TcpRequest,
    "DNS": DnsRequest,
    "ICMP": IcmpRequest,
    "TRACEROUTE": TracerouteRequest,
    "GRPC": GrpcRequest,
    "SSL": SslRequest,
}
# What a key that looks like none of the allowed ones usually means, first allowed one wins.
_LIKELY: dict[str, tuple[str, ...]] = {
    "path": ("property",),
    "jsonPath": ("property",),
    "jsonpath": ("property",),
    "field": ("property",),
    "header": ("property", "headers"),
    "expected": ("target",),
    "value": ("target",),
    "operator": ("comparison",),
    "comparator": ("comparison",),
    "type": ("source", "recordType"),
    "params": ("queryParameters",),
    "query": ("queryParameters",),
    "auth": ("basicAuth",),
    "host": ("hostname", "nameServer"),
    "server": ("nameServer",),
    "name": ("key",),
}


def hand_written_problems(data: Mapping[str, Any], parsed: bool = False) -> list[tuple[Loc, str]]:
    """(field path, what is allowed) for each thing that keeps `data`, a definition written by hand
    in production's shape, from meaning what it says: a value of the wrong type anywhere (`url: 123`,
    `headers: "X-A: b"`), and, in the request of a type that runs here, a key production does
    not know (with a did-you-mean and the allowed keys) or `assertions: null` (a list whose items were
    all commented out). Production's own answers are read leniently; this is for files.
    `parsed`: the caller has parsed `data` as a definition without a problem (not parsed again)."""
    problems: list[tuple[Loc, str]] = []
    try:
        if not parsed:
            parse_check_definition(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = clean_loc(err["loc"])
            if loc and loc[0] in (*RUNNABLE_CHECK_TYPES, "OTHER"):  # the union's tag, not a field
                loc = loc[1:]
            problem = (loc, error_message(err))
            if problem not in problems:
                problems.append(problem)
    problems += unknown_request_fields(data)
    request = data.get("request")
    null_list = isinstance(request, Mapping) and "assertions" in request and request["assertions"] is None
    if null_list and str(data.get("checkType")) in REQUEST_MODELS:
        problems.append((("request", "assertions"), "expected a list, got null (leave it out for none)"))
    return problems


def unknown_request_fields(data: Mapping[str, Any]) -> list[tuple[Loc, str]]:
    """(path, message) of each key in the request of a type that runs here that production
    does not know; other types' requests never run here and are not read."""
    model = REQUEST_MODELS.get(str(data.get("checkType")))
    request = data.get("request")
    if model is None or not isinstance(request, Mapping):
        return []
    return _unknown_fields(request, model, ("request",))


@cache
def _field_names(model: type[BaseModel]) -> tuple[str, ...]:
    # Read once per model: `model_fields` is a property that builds its answer on every read
    # (a world of 10,000 checks read it 80,000 times).
    return tuple(model.model_fields)


@cache
def _field_models(model: type[BaseModel]) -> dict[str, tuple[type[BaseModel] | None, type[BaseModel] | None]]:
    """Each field of `model`: the model of its mapping and the model of its list's items (or None),
    worked out once per model, not twice per key of every request of a world."""
    return {name: (model_at(model, (name,)), model_at(model, (name, 0))) for name in _field_names(model)}


def _unknown_fields(value: Mapping[str, Any], model: type[BaseModel], at: Loc) -> list[tuple[Loc, str]]:
    """Keys of `value` that `model` (and the models of its mappings and lists of mappings) lacks."""
    fields = _field_models(model)
    out: list[tuple[Loc, str]] = []
    for key, item in value.items():
        models = fields.get(key) if isinstance(key, str) else None
        if models is None:
            allowed = _field_names(model)
            likely = {str(key): c for c in _LIKELY.get(str(key), ()) if c in allowed}
            out.append(((*at, key), unknown_key_message(str(key), list(allowed), likely)))
            continue
        inner, element = models
        if inner is not None and isinstance(item, Mapping):
            out += _unknown_fields(item, inner, (*at, key))
        if element is not None and isinstance(item, list):
            for i, entry in enumerate(item):
                if isinstance(entry, Mapping):
                    out += _unknown_fields(entry, element, (*at, key, i))
    return out
