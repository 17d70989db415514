"""What every check definition shares (runner/models/check_definitions.py is the front that reads
them): the table of check kinds, the lists of allowed values, the fields every type has, and the
definitions of the API and URL checks (the http protocol's) with the fast path for a plain API request.

The other types' models are in checks_network.py (TCP, DNS, ICMP, TRACEROUTE, GRPC, SSL) and
checks_script.py (BROWSER, MULTI_STEP, PLAYWRIGHT): creating a model class costs even when its
validator is built later, and a checks file of API checks needs only the ~12 classes here.
"""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
from enum import Enum
from typing import Any, Literal, NamedTuple

from pydantic import Field, field_validator

from runner.models.base import ApiModel, empty_list
from runner.models.problems import Loc, format_loc


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


def _null_is(default: Any) -> Any:
    """A before-validator: production's nullable field left null means its documented default."""

    def validator(cls: Any, value: Any) -> Any:
        return default if value is None else value

    return classmethod(validator)


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


def _no_should_fail(check: CheckDefinition) -> list[Problem]:
    """ICMP and traceroute monitors carry shouldFail, but production's docs do not say what it does
    to them: run as if it were unset, a check could pass here that production fails. Refused (ours);
    so is a Playwright check suite's (its schema has none)."""
    if not check.shouldFail:
        return []
    return [(("shouldFail",), f"not run here for {check.checkType} checks (production's docs do not say "
             "what it does to them); leave it out or false")]  # fmt: skip
