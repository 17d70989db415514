"""The analyser's rules for a check that really ran: it reads what happened, not just the message.

A real run leaves evidence (checks/outcome.py `Attempt`, secrets already masked): the status, the
timing phases of the request (DNS, connect, TLS, first byte, download), the first bytes of the body,
the failed assertion and the kind of error with its address. The analysis cites them: "GET
http://127.0.0.1:8380/api/cart answered 503 Service Unavailable after 2.1 ms", "the time went to
waiting for the first byte (1502 ms of 1503 ms)". Evidence artifacts are named as production's
(HTTP_REQUEST and TIMING_PHASES; TCP_REQUEST and DNS_QUERY for those checks, type REQUEST).

Everything the user's build sent (body, headers, values in an assertion) is hostile: it is quoted
only through `for_line` (one line, no controls or escapes) and shortened. The model name names the
rule, as the message rules do ("rules-v1/run-http-status").
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from runner.checks.analysis.by_browser import analyse_browser
from runner.checks.analysis.by_message import analyse
from runner.checks.analysis.shared import MAX_QUOTE, MODEL_PREFIX, NODE_SYSTEM_ERRORS, mdn, status_text
from runner.checks.failures import ErrorClass, FailureKind, assert_never
from runner.core.text import for_line
from runner.models import Analysis, Artifact, Evidence, ReferenceLink

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt, RequestSummary, TimingPhases

MAX_BODY_QUOTE = 160
SLOW_FIRST_BYTE_MS = 1000  # a server error slower than this looks like an upstream timeout
GATEWAY = (502, 503, 504)
PHASES = (
    ("dns_ms", "DNS"),
    ("connect_ms", "connect"),
    ("tls_ms", "TLS"),
    ("first_byte_ms", "first byte"),
    ("download_ms", "download"),
)
PHASE_MEANING = {
    "DNS": "resolving the host name (the resolver or the name's records)",
    "connect": "opening the connection (the network, a firewall, or a server too busy to accept)",
    "TLS": "the TLS handshake (certificate checks, a slow or overloaded TLS terminator)",
    "first byte": "waiting for the first byte (the server is slow to produce the answer: a slow query, "
    "a blocked upstream, an exhausted pool)",
    "download": "downloading the body (a large or slowly streamed answer)",
}
LINKS = {
    "timing": ReferenceLink(
        url="https://developer.mozilla.org/en-US/docs/Web/API/Performance_API/Resource_timing",
        title="MDN: Resource timing",
    ),
    "system": ReferenceLink(url=NODE_SYSTEM_ERRORS, title="Node.js: common system errors"),
    "assertions": ReferenceLink(
        url="https://www.checklyhq.com/docs/detect/assertions/", title="Assertions of API checks"
    ),
    "variables": ReferenceLink(
        url="https://www.checklyhq.com/docs/detect/synthetic-monitoring/api-checks/configuration/",
        title="API check configuration: environment variables",
    ),
}


def _q(text: object, limit: int = MAX_QUOTE) -> str:
    """Hostile text as one short line."""
    return for_line(text, limit)


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 10 else f"{value:.0f} ms"


def timing_text(timing: TimingPhases | None) -> str:
    """`DNS 0.1 ms, connect 0.2 ms, first byte 1502 ms, download 0.1 ms, total 1503 ms`."""
    if timing is None:
        return "no timing was recorded"
    parts = [
        f"{label} {_ms(value)}" for name, label in PHASES if (value := getattr(timing, name)) is not None
    ]
    return ", ".join([*parts, f"total {_ms(timing.total_ms)}"])


def slowest_phase(timing: TimingPhases | None) -> tuple[str, float] | None:
    if timing is None:
        return None
    phases = [(label, value) for name, label in PHASES if (value := getattr(timing, name)) is not None]
    return max(phases, key=lambda item: item[1]) if phases else None


class _Facts:
    """What the evidence says, in words ready to quote."""

    def __init__(self, ev: Attempt, check_type: str, check_name: str) -> None:
        self.ev = ev
        request = ev.request
        self.kind = request.kind if request else ("HTTP" if check_type in ("API", "URL") else check_type)
        self.target = _q(f"{request.method} {request.target}" if request else check_name, 200)
        self.address = _q(request.remote_address or _address(request), 80) if request else None
        self.check = f'{check_type} check "{_q(check_name, 80)}"' if check_name else f"{check_type} check"
        self.timing = timing_text(ev.timing)
        self.body = _q(ev.body_excerpt, MAX_BODY_QUOTE) if ev.body_excerpt else None
        self.total = ev.response_time_ms if ev.response_time_ms is not None else ev.duration_ms

    @property
    def at(self) -> str:
        return f" at {self.address}" if self.address else ""

    def said(self) -> str:
        what = "its body began" if self.kind == "HTTP" else "the answer was"
        cut = f" ({self.ev.truncation})" if self.ev.truncation else ""
        return f"; {what}: {self.body}{cut}" if self.body else ""

    def where_time_went(self) -> str:
        timing = self.ev.timing
        slowest = slowest_phase(timing)
        if timing is None or slowest is None or self.total <= 0:
            return ""
        label, value = slowest
        cut = ""
        if timing.first_byte_ms is None:  # cut off before any answer: the phase it was stuck in
            stuck = "connect" if timing.connect_ms is None else "first byte"
            if (
                stuck == "first byte"
                and timing.tls_ms is None
                and self.target.split(" ")[-1].startswith("https")
            ):
                stuck = "TLS"
            rest = timing.total_ms - sum(v for n, _ in PHASES if (v := getattr(timing, n)) is not None)
            if rest > value:
                label, value, cut = stuck, rest, ", still under way when it was cut off"
        return (
            f"The time went to {PHASE_MEANING[label]}: {label} {_ms(value)} of {_ms(self.total)}{cut} "
            f"({self.timing})."
        )

    def artifacts(self, description: str) -> list[Evidence]:
        name = {"HTTP": "HTTP_REQUEST", "TCP": "TCP_REQUEST", "DNS": "DNS_QUERY", "ICMP": "ICMP_REQUEST",
                "TRACEROUTE": "TRACEROUTE_REQUEST", "GRPC": "GRPC_REQUEST",
                "SSL": "SSL_HANDSHAKE"}.get(self.kind, "HTTP_REQUEST")  # fmt: skip
        out = [Evidence(artifacts=[Artifact(name=name, type="REQUEST")], description=description)]
        if self.ev.timing is not None:
            out.append(
                Evidence(
                    artifacts=[Artifact(name="TIMING_PHASES", type="TIMINGS")],
                    description=f"Timing phases of {self.target}: {self.timing}.",
                )
            )
        return out


def _address(request: RequestSummary) -> str:
    """Where the request went when no connection says it: host:port of the URL, the TCP target, the
    DNS server."""
    if request.kind == "HTTP":
        try:
            parts = urlsplit(request.target)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return request.target
        host = parts.hostname or ""
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if request.kind == "DNS":
        return request.target.rsplit(" @ ", 1)[-1]
    return request.target


def _assertion_detail(ev: Attempt) -> str:
    """`STATUS_CODE EQUALS 200: received 503` (the user's assertion and what came back)."""
    failed = ev.failed_assertion
    if failed is None:
        return _q(ev.message, 200)
    return _q(failed.describe(), 200)


# (classification, why, fix) by status; 400 and 500 stand for the rest of their class.
_STATUS_RULES = {
    500: (
        "APPLICATION ERROR",
        "An unhandled error in the request handler: a code or configuration change in the build.",
        "Find the server log entry for this request and the exception behind it; handle the failing "
        "case and answer a 4xx for invalid input instead of crashing.",
    ),
    401: (
        "CONFIGURATION ERROR",
        "The credentials the check sends are missing, wrong or lack the permission in this build (a "
        "secret variable not set, or set for another environment).",
        "Pass the right credential as a secret environment variable of the session (or the account's "
        "variables in the world), and check the role it grants.",
    ),
    404: (
        "APPLICATION ERROR",
        "The route does not exist in this build: renamed, removed or not deployed.",
        "Restore the route, or update the check's URL if the change is intended.",
    ),
    400: (
        "APPLICATION ERROR",
        "The build no longer answers this request as the check expects.",
        "Compare the request of the check with the API of the new build and update one of them.",
    ),
}
_STATUS_RULES[403] = _STATUS_RULES[401]


def _http_status(f: _Facts, code: int) -> tuple[Analysis, str]:
    ev = f.ev
    first_byte = ev.timing.first_byte_ms if ev.timing else None
    fb = f", first byte at {_ms(first_byte)}" if first_byte is not None else ""
    answered = f"{f.target} answered {status_text(code)}{f.at} after {_ms(f.total)}{fb}"
    slow = first_byte is not None and first_byte >= SLOW_FIRST_BYTE_MS
    pace = (
        f"The answer came only after {_ms(first_byte)} to the first byte: a proxy or the application "
        "waited on something that did not answer (an upstream timeout)."
        if slow and first_byte is not None
        else "It answered at once, so the request was rejected, not timed out."
    )
    assertion = f" The assertion failed: {_assertion_detail(ev)}." if ev.failed_assertion is not None else ""
    classification, why, fix = _STATUS_RULES.get(code, _STATUS_RULES[500 if code >= 500 else 400])
    if code in GATEWAY:
        classification, why = (
            "INFRA ERROR",
            (
                f"{pace} A {code} comes from a gateway or a service that declares itself unavailable: a "
                "dependency behind it (a store, an upstream, a pool) is down or not ready in this build."
            ),
        )
        fix = (
            f"Read the body and the log of the service for why it answered {code} (the dependency it "
            "names), make sure the build starts that dependency and waits for it before it reports "
            "ready, and check its health endpoint before the checks run."
        )
    elif code >= 500:
        why = f"{pace} {why}"
    cause = f"{answered}{f.said()}. {why}{assertion}"
    return (
        Analysis(
            classification=classification,
            userImpact=f"Users of {f.check} get {status_text(code)} from {f.target} instead of the answer.",
            rootCause=cause,
            codeFix=fix,
            evidence=f.artifacts(f"{f.target} answered {status_text(code)}{f.at}{f.said()}."),
            referenceLinks=[mdn(code), LINKS["timing"]],
        ),
        "run-http-status",
    )


def _assertion(f: _Facts) -> tuple[Analysis, str]:
    ev = f.ev
    failed = ev.failed_assertion
    if failed is not None and "regex took longer than" in failed.detail:
        return _slow_regex(f)
    # "The assertion failed: STATUS_CODE ...", or for a DNS answer code no assertion looked at,
    # "The check failed: DNS answer NXDOMAIN ...".
    what = "assertion" if failed is not None else "check"
    detail = _assertion_detail(ev)
    status = f" {status_text(ev.status_code)}" if ev.status_code is not None else ""
    if ev.response_code is not None:
        status = f" {_q(ev.response_code, 20)}"
    # The body is quoted once: an assertion on it already says what came back.
    quoted = ("TEXT_BODY", "RESPONSE_DATA", "TEXT_ANSWER", "JSON_ANSWER")
    said = "" if failed is not None and failed.source in quoted else f.said()
    return (
        Analysis(
            classification="ASSERTION FAILURE",
            userImpact=f"What {f.check} verifies changed: {detail}; users may see the same difference.",
            rootCause=f"{f.target} answered{status}{f.at} after {_ms(f.total)}{said}. The {what} failed: "
            f"{detail}. Either the build changed this behaviour (a regression) or the check's "
            "expectation is out of date.",
            codeFix="Decide which side is right: fix the regression in the build, or update the "
            "assertion if the new behaviour is intended.",
            evidence=f.artifacts(
                f"The answer of {f.target}{':' if status else ''}{status}{said}; the {what} failed: {detail}."
            ),
            referenceLinks=[LINKS["assertions"], *_PATH_DOCS.get(f.kind, ())],
        ),
        "run-assertion",
    )


def _slow_regex(f: _Facts) -> tuple[Analysis, str]:
    """The assertion's regex ran out of time on this answer (assertions.py bounds it)."""
    detail = _assertion_detail(f.ev)
    status = f" {status_text(f.ev.status_code)}" if f.ev.status_code is not None else ""
    return (
        Analysis(
            classification="SCRIPT ERROR",
            userImpact=f"{f.check[0].upper()}{f.check[1:]} could not verify its assertion on this build: "
            "its regular expression did not finish on the answer, so it says nothing either way.",
            rootCause=f"{f.target} answered{status}{f.at} after {_ms(f.total)}, and the assertion's regular "
            f"expression did not finish within its time on that text: {detail}. A pattern with nested or "
            "overlapping repeats backtracks exponentially on a long input that almost matches.",
            codeFix="Rewrite the regular expression so that each character can be matched one way only "
            "(no nested repeats such as (a|aa)+ or (a+)+), anchor it, or extract a shorter part first.",
            evidence=f.artifacts(f"The answer of {f.target}{':' if status else ''}{status}{f.said()}."),
            referenceLinks=[LINKS["assertions"]],
        ),
        "run-regex-timeout",
    )


def _truncated(f: _Facts) -> tuple[Analysis, str]:
    """An assertion on a body longer than the local read cap: not judged (run.py fails it closed)."""
    ev = f.ev
    detail = _assertion_detail(ev)
    status = f" {status_text(ev.status_code)}" if ev.status_code is not None else ""
    cut = ev.truncation or "body truncated"
    return (
        Analysis(
            classification="CONFIGURATION ERROR",
            userImpact=f"{f.check[0].upper()}{f.check[1:]} could not verify its assertion on this build: "
            f"the answer is longer than what this machine reads, so it says nothing either way.",
            rootCause=f"{f.target} answered{status}{f.at} after {_ms(f.total)} with a body longer than "
            f"the local read limit ({cut}). An assertion on the body cannot be judged on part of it (a "
            f"NOT_CONTAINS would pass on what was never read), so it failed: {detail}.",
            codeFix="Raise settings.executor.bodyBytes in the world file to above the body's size (at "
            "most 64 MiB; production reads up to 25 MB), or assert on a smaller resource.",
            evidence=f.artifacts(f"The answer of {f.target}{':' if status else ''}{status}; {cut}."),
            referenceLinks=[LINKS["assertions"]],
        ),
        "run-body-truncated",
    )


def _dns_code(f: _Facts) -> tuple[Analysis, str]:
    ev = f.ev
    code = _q(ev.response_code or "an error", 20)
    answered = f"The name server{f.at} answered {code} to {f.target} after {_ms(f.total)}"
    missing = code == "NXDOMAIN"
    why = (
        "the name does not exist there: the record is missing from the zone this build serves, or the "
        "check asks for a misspelled name"
        if missing
        else "the server could not answer the query (a broken zone, a failing upstream, or a refused query)"
    )
    return (
        Analysis(
            classification="INFRA ERROR",
            userImpact=f"Clients that resolve this name, like {f.check}, get {code} and cannot reach the "
            "service behind it.",
            rootCause=f"{answered}: {why}. The check failed: {_q(ev.message, 200)}.",
            codeFix="Add the record to the zone the build serves (or fix its name), or point the check "
            "at the name server of this environment; assert RESPONSE_CODE if this answer is expected."
            if missing
            else "Look at the name server's log for why it failed the query, and at the zone it serves.",
            evidence=f.artifacts(f"{answered}."),
            referenceLinks=[
                ReferenceLink(
                    url="https://www.iana.org/assignments/dns-parameters/dns-parameters.xhtml#dns-parameters-6",
                    title="IANA: DNS RCODEs",
                )
            ],
        ),
        "run-dns-response-code",
    )


def _too_slow(f: _Facts) -> tuple[Analysis, str]:
    ev = f.ev
    answered = ev.error_kind is FailureKind.MAX_RESPONSE_TIME
    limit = _q(ev.message, 200)
    if answered:
        status = f" {status_text(ev.status_code)}" if ev.status_code is not None else ""
        happened = f"{f.target} answered{status}{f.at}, but only after {_ms(f.total)}: {limit}."
    else:
        happened = f"{f.target}{f.at} gave no complete answer in time: {limit}."
    went = f.where_time_went() or f"Timing phases: {f.timing}."
    return (
        Analysis(
            classification="TIMEOUT",
            userImpact=f"Requests like those of {f.check} take longer than the check allows; users wait "
            "or give up.",
            rootCause=f"{happened} {went}",
            codeFix="Fix the slow phase rather than raising the limit: for a slow first byte, the "
            "server's work (queries, caches, pool sizes, upstream calls); for a slow connect, the "
            "network or the server's accept queue; raise maxResponseTime only if the limit is below "
            "the agreed response time.",
            evidence=f.artifacts(f"{happened}"),
            referenceLinks=[LINKS["timing"], LINKS["system"]],
        ),
        "run-timeout",
    )


_NETWORK = {
    FailureKind.CONNECTION_REFUSED: (
        "Nothing listens{at}: the connection was refused. The service is not running, crashed on "
        "start, or listens on another port or address than the check says.",
        "Start the service before the checks run and wait until its health endpoint answers; check "
        "the variables that build the check's address (host and port) for this environment.",
    ),
    FailureKind.CONNECTION_RESET: (
        "The connection{at} was reset by the peer before a complete answer: the server crashed or "
        "restarted mid-request, or a proxy cut the connection.",
        "Look at the server's log at the time of the request; align keep-alive and idle timeouts of "
        "clients, proxies and servers, and retry idempotent requests on NETWORK_ERROR.",
    ),
    FailureKind.EMPTY_REPLY: (
        "The server{at} closed the connection without any answer: a crash in the handler, or a "
        "process that accepts connections but is not ready to serve.",
        "Find the crash in the server's log; report ready only once requests are served.",
    ),
    FailureKind.PARTIAL_RESPONSE: (
        "The connection{at} closed before the whole body arrived: the server died mid-answer or "
        "announced a longer body than it sent.",
        "Check the server's log for an error while writing the answer and its Content-Length.",
    ),
    FailureKind.DNS_LOOKUP: (
        "The host name could not be resolved, so no connection was made{at}.",
        "Check the host in the check's URL (and the variables that build it) for this environment.",
    ),
    FailureKind.TLS: (
        "The TLS handshake{at} failed: the certificate is expired, self-signed, issued for another "
        "name, or its chain is incomplete.",
        "Serve a valid certificate for the exact host name with its full chain; set skipSSL only "
        "for a local build with a throw-away certificate.",
    ),
    FailureKind.TOO_MANY_REDIRECTS: (
        "The URL{at} redirects in a loop or too often.",
        "Fix the redirect rules of the build (or point the check at the final URL).",
    ),
}


def _network(f: _Facts) -> tuple[Analysis, str]:
    ev = f.ev
    kind = ev.error_kind or FailureKind.NETWORK
    cause, fix = _NETWORK.get(
        kind,
        (
            "The request{at} failed at the network level before any answer.",
            "Confirm the service runs and is reachable from the machine that runs the checks.",
        ),
    )
    happened = cause.format(at=f.at)
    went = f"It failed after {_ms(f.total)} ({f.timing})."
    return (
        Analysis(
            classification="INFRA ERROR",
            userImpact=f"{f.check[0].upper()}{f.check[1:]} gets no answer from {f.target}; users of "
            "this build would get none either.",
            rootCause=f"{happened} The error: {_q(ev.message, 200)}. {went}",
            codeFix=fix,
            evidence=f.artifacts(f"{f.target}: {_q(ev.message, 200)}."),
            referenceLinks=[LINKS["system"]],
        ),
        f"run-{kind.value.replace('_', '-')}",
    )


_VARIABLES_FIX = (
    "Set the variable in the session's environment variables (the spec's environmentVariables, --env "
    "or --secret-env), the account's in the world, or the check's own."
)
_CONFIGURATION_FIX = {
    FailureKind.NOT_RUNNABLE_LOCALLY: "Leave the check out of local runs (out of the checks file, "
    "settings.notRunnable: skip in a world file, or other tags) and let the service run it; or run the "
    "gate against the service.",
    FailureKind.REFUSED: "Give the account a key of its own in the world file and trigger with it, or keep "
    "the emulator on loopback (the default).",
    # icmp_sockets.py: the message names the sysctl and the capability; production's docs give the
    # same fix for its private-location agent (NET_RAW).
    FailureKind.NO_SOCKET_PERMISSION: "Let the runner open ICMP sockets: allow ping sockets for its group "
    '(sysctl -w net.ipv4.ping_group_range="0 2147483647"; ICMP checks only), or give it CAP_NET_RAW '
    "(root, docker run --cap-add=NET_RAW, or setcap cap_net_raw+ep on the Python interpreter; "
    "traceroutes need this one); or leave these checks out of local runs.",
}
_OTHER_FIX = "Fix the check's definition as the message says, or leave the check out of this run."


def _internal(f: _Facts) -> tuple[Analysis, str]:
    """A bug of the local executor: neither the check's nor the build's fault (the run exits 4)."""
    message = _q(f.ev.message, 300)
    return (
        Analysis(
            classification="INTERNAL ERROR",
            userImpact=f"{f.check[0].upper()}{f.check[1:]} was not run to a verdict, so it says nothing "
            "about the build under test.",
            rootCause=f"testsession's local executor failed on the check (a bug in testsession): {message}.",
            codeFix="Nothing in the check or the build: report the bug with the traceback the run printed "
            "(and the version, `testsession --version`).",
            evidence=[
                Evidence(
                    artifacts=[Artifact(name="CHECK_DEFINITION", type="CONFIGURATION")],
                    description=f"The executor raised: {message}.",
                )
            ],
            referenceLinks=[],
        ),
        "run-internal-error",
    )


def _configuration(f: _Facts) -> tuple[Analysis, str]:
    ev = f.ev
    message = _q(ev.message, 300)
    kind = ev.error_kind
    if kind is not None and kind.is_variable:
        fix = _VARIABLES_FIX
    else:
        fix = _CONFIGURATION_FIX.get(kind, _OTHER_FIX) if kind is not None else _OTHER_FIX
    ran = sum(1 for t in ev.tests if t.runs > 0)  # a suite whose other browsers' projects ran
    impact = (
        f"Part of {f.check} did not run ({ran} of its tests did), so it says nothing about the build in "
        "the browsers left out."
        if ran
        else f"{f.check[0].upper()}{f.check[1:]} did not run, so it says nothing about the build under test."
    )
    return (
        Analysis(
            classification="CONFIGURATION ERROR",
            userImpact=impact,
            rootCause=f"{'Part of the check' if ran else 'The check'} was not run: {message}.",
            codeFix=fix,
            evidence=[
                Evidence(
                    artifacts=[Artifact(name="CHECK_DEFINITION", type="CONFIGURATION")],
                    description=f"{'Its other tests ran' if ran else 'Nothing was sent'}: {message}.",
                )
            ],
            referenceLinks=[LINKS["variables"]],
        ),
        "run-configuration",
    )


def analyse_run(ev: Attempt, message: str, check_type: str | None, check_name: str) -> tuple[Analysis, str]:
    """The analysis of a real run's failure from its evidence, and the model name of its rule."""
    f = _Facts(ev, _q(check_type or "", 40).upper(), check_name or "")
    browser = analyse_browser(ev, _q(check_type or "", 40).upper(), check_name or "")
    if browser is not None:  # BROWSER and MULTI_STEP checks: their own rules (by_browser.py)
        return browser
    found = _by_kind(f, ev.error_kind) if ev.error_kind is not None else _by_class(f, ev.error_class)
    if found is None:  # nothing in the evidence to add: what the message says
        return analyse(message, check_type, check_name)
    analysis, rule = found
    return analysis, f"{MODEL_PREFIX}/{rule}"


def _by_kind(f: _Facts, kind: FailureKind) -> tuple[Analysis, str] | None:
    """The rule for each kind of failure: mypy names a kind this match does not handle."""
    status = f.ev.status_code
    match kind:
        case (
            FailureKind.CONNECTION_REFUSED
            | FailureKind.CONNECTION_FAILED
            | FailureKind.CONNECTION_RESET
            | FailureKind.DNS_LOOKUP
            | FailureKind.TLS
            | FailureKind.EMPTY_REPLY
            | FailureKind.PARTIAL_RESPONSE
            | FailureKind.TOO_MANY_REDIRECTS
            | FailureKind.HEADERS_TOO_LARGE
            | FailureKind.BAD_ANSWER
            | FailureKind.NETWORK
            | FailureKind.PAGE_LOAD
        ):
            return _network(f)
        case FailureKind.TIMEOUT | FailureKind.MAX_RESPONSE_TIME:
            return _too_slow(f)
        case (
            FailureKind.INVALID_DEFINITION
            | FailureKind.INVALID_URL
            | FailureKind.NOT_RUNNABLE_LOCALLY
            | FailureKind.REFUSED
            | FailureKind.UNKNOWN_VARIABLE
            | FailureKind.VARIABLE_WITHOUT_VALUE
            | FailureKind.SECRET_TOO_SHORT
            | FailureKind.UNSUPPORTED_HELPER
            | FailureKind.NO_SOCKET_PERMISSION
        ):
            return _configuration(f)
        case FailureKind.INTERNAL_ERROR:
            return _internal(f)
        case (
            FailureKind.NO_REPLY
            | FailureKind.HOST_UNREACHABLE
            | FailureKind.PACKET_LOSS
            | FailureKind.DESTINATION_NOT_REACHED
        ):
            return _path(f)
        case FailureKind.BODY_TRUNCATED:
            return _truncated(f)
        case (
            FailureKind.CERTIFICATE_EXPIRED
            | FailureKind.CHAIN_UNTRUSTED
            | FailureKind.HOSTNAME_MISMATCH
            | FailureKind.SECURITY_BASELINE
        ):
            return _certificate(f)
        case FailureKind.ASSERTION if f.kind == "SSL":
            return _certificate(f)
        case FailureKind.GRPC_STATUS | FailureKind.GRPC_HEALTH | FailureKind.GRPC_REFLECTION:
            return _grpc(f)
        case FailureKind.HTTP_STATUS | FailureKind.ASSERTION if status is not None and status >= 400:
            return _http_status(f, status)
        case FailureKind.ASSERTION:
            return _assertion(f)
        case FailureKind.DNS_RESPONSE_CODE:
            return _dns_code(f)
        case FailureKind.SETUP_SCRIPT | FailureKind.TEARDOWN_SCRIPT:
            return None  # the script's own error (TypeError, ECONNREFUSED ...): the message's rules say it
        case FailureKind.HTTP_STATUS | FailureKind.SCRIPT | FailureKind.CANCELLED:
            return None
        case _:
            assert_never(kind)


def _by_class(f: _Facts, error_class: ErrorClass | None) -> tuple[Analysis, str] | None:
    """Evidence without a kind this version knows (written by a newer one): by its class."""
    match error_class:
        case ErrorClass.CONFIGURATION_ERROR:
            return _configuration(f)
        case ErrorClass.TIMEOUT:
            return _too_slow(f)
        case ErrorClass.NETWORK_ERROR:
            return _network(f)
        case ErrorClass.ASSERTION_FAILURE | ErrorClass.SCRIPT_ERROR | None:
            return None
        case _:
            assert_never(error_class)


# --- ICMP and TRACEROUTE: the network path to the host ------------------------------------------------

_ICMP_DOCS = ReferenceLink(
    url="https://www.checklyhq.com/docs/detect/uptime-monitoring/icmp-monitors/overview/",
    title="ICMP monitors: troubleshooting",
)
_TRACEROUTE_DOCS = ReferenceLink(
    url="https://www.checklyhq.com/docs/detect/uptime-monitoring/traceroute-monitors/overview/",
    title="Traceroute monitors: troubleshooting",
)
_PATH_DOCS = {"ICMP": (_ICMP_DOCS,), "TRACEROUTE": (_TRACEROUTE_DOCS,)}
# kind: (classification, why, fix, reference); `{at}` is the address pinged or traced.
_PATH_RULES: dict[FailureKind, tuple[str, str, str, ReferenceLink]] = {
    FailureKind.NO_REPLY: (
        "INFRA ERROR",
        "No echo reply came back{at}: the host is down or not on this network, or ICMP echo is "
        "filtered on the way (a firewall, a security group, the host's own rules; many networks block "
        "it, production's docs say). If an API or TCP check to the same host passes, it is the filter.",
        "Check that the host is up and routed from the runner; if ICMP is blocked on purpose, allow "
        "echo requests from the runner or check the host with a TCP or API check instead.",
        _ICMP_DOCS,
    ),
    FailureKind.HOST_UNREACHABLE: (
        "INFRA ERROR",
        "A router answered the pings{at} with Destination Unreachable: it has no route to the host, "
        "or the host does not answer on its network (down, or a wrong address).",
        "Check the address the check pings (and the variables that build it) for this environment, "
        "and that the host is up on the network the router names.",
        _ICMP_DOCS,
    ),
    FailureKind.PACKET_LOSS: (
        "INFRA ERROR",
        "The host answered{at}, but too many pings were lost: a congested or flapping link, a device "
        "on the way that rate-limits ICMP, or a host too busy to answer in time.",
        "Look at the interfaces on the path (errors, drops) and the host's load at the time; raise "
        "maxPacketLossThreshold only if this loss is acceptable for the service.",
        _ICMP_DOCS,
    ),
    FailureKind.DESTINATION_NOT_REACHED: (
        "INFRA ERROR",
        "The trace did not reach the destination{at}: the probes' port is filtered (TCP probes get no "
        "SYN-ACK or RST), the host drops the probes, or a router on the way discards them.",
        "Try another probe protocol (ICMP if the host answers pings, or UDP), a TCP port that is open "
        "on the host (UDP needs a closed one), and raise maxUnknownHops if silent routers cut the "
        "trace short (production's troubleshooting).",
        _TRACEROUTE_DOCS,
    ),
}


def _path(f: _Facts) -> tuple[Analysis, str]:
    """No reply, an unreachable host, packet loss, a destination not reached: quoted from the run's
    transcript (the protocol's excerpt starts with its summary line)."""
    ev = f.ev
    kind = FailureKind(ev.error_kind)
    classification, why, fix, link = _PATH_RULES[kind]
    what = "pings" if f.kind == "ICMP" else "probes"
    summary = f" ({f.body})" if f.body else ""
    return (
        Analysis(
            classification=classification,
            userImpact=f"{f.check[0].upper()}{f.check[1:]} cannot reach {f.target} as expected; clients "
            "on the same path would see the same loss or outage.",
            rootCause=f"{why.format(at=f.at)} The check failed: {_q(ev.message, 200)}{summary}.",
            codeFix=fix,
            evidence=f.artifacts(f"The {what} to {f.target}: {f.body or _q(ev.message, 200)}."),
            referenceLinks=[link],
        ),
        f"run-{kind.replace('_', '-')}",
    )


# --- SSL and GRPC: the certificate, the gRPC answer ---------------------------------------------------

_SSL_DOCS = ReferenceLink(
    url="https://www.checklyhq.com/docs/detect/uptime-monitoring/ssl-monitors/overview/",
    title="SSL monitors: troubleshooting",
)
_GRPC_DOCS = ReferenceLink(
    url="https://www.checklyhq.com/docs/detect/uptime-monitoring/grpc-monitors/overview/",
    title="gRPC monitors: troubleshooting",
)
_GRPC_CODES = ReferenceLink(
    url="https://grpc.github.io/grpc/core/md_doc_statuscodes.html", title="gRPC status codes"
)
# kind: (why, fix); the SSL protocol's excerpt starts with its summary line, quoted as the evidence.
_CERTIFICATE_RULES: dict[FailureKind, tuple[str, str]] = {
    FailureKind.CERTIFICATE_EXPIRED: (
        "The certificate served{at} has expired: clients refuse the connection.",
        "Renew the certificate and deploy it (with its chain) to every server behind the name; automate "
        "the renewal (ACME) well before expiry.",
    ),
    FailureKind.CHAIN_UNTRUSTED: (
        "The certificate chain served{at} does not verify against the trusted roots: a self-signed or "
        "internal CA certificate, a CA the machine does not trust, or a missing intermediate.",
        "Serve the full chain (leaf and intermediates) from a CA clients trust; for an internal CA, "
        "give the runner its certificate (SSL_CERT_FILE or NODE_EXTRA_CA_CERTS) or set "
        "skipChainValidation to check only the certificate's other facts.",
    ),
    FailureKind.HOSTNAME_MISMATCH: (
        "The certificate served{at} does not name the host the check connects to: the server sends "
        "another site's (or a default) certificate, or the certificate lacks this name in its SANs.",
        "Issue the certificate with this host name in its SANs, or send the right name as SNI "
        "(sslConfig.serverName) when one address serves several certificates.",
    ),
    FailureKind.SECURITY_BASELINE: (
        "The TLS setup{at} breaks a rule of the security baseline (an old TLS version, a short key or "
        "a weak signature).",
        "Raise the server's minimum TLS version, reissue the certificate with a stronger key or "
        "signature, or relax the rule's severity in sslConfig.securityBaseline if this is accepted.",
    ),
}


def _certificate(f: _Facts) -> tuple[Analysis, str]:
    """An SSL check's certificate or connection failed: its summary line is the evidence
    (`certificate for 127.0.0.1 expires in 9 days; alertDaysBeforeExpiry 30; TLS1.3 ...`)."""
    ev = f.ev
    summary = _q((ev.body_excerpt or "").split("\n", 1)[0], 300)
    kind = ev.error_kind
    if kind in _CERTIFICATE_RULES and kind is not None:
        why, fix = _CERTIFICATE_RULES[kind]
        classification, happened = "INFRA ERROR", why.format(at=f.at)
        rule = f"run-{kind.value.replace('_', '-')}"
    else:
        classification, rule = "ASSERTION FAILURE", "run-ssl-assertion"
        happened = (
            f"The certificate or the connection{f.at} is not what the check expects: either the "
            "certificate (its expiry, issuer, names) or the server's TLS setup changed, or the "
            "expectation is out of date."
        )
        fix = (
            "Renew or redeploy the certificate (its expiry, issuer and names) or fix the server's TLS "
            "settings; update the assertion only if the new certificate is intended."
        )
    return (
        Analysis(
            classification=classification,
            userImpact=f"Clients of {f.target} may get a certificate error or an insecure connection; "
            f"{f.check} failed on it.",
            rootCause=f"{happened} The check failed: {_q(ev.message, 200)}. The handshake: {summary}.",
            codeFix=fix,
            evidence=f.artifacts(f"The TLS handshake with {f.target}{f.at}: {summary}."),
            referenceLinks=[_SSL_DOCS],
        ),
        rule,
    )


def _grpc(f: _Facts) -> tuple[Analysis, str]:
    """A gRPC answer that is not OK, a health status other than SERVING, no reflection."""
    ev = f.ev
    kind = FailureKind(ev.error_kind)
    answer = f" ({f.body})" if f.body else ""
    if kind is FailureKind.GRPC_REFLECTION:
        why = (
            "The check could not find its method through server reflection: the server does not offer "
            "reflection (many disable it), or it does not serve this service or method."
        )
        fix = (
            "Enable server reflection on the service (grpc_reflection in the build), or correct the "
            "method's name (package.Service/Method) to one the server lists."
        )
    elif kind is FailureKind.GRPC_HEALTH:
        why = (
            "The server answered the health check, but the service is not SERVING: it is starting, a "
            "dependency it needs is down, or the service name is not the one it registers."
        )
        fix = (
            "Look at the server's log for why it reports this status; make the build report SERVING "
            "only once its dependencies are ready, and check the service name (empty: the server)."
        )
    else:
        why = "The server answered the call with an error status instead of a response."
        fix = (
            "Look at the server's log for this call and the status it names; if this status is "
            "expected, assert GRPC_STATUS_CODE."
        )
    return (
        Analysis(
            classification="APPLICATION ERROR" if kind is FailureKind.GRPC_STATUS else "INFRA ERROR",
            userImpact=f"Clients calling {f.target} get no usable answer; {f.check} failed.",
            rootCause=f"{why} The check failed: {_q(ev.message, 200)}{answer}.",
            codeFix=fix,
            evidence=f.artifacts(f"{f.target}{f.at}: {_q(ev.message, 200)}{answer}."),
            referenceLinks=[_GRPC_DOCS, _GRPC_CODES],
        ),
        f"run-{kind.value.replace('_', '-')}",
    )
