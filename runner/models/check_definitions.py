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

This module is the front: the table, the shared fields and the API check's definition are in
checks_common.py, the other types' in checks_network.py and checks_script.py, read through here. A
module of types is imported when a check of its types is first read (or a name of it is asked for
here, PEP 562): creating a model class costs even when its validator is built later, and a checks
file of API checks needs only the ~12 of checks_common (of ~30).

Sources: production's OpenAPI (ChecksV1ApiCheck, ChecksV1ApiRequest, ChecksV1UrlRequest,
ChecksV1TcpRequest, ChecksV1DnsRequest, ChecksV1IcmpMonitor, ChecksV1IcmpRequest,
ChecksV1TracerouteMonitor, ChecksV1TracerouteRequestRead and their assertion schemas) and its construct
docs (constructs/api-check.mdx, url-monitor.mdx, tcp-monitor.mdx, dns-monitor.mdx, icmp-monitor.mdx,
traceroute-monitor.mdx) for the defaults; ChecksV1GrpcMonitor, ChecksV1GrpcRequestRead,
ChecksV1GrpcConfigRead, ChecksV1SslMonitor, ChecksV1SslRequest, ChecksV1SslConfig with
constructs/grpc-monitor.mdx and ssl-monitor.mdx.
"""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter, ValidationError

from runner.models.base import ApiModel
from runner.models.checks_common import (
    ASSERTION_COMPARISONS,
    ASSERTION_SOURCES,
    BODY_TYPES,
    CHECK_KINDS,
    COMPARISONS,
    DEFAULT_RESPONSE_TIMES_MS,
    DNS_PROTOCOLS,
    DNS_RECORD_TYPES,
    HTTP_METHODS,
    ICMP_INTERVAL_S,
    ICMP_REPLY_TIMEOUT_S,
    IP_FAMILIES,
    LATENCY_PROPERTIES,
    LOCAL_CHECK_TYPES,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    NEVER_HERE,
    NOT_RUNNABLE_REASONS,
    RUNNABLE_CHECK_TYPES,
    RUNTIME_IDS,
    SCRIPT_CHECK_TYPES,
    SCRIPT_FIELDS,
    SUITE_BROWSERS,
    SUITE_CHECK_TYPES,
    TRACEROUTE_PROTOCOLS,
    ApiCheckDefinition,
    ApiRequest,
    Assertion,
    BasicAuth,
    CheckDefinition,
    CheckEnvironmentVariable,
    CheckKind,
    KeyValue,
    Problem,
    Runs,
    SharedFileRef,
    UrlCheckDefinition,
    UrlRequest,
    kind_of,
    plain_api_request,
)
from runner.models.problems import Loc, clean_loc, error_message, model_at, unknown_key_message

if TYPE_CHECKING:
    from runner.models.checks_network import (
        GRPC_HEALTH_STATUSES,
        GRPC_MODES,
        GRPC_SERVICE_DEFINITIONS,
        SSL_CERTIFICATE_PROPERTIES,
        SSL_CONNECTION_PROPERTIES,
        DnsCheckDefinition,
        DnsRequest,
        GrpcCheckDefinition,
        GrpcConfig,
        GrpcMetadataItem,
        GrpcRequest,
        IcmpCheckDefinition,
        IcmpRequest,
        SslCheckDefinition,
        SslConfig,
        SslRequest,
        TcpCheckDefinition,
        TcpRequest,
        TracerouteCheckDefinition,
        TracerouteRequest,
    )
    from runner.models.checks_script import (
        PLAYWRIGHT_CONFIG_KEYS,
        PLAYWRIGHT_USE_KEYS,
        BrowserCheckDefinition,
        MultiStepCheckDefinition,
        PlaywrightCheckDefinition,
        ScriptCheckDefinition,
    )

# The names of the other types' modules, read through this one (imported when first asked for).
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "TcpRequest",
            "DnsRequest",
            "IcmpRequest",
            "TracerouteRequest",
            "GrpcMetadataItem",
            "GrpcConfig",
            "GrpcRequest",
            "SslConfig",
            "SslRequest",
            "TcpCheckDefinition",
            "DnsCheckDefinition",
            "IcmpCheckDefinition",
            "TracerouteCheckDefinition",
            "GRPC_MODES",
            "GRPC_SERVICE_DEFINITIONS",
            "GRPC_HEALTH_STATUSES",
            "SSL_CERTIFICATE_PROPERTIES",
            "SSL_CONNECTION_PROPERTIES",
            "GrpcCheckDefinition",
            "SslCheckDefinition",
        ),
        "runner.models.checks_network",
    ),
    **dict.fromkeys(
        (
            "ScriptCheckDefinition",
            "BrowserCheckDefinition",
            "MultiStepCheckDefinition",
            "PLAYWRIGHT_CONFIG_KEYS",
            "PLAYWRIGHT_USE_KEYS",
            "PlaywrightCheckDefinition",
        ),
        "runner.models.checks_script",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def _named(name: str) -> Any:
    return globals()[name] if name in globals() else __getattr__(name)


class _ByKind(Mapping[str, Any]):
    """checkType -> its model, by name: the model's module is imported the first time it is asked for."""

    def __init__(self, names: dict[str, str]) -> None:
        self._names = names

    def __getitem__(self, kind: str) -> Any:
        return _named(self._names[kind])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _kind(value: Any) -> str:
    check_type = value.get("checkType") if isinstance(value, dict) else getattr(value, "checkType", None)
    return check_type if check_type in RUNNABLE_CHECK_TYPES else "OTHER"


# The definition model of each check type (`_kind`'s answer).
DEFINITION_MODELS: Mapping[str, type[CheckDefinition]] = _ByKind(
    {
        "API": "ApiCheckDefinition",
        "URL": "UrlCheckDefinition",
        "TCP": "TcpCheckDefinition",
        "DNS": "DnsCheckDefinition",
        "BROWSER": "BrowserCheckDefinition",
        "MULTI_STEP": "MultiStepCheckDefinition",
        "ICMP": "IcmpCheckDefinition",
        "TRACEROUTE": "TracerouteCheckDefinition",
        "PLAYWRIGHT": "PlaywrightCheckDefinition",
        "GRPC": "GrpcCheckDefinition",
        "SSL": "SslCheckDefinition",
        "OTHER": "CheckDefinition",
    }
)


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
REQUEST_MODELS: Mapping[str, type[ApiModel]] = _ByKind(
    {
        "API": "ApiRequest",
        "URL": "UrlRequest",
        "TCP": "TcpRequest",
        "DNS": "DnsRequest",
        "ICMP": "IcmpRequest",
        "TRACEROUTE": "TracerouteRequest",
        "GRPC": "GrpcRequest",
        "SSL": "SslRequest",
    }
)
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


__all__ = [
    "ASSERTION_COMPARISONS",
    "ASSERTION_SOURCES",
    "BODY_TYPES",
    "CHECK_KINDS",
    "COMPARISONS",
    "DEFAULT_RESPONSE_TIMES_MS",
    "DEFINITION_MODELS",
    "DNS_PROTOCOLS",
    "DNS_RECORD_TYPES",
    "GRPC_HEALTH_STATUSES",
    "GRPC_MODES",
    "GRPC_SERVICE_DEFINITIONS",
    "HTTP_METHODS",
    "ICMP_INTERVAL_S",
    "ICMP_REPLY_TIMEOUT_S",
    "IP_FAMILIES",
    "LATENCY_PROPERTIES",
    "LOCAL_CHECK_TYPES",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "NEVER_HERE",
    "NOT_RUNNABLE_REASONS",
    "PLAYWRIGHT_CONFIG_KEYS",
    "PLAYWRIGHT_USE_KEYS",
    "REQUEST_MODELS",
    "RUNNABLE_CHECK_TYPES",
    "RUNTIME_IDS",
    "SCRIPT_CHECK_TYPES",
    "SCRIPT_FIELDS",
    "SSL_CERTIFICATE_PROPERTIES",
    "SSL_CONNECTION_PROPERTIES",
    "SUITE_BROWSERS",
    "SUITE_CHECK_TYPES",
    "TRACEROUTE_PROTOCOLS",
    "ApiCheckDefinition",
    "ApiRequest",
    "Assertion",
    "BasicAuth",
    "BrowserCheckDefinition",
    "CheckDefinition",
    "CheckEnvironmentVariable",
    "CheckKind",
    "DnsCheckDefinition",
    "DnsRequest",
    "GrpcCheckDefinition",
    "GrpcConfig",
    "GrpcMetadataItem",
    "GrpcRequest",
    "IcmpCheckDefinition",
    "IcmpRequest",
    "KeyValue",
    "MultiStepCheckDefinition",
    "PlaywrightCheckDefinition",
    "Problem",
    "Runs",
    "ScriptCheckDefinition",
    "SharedFileRef",
    "SslCheckDefinition",
    "SslConfig",
    "SslRequest",
    "TcpCheckDefinition",
    "TcpRequest",
    "TracerouteCheckDefinition",
    "TracerouteRequest",
    "UrlCheckDefinition",
    "UrlRequest",
    "hand_written_problems",
    "kind_of",
    "parse_check_definition",
    "plain_api_request",
    "unknown_request_fields",
]
