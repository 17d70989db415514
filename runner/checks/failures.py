"""Why an attempt failed, typed: the error classes (once, for the engine and the emulator) and the
kinds of failure the protocols produce, the fingerprint keys on and the analyser matches.

An `ErrorClass` is production's vocabulary (a result's error class: what the reports and the gate
count as a failure or an error). A `FailureKind` is ours, finer: what exactly went wrong, which the
analyser explains and the fingerprint keeps apart. Each kind belongs to one class (`error_class`),
so a protocol says the kind and never the class. Both are `str` enums: their values are what the
state file has always stored (`"connection_refused"`), and they compare equal to those strings.

Adding a kind: add it here with its class in `_CLASS_OF`; mypy then names every `match` that does not
handle it (analysis/by_evidence.py `_rule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NoReturn, TypeVar

T = TypeVar("T", bound="_Text")


class _Text(str, Enum):
    """A str enum shown as its value (`f"{kind}"` is `connection_refused` on every Python)."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def read(cls: type[T], value: object) -> T | None:
        """The member whose value `value` is; None for anything else (a newer or broken file)."""
        try:
            return cls(value)
        except ValueError:
            return None


class ErrorClass(_Text):
    ASSERTION_FAILURE = "ASSERTION_FAILURE"
    NETWORK_ERROR = "NETWORK_ERROR"
    TIMEOUT = "TIMEOUT"
    # The check could not be run as defined (unknown variable, invalid definition, a type that cannot
    # run locally): never retried, the next attempt would fail the same way.
    CONFIGURATION_ERROR = "CONFIGURATION_ERROR"
    SCRIPT_ERROR = "SCRIPT_ERROR"  # a browser or multi-step script threw (scripted worlds; Node)

    @property
    def is_error(self) -> bool:
        """An error (a result's hasErrors) rather than a failed assertion (hasFailures)."""
        return self is not ErrorClass.ASSERTION_FAILURE


class FailureKind(_Text):
    # No usable answer (NETWORK_ERROR).
    CONNECTION_REFUSED = "connection_refused"
    CONNECTION_FAILED = "connection_failed"
    CONNECTION_RESET = "connection_reset"
    DNS_LOOKUP = "dns_lookup"
    TLS = "tls"
    EMPTY_REPLY = "empty_reply"
    PARTIAL_RESPONSE = "partial_response"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    HEADERS_TOO_LARGE = "headers_too_large"
    BAD_ANSWER = "bad_answer"  # a DNS answer that is malformed or not to our query
    NETWORK = "network"  # any other network failure
    PAGE_LOAD = "page_load"  # a browser got no page: net::ERR_CONNECTION_REFUSED at http://...
    NO_REPLY = "no_reply"  # ICMP: no echo reply to any ping
    HOST_UNREACHABLE = "host_unreachable"  # ICMP: every ping answered by a router's Destination Unreachable
    DESTINATION_NOT_REACHED = "destination_not_reached"  # TRACEROUTE: the trace stopped before the host
    # Too slow (TIMEOUT).
    TIMEOUT = "timeout"  # cut off at the attempt's bound before a complete answer
    MAX_RESPONSE_TIME = "max_response_time"  # answered, but after maxResponseTime
    # The answer is not what the check expects (ASSERTION_FAILURE).
    ASSERTION = "assertion"
    BODY_TRUNCATED = "body_truncated"  # an assertion on a body longer than the read cap
    HTTP_STATUS = "http_status"  # a 4xx/5xx without shouldFail
    DNS_RESPONSE_CODE = "dns_response_code"  # an rcode other than NOERROR no assertion looks at
    PACKET_LOSS = "packet_loss"  # ICMP: loss at or above maxPacketLossThreshold, some replies came
    GRPC_STATUS = "grpc_status"  # GRPC: a status other than OK no assertion looks at
    GRPC_HEALTH = "grpc_health"  # GRPC HEALTH: a serving status other than SERVING no assertion looks at
    GRPC_REFLECTION = "grpc_reflection"  # GRPC BEHAVIOR: no reflection, or it does not know the method
    CERTIFICATE_EXPIRED = "certificate_expired"  # SSL: the leaf certificate's notAfter has passed
    CHAIN_UNTRUSTED = "chain_untrusted"  # SSL: the chain does not verify against the trusted roots
    HOSTNAME_MISMATCH = "hostname_mismatch"  # SSL: the certificate does not cover the host name
    SECURITY_BASELINE = "security_baseline"  # SSL: a rule of the security baseline with severity fail
    # A script of the check threw (SCRIPT_ERROR).
    SCRIPT = "script"
    SETUP_SCRIPT = "setup_script"  # an API check's localSetupScript threw
    TEARDOWN_SCRIPT = "teardown_script"  # an API check's localTearDownScript threw
    # Not run (CONFIGURATION_ERROR).
    INVALID_DEFINITION = "invalid_definition"
    INVALID_URL = "invalid_url"
    NOT_RUNNABLE_LOCALLY = "not_runnable_locally"
    REFUSED = "refused"  # the caller may not run checks here
    NO_SOCKET_PERMISSION = "no_socket_permission"  # ICMP, TRACEROUTE: no ping or raw socket may be opened
    UNKNOWN_VARIABLE = "unknown_variable"
    VARIABLE_WITHOUT_VALUE = "variable_without_value"
    SECRET_TOO_SHORT = "secret_too_short"
    UNSUPPORTED_HELPER = "unsupported_helper"
    INTERNAL_ERROR = "internal_error"  # a bug of the engine: the check fails closed
    # Stopped (a cancelled session): no class, the attempt is not a result.
    CANCELLED = "cancelled"

    @property
    def error_class(self) -> ErrorClass | None:
        return _CLASS_OF.get(self)

    @property
    def is_variable(self) -> bool:
        """A variable the check needs cannot be filled in."""
        return self in _VARIABLE_KINDS


_NETWORK = (
    FailureKind.CONNECTION_REFUSED, FailureKind.CONNECTION_FAILED, FailureKind.CONNECTION_RESET,
    FailureKind.DNS_LOOKUP, FailureKind.TLS, FailureKind.EMPTY_REPLY, FailureKind.PARTIAL_RESPONSE,
    FailureKind.TOO_MANY_REDIRECTS, FailureKind.HEADERS_TOO_LARGE, FailureKind.BAD_ANSWER,
    FailureKind.NETWORK, FailureKind.PAGE_LOAD, FailureKind.NO_REPLY, FailureKind.HOST_UNREACHABLE,
    FailureKind.DESTINATION_NOT_REACHED,
)  # fmt: skip
_ASSERTION = (
    FailureKind.ASSERTION, FailureKind.BODY_TRUNCATED, FailureKind.HTTP_STATUS, FailureKind.DNS_RESPONSE_CODE,
    FailureKind.PACKET_LOSS, FailureKind.GRPC_STATUS, FailureKind.GRPC_HEALTH, FailureKind.GRPC_REFLECTION,
    FailureKind.CERTIFICATE_EXPIRED, FailureKind.CHAIN_UNTRUSTED, FailureKind.HOSTNAME_MISMATCH,
    FailureKind.SECURITY_BASELINE,
)  # fmt: skip
_VARIABLE_KINDS = frozenset(
    {FailureKind.UNKNOWN_VARIABLE, FailureKind.VARIABLE_WITHOUT_VALUE, FailureKind.SECRET_TOO_SHORT,
     FailureKind.UNSUPPORTED_HELPER}
)  # fmt: skip
_CONFIGURATION = (
    FailureKind.INVALID_DEFINITION, FailureKind.INVALID_URL, FailureKind.NOT_RUNNABLE_LOCALLY,
    FailureKind.REFUSED, FailureKind.INTERNAL_ERROR, FailureKind.NO_SOCKET_PERMISSION, *_VARIABLE_KINDS,
)  # fmt: skip
_CLASS_OF: dict[FailureKind, ErrorClass] = {
    **dict.fromkeys(_NETWORK, ErrorClass.NETWORK_ERROR),
    FailureKind.TIMEOUT: ErrorClass.TIMEOUT,
    FailureKind.MAX_RESPONSE_TIME: ErrorClass.TIMEOUT,
    **dict.fromkeys(_ASSERTION, ErrorClass.ASSERTION_FAILURE),
    FailureKind.SCRIPT: ErrorClass.SCRIPT_ERROR,
    FailureKind.SETUP_SCRIPT: ErrorClass.SCRIPT_ERROR,
    FailureKind.TEARDOWN_SCRIPT: ErrorClass.SCRIPT_ERROR,
    **dict.fromkeys(_CONFIGURATION, ErrorClass.CONFIGURATION_ERROR),
}


def assert_never(value: NoReturn) -> NoReturn:
    """The end of an exhaustive `match` on a kind or a class: mypy fails where a member is not handled
    (typing.assert_never, which Python 3.10 does not have)."""
    raise AssertionError(f"unhandled: {value!r}")


@dataclass(frozen=True)
class Failure:
    """Why a request got no usable answer, or the answer was judged a failure: its kind and one line
    naming the kind and the address (`connection refused: 127.0.0.1:9`)."""

    kind: FailureKind
    message: str
    network: bool = True  # no answer at all (what onlyOn: [NETWORK_ERROR] retries)

    @property
    def error_class(self) -> ErrorClass | None:
        return self.kind.error_class


class NotRun(Exception):
    """The check cannot be run as defined (raised by a protocol's `fill` or `perform` before anything
    was sent): the attempt fails as CONFIGURATION_ERROR with this kind and message, never retried."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
