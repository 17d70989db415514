"""A rule-based root cause analyser: the emulator's stand-in for the service's AI.

Rules are tried in order and the first match wins; the returned model name names the rule
("rules-v1/http-5xx"), so a report shows which rule explained a failure. Texts quote only what the
message itself contains (status, host, selector, error name), shortened and with URL credentials and
query strings removed, so an analysis never reveals more than the error message it explains.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from runner.checks.analysis import shared
from runner.checks.analysis.shared import MAX_QUOTE, MODEL_PREFIX, NODE_SYSTEM_ERRORS, mdn
from runner.core.text import sanitize
from runner.models import Analysis, Artifact, Evidence, ReferenceLink
from runner.models.check_definitions import CHECK_KINDS

# Only the head of a message is looked at: rules need its first lines, and any input stays cheap.
MAX_SCAN_CHARS = 20_000

# Types production runs in a browser (AGENTIC too), from the one table of check kinds.
BROWSER_TYPES = frozenset(name for name, kind in CHECK_KINDS.items() if kind.browser)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_URL = re.compile(r"(?i)\b(?:https?|wss?)://[^\s\"'<>()\[\]]+")
_STATUS_CONTEXT = (
    r"(?:received|receiving|got|returned|returns|responded with|response(?: code)?|"
    r"status(?:[ _]?code)?|http(?:/[0-9.]+)?|code)\s*[:=]?\s*['\"]?"
)
# A status is a bare three-digit number: "received 523 ms" or "500%" are measurements, not statuses.
_NOT_A_MEASURE = r"(?![0-9]|\s*(?:ms\b|s\b|sec|milli|%|px\b|items?\b|bytes?\b))"


@dataclass(frozen=True)
class Context:
    message: str  # the scanned head of the message, control characters replaced
    check_type: str  # upper case; "" when unknown
    check_name: str

    @property
    def check(self) -> str:
        kind = f"{self.check_type} check" if self.check_type else "check"
        return f'{kind} "{self.check_name}"' if self.check_name else kind

    @property
    def is_browser(self) -> bool:
        return self.check_type in BROWSER_TYPES


def _quote(text: str, limit: int = MAX_QUOTE) -> str:
    # The one sanitiser (controls, escapes, bidi marks out), then whitespace runs as one space.
    return " ".join(sanitize(text, limit=limit, lines="join").split())


def _host(message: str) -> str | None:
    """The host of the first URL in the message, without credentials or port."""
    match = _URL.search(message)
    if match:
        try:
            host = urlsplit(match.group(0)).hostname
        except ValueError:
            host = None
        if host:
            return host
    bare = re.search(r"\b(?:ENOTFOUND|EAI_AGAIN|getaddrinfo \w+)\s+([A-Za-z0-9.-]+\.[A-Za-z]{2,})", message)
    return bare.group(1).lower() if bare else None


def _where(message: str) -> str:
    host = _host(message)
    return f" from {host}" if host else ""


def _at(message: str) -> str:
    """ " at 10.0.0.1:443" or " at shop.example.com": where the failing connection went."""
    address = re.search(r"(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?::[0-9]{1,5})?(?![0-9])", message)
    if address:
        return f" at {address.group(0)}"
    host = _host(message)
    return f" at {host}" if host else ""


def _request_evidence(description: str) -> Evidence:
    return Evidence(artifacts=[Artifact(name="HTTP_REQUEST", type="REQUEST")], description=description)


def _timing_evidence(description: str) -> Evidence:
    return Evidence(artifacts=[Artifact(name="TIMING_PHASES", type="TIMINGS")], description=description)


def _trace_evidence(description: str) -> Evidence:
    return Evidence(artifacts=[Artifact(name="TRACE", type="TRACE")], description=description)


def _primary_evidence(ctx: Context, description: str) -> Evidence:
    return _trace_evidence(description) if ctx.is_browser else _request_evidence(description)


# --- rules -------------------------------------------------------------------------------------------

_5XX = re.compile(
    rf"(?i)(?:{_STATUS_CONTEXT}(5[0-9]{{2}}){_NOT_A_MEASURE})"
    r"|(?<![0-9])(5[0-9]{2})\s+(?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out)"
)


def _http_5xx(ctx: Context) -> Analysis | None:
    match = _5XX.search(ctx.message)
    if not match:
        return None
    status = int(match.group(1) or match.group(2))
    reason = shared.reason(status) or "Server Error"
    where, at = _where(ctx.message), _at(ctx.message)
    gateway = status in (502, 503, 504)
    if gateway:
        cause = (
            f"The upstream{at} answered {status} {reason}: a proxy or load balancer in front of the "
            "application could not get a healthy answer (instances down, restarting during a deploy, "
            "overloaded, or failing their health checks)."
        )
        fix = (
            "Check that the new build's instances start and pass their health checks behind the load "
            "balancer; add readiness checks so traffic only reaches ready instances, and consider a "
            f"retry strategy with backoff on {status} for idempotent requests."
        )
    else:
        cause = (
            f"The application{at} answered {status} {reason}: an unhandled error in the request "
            "handler, typically a code or configuration change in the build under test."
        )
        fix = (
            f"Find the server log entry or trace for this request and the exception behind the {status}; "
            "handle the failing case and return a 4xx for invalid input instead of crashing."
        )
    return Analysis(
        classification="INFRA ERROR" if gateway else "APPLICATION ERROR",
        userImpact=f"Users of {ctx.check} get a server error ({status}){where} instead of the page or data.",
        rootCause=cause,
        codeFix=fix,
        evidence=[
            _primary_evidence(ctx, f"The response status was {status} {reason}{where}."),
            _timing_evidence(
                "The timing phases show whether the server answered quickly (a crash) or "
                "after a long wait (an upstream timeout)."
            ),
        ],
        referenceLinks=[mdn(status)],
    )


_TLS = re.compile(
    r"(?i)\b(?:CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|"
    r"UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(?:_LOCALLY)?|ERR_TLS_CERT_ALTNAME_INVALID|"
    r"ERR_CERT_[A-Z_]+|ERR_SSL_[A-Z_]+|SSL routines|certificate (?:has expired|is not valid|verify failed)|"
    r"self[- ]signed certificate|unable to verify the first certificate|Hostname/IP does not match|"
    r"TLS handshake|SSL handshake|EPROTO)"
)


def _tls(ctx: Context) -> Analysis | None:
    match = _TLS.search(ctx.message)
    if not match:
        return None
    code = _quote(match.group(0), 60)
    where = _where(ctx.message)
    return Analysis(
        classification="INFRA ERROR",
        userImpact=f"Browsers and clients, like {ctx.check}, refuse the secure connection{where}; users "
        "see a certificate warning or cannot reach the site at all.",
        rootCause=f"The TLS handshake{_at(ctx.message)} failed ({code}): the server's certificate is "
        "expired, not yet valid, self-signed, issued for another host name, or its intermediate chain "
        "is missing.",
        codeFix="Renew or reissue the certificate for the exact host name, serve the full chain "
        "(leaf plus intermediates), and automate renewal; do not disable certificate verification.",
        evidence=[_primary_evidence(ctx, f"The connection failed during the TLS handshake ({code}).")],
        referenceLinks=[
            ReferenceLink(
                url="https://nodejs.org/api/tls.html#x509-certificate-error-codes",
                title="Node.js: X509 certificate error codes",
            ),
            ReferenceLink(
                url="https://developer.mozilla.org/en-US/docs/Web/Security/Transport_Layer_Security",
                title="MDN: Transport Layer Security",
            ),
        ],
    )


_DNS = re.compile(r"(?i)\b(ENOTFOUND|EAI_AGAIN|getaddrinfo|ERR_NAME_NOT_RESOLVED|NXDOMAIN|DNS lookup failed)")


def _dns(ctx: Context) -> Analysis | None:
    match = _DNS.search(ctx.message)
    if not match:
        return None
    host = _host(ctx.message)
    name = f"the host name {host}" if host else "the host name"
    return Analysis(
        classification="INFRA ERROR",
        userImpact=f"{name[0].upper()}{name[1:]} cannot be resolved, so neither {ctx.check} nor users "
        "can reach it at all.",
        rootCause=f"DNS resolution of {name} failed ({match.group(1)}): the record is missing or was "
        "changed, the name is misspelled in the check or the configuration of the build, or the "
        "resolver was temporarily unavailable (EAI_AGAIN).",
        codeFix=f"Verify the DNS record of {host or 'the host'} and the base URL the check uses for this "
        "environment; after a DNS change, allow for propagation and TTLs before running the checks.",
        evidence=[_primary_evidence(ctx, f"The request never connected: resolving {name} failed.")],
        referenceLinks=[
            ReferenceLink(
                url="https://nodejs.org/api/dns.html#error-codes", title="Node.js: DNS error codes"
            ),
            ReferenceLink(url=NODE_SYSTEM_ERRORS, title="Node.js: common system errors"),
        ],
    )


_CONNECTION = re.compile(
    r"(?i)\b(ECONNRESET|ECONNREFUSED|EPIPE|EHOSTUNREACH|ENETUNREACH|socket hang up|"
    r"ERR_CONNECTION_(?:REFUSED|RESET|CLOSED)|connection (?:reset|refused)|ERR_EMPTY_RESPONSE)"
)


def _connection(ctx: Context) -> Analysis | None:
    match = _CONNECTION.search(ctx.message)
    if not match:
        return None
    code = match.group(1)
    where = _where(ctx.message)
    target = _at(ctx.message)
    refused = "REFUSED" in code.upper()
    if refused:
        cause = (
            f"The connection{target} was refused ({code}): nothing listens on that port, typically "
            "because the service is down, crashed on start, or the port or host in the configuration "
            "of the build is wrong."
        )
    else:
        cause = (
            f"The connection{target} was closed by the peer ({code}) before a complete answer: a "
            "proxy or server timeout, a crash or restart mid-request, or an idle keep-alive connection "
            "that the server had already closed."
        )
    return Analysis(
        classification="INFRA ERROR",
        userImpact=f"Requests of {ctx.check} fail at the network level{where}; users get no answer.",
        rootCause=cause,
        codeFix="Confirm the service is running and listening on the configured host and port; align "
        "keep-alive and idle timeouts of clients, proxies and servers, and retry idempotent requests "
        "on NETWORK_ERROR with a retry strategy.",
        evidence=[_primary_evidence(ctx, f"The network connection failed with {code}{target}.")],
        referenceLinks=[ReferenceLink(url=NODE_SYSTEM_ERRORS, title="Node.js: common system errors")],
    )


_SELECTOR = re.compile(
    r"(?i)(?:waiting for (?:locator|selector|element)|waitForSelector|No node found for selector|"
    r"element(?:\(s\))? not found|resolved to 0 elements|strict mode violation|"
    r"Element is not (?:attached|visible)|unable to find element|no such element)"
)
_SELECTOR_TEXT = re.compile(
    r"(?:locator|selector|getBy[A-Za-z]+)\s*[(:]\s*(['\"`])(.{1,200}?)\1"
    r"|(?:for selector|selector)\s+(['\"`])(.{1,200}?)\3"
)


def _selector(ctx: Context) -> Analysis | None:
    if not _SELECTOR.search(ctx.message):
        return None
    found = _SELECTOR_TEXT.search(ctx.message)
    selector = _quote(found.group(2) or found.group(4), 80) if found else None
    what = f"the element {selector}" if selector else "an element the script expects"
    return Analysis(
        classification="APPLICATION ERROR",
        userImpact=f"The page flow of {ctx.check} breaks at {what}; users following the same path may "
        "be blocked if the element is really missing.",
        rootCause=f"The script could not find {what} on the page: the page changed (renamed id, class or "
        "text, moved markup), the element renders later than the script waits, or an earlier step "
        "landed on a different page (error page, login, consent banner).",
        codeFix="Compare the page of the build under test with the selector; prefer stable locators "
        "(role, label, test id) over CSS structure, and wait for the element with an assertion "
        "(await expect(locator).toBeVisible()) instead of fixed sleeps.",
        evidence=[_trace_evidence(f"The trace shows the step waiting for {what} until it gave up.")],
        referenceLinks=[
            ReferenceLink(url="https://playwright.dev/docs/locators", title="Playwright: Locators"),
            ReferenceLink(url="https://playwright.dev/docs/actionability", title="Playwright: Auto-waiting"),
        ],
    )


_TIMEOUT = re.compile(
    r"(?i)\b(ETIMEDOUT|ESOCKETTIMEDOUT|ECONNABORTED|TimeoutError|timed? ?out|timeout\b[^.\n]{0,40}exceeded|"
    r"exceeded[^.\n]{0,40}timeout|ERR_TIMED_OUT|deadline exceeded)"
)
_DURATION_NEAR = re.compile(
    r"(?i)time(?:d? ?out)[^0-9\n]{0,20}([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds|s|seconds)\b"
)
_DURATION = re.compile(r"(?i)(?<![0-9.])([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds)\b")


def _timeout(ctx: Context) -> Analysis | None:
    match = _TIMEOUT.search(ctx.message)
    if not match:
        return None
    duration = _DURATION_NEAR.search(ctx.message) or _DURATION.search(ctx.message)
    limit = f" of {duration.group(1)} {duration.group(2)}" if duration else ""
    where = _at(ctx.message)
    code = _quote(match.group(1), 40)
    navigation = "navigation" in ctx.message.lower()
    step = "page navigation" if navigation else ("step" if ctx.is_browser else "request")
    return Analysis(
        classification="TIMEOUT",
        userImpact=f"The {step}{where} made by {ctx.check} takes longer than the limit{limit}; users wait or "
        "give up.",
        rootCause=f"The {step}{where} did not finish within the timeout{limit} ({code}): "
        "the server is slow or stuck (a slow query, an exhausted connection pool, a blocked upstream), "
        "or the endpoint is unreachable and the connection attempt hung.",
        codeFix="Look at the timing phases: a long connect points at the network or firewall, a long "
        "wait for the first byte at the server. Fix the slow path (indexes, caching, pool size) rather "
        "than raising the timeout, unless the limit is lower than the agreed response time.",
        evidence=[
            _timing_evidence(f"The timing phases show where the {step} spent its time before the timeout."),
            _primary_evidence(ctx, f"No complete answer arrived within the timeout{limit}."),
        ],
        referenceLinks=[
            ReferenceLink(url=NODE_SYSTEM_ERRORS, title="Node.js: common system errors (ETIMEDOUT)"),
            ReferenceLink(
                url="https://developer.mozilla.org/en-US/docs/Web/API/Performance_API/Resource_timing",
                title="MDN: Resource timing",
            ),
        ],
    )


_4XX = re.compile(
    rf"(?i)(?:{_STATUS_CONTEXT}(4[0-9]{{2}}){_NOT_A_MEASURE})"
    r"|(?<![0-9])(4[0-9]{2})\s+(?:Bad Request|Unauthorized|Forbidden|Not Found|Too Many Requests|Conflict)"
)


def _http_4xx(ctx: Context) -> Analysis | None:
    match = _4XX.search(ctx.message)
    if not match:
        return None
    status = int(match.group(1) or match.group(2))
    reason = shared.reason(status) or "Client Error"
    where = _where(ctx.message)
    if status in (401, 403):
        classification = "CONFIGURATION ERROR"
        cause = (
            f"The request{where} was rejected with {status} {reason}: the credentials the check sends "
            "(token, API key, session cookie) are missing, expired, or lack the permission in this "
            "environment."
        )
        fix = "Update the secret the check uses for this environment and check the role it was given."
    elif status == 429:
        classification = "INFRA ERROR"
        cause = f"The server{where} rate-limited the check ({status} {reason})."
        fix = "Lower the check frequency or request volume, or allow-list the monitoring locations."
    elif status == 404:
        classification = "APPLICATION ERROR"
        cause = (
            f"The resource{where} does not exist in the build under test ({status} {reason}): a route "
            "was renamed or removed, or the test data the check relies on is missing."
        )
        fix = "Restore the route or update the check's URL, and make sure the environment has its test data."
    else:
        classification = "APPLICATION ERROR"
        cause = (
            f"The server{where} rejected the request with {status} {reason}: the request the check sends "
            "no longer matches what the build under test accepts (changed contract or validation)."
        )
        fix = (
            "Compare the request of the check with the API contract of the new build and update one of them."
        )
    return Analysis(
        classification=classification,
        userImpact=f"Requests like those of {ctx.check} fail with {status} {reason}{where}.",
        rootCause=cause,
        codeFix=fix,
        evidence=[_primary_evidence(ctx, f"The response status was {status} {reason}{where}.")],
        referenceLinks=[mdn(status)],
    )


_ASSERTION = re.compile(
    r"(?is)expected[:\s]+(.{1,120}?)[,;]?\s+(?:but\s+)?(?:received|got|was|actual(?:ly)?)[:\s]+(.{1,120})"
    r"|(?i:AssertionError)[:\s]+(.{1,200})"
)


def _assertion(ctx: Context) -> Analysis | None:
    match = _ASSERTION.search(ctx.message)
    if not match:
        return None
    if match.group(3) is not None:
        detail = f"the assertion {_quote(match.group(3), 100)!r} failed"
    else:
        expected = _quote(match.group(1), 60)
        received = _quote(match.group(2).split("\n")[0], 60)
        detail = f"it expected {expected} but received {received}"
    return Analysis(
        classification="ASSERTION FAILURE",
        userImpact=f"The behaviour {ctx.check} verifies changed: {detail}; users may see the same "
        "difference.",
        rootCause=f"The check's assertion failed: {detail}. Either the build under test changed this "
        "behaviour (a regression) or the expectation in the check is out of date.",
        codeFix="Decide which side is right: fix the regression in the build, or update the assertion "
        "in the check if the new behaviour is intended.",
        evidence=[_primary_evidence(ctx, f"The assertion compared the actual answer: {detail}.")],
        referenceLinks=[
            ReferenceLink(url="https://playwright.dev/docs/test-assertions", title="Playwright: Assertions")
            if ctx.is_browser
            else ReferenceLink(url="https://nodejs.org/api/assert.html", title="Node.js: Assert"),
        ],
    )


_SCRIPT = re.compile(r"\b(TypeError|ReferenceError|SyntaxError|RangeError)\b[:\s]*([^\n]{0,160})")
_MDN_JS = "https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects"


def _script(ctx: Context) -> Analysis | None:
    match = _SCRIPT.search(ctx.message)
    if not match:
        return None
    name, detail = match.group(1), _quote(match.group(2), 100)
    said = f"{name}: {detail}" if detail else name
    place = "page or check script" if ctx.is_browser else "check script (setup, teardown or assertions)"
    return Analysis(
        classification="SCRIPT ERROR",
        userImpact=f"If the {name} comes from the page's own JavaScript, users hit the same broken "
        f"feature; if it comes from the script of {ctx.check}, only the monitoring is affected.",
        rootCause=f"A JavaScript {name} was thrown in the {place}: {said}. Typically a value is undefined "
        "because a response or page changed shape, or a variable or import is missing.",
        codeFix="Guard the access (optional chaining, explicit checks of the response before use) and "
        "fix the origin of the missing value; run the script locally against the build to reproduce.",
        evidence=[_trace_evidence(f"The stack trace shows where the {name} was thrown.")],
        referenceLinks=[ReferenceLink(url=f"{_MDN_JS}/{name}", title=f"MDN: {name}")],
    )


def _unknown(ctx: Context) -> Analysis:
    head = _quote(ctx.message, 100)
    said = f": {head!r}" if head else " without an error message"
    return Analysis(
        classification="UNKNOWN",
        userImpact=f"{ctx.check[0].upper()}{ctx.check[1:]} failed; the impact on users is not known from "
        "the message alone.",
        rootCause=f"No known failure pattern matched the error{said}. Look at the full result of the run "
        "(logs, trace, timing) to find the cause.",
        codeFix=None,
        evidence=[_primary_evidence(ctx, "The check result's error message is the only evidence.")],
        referenceLinks=[
            ReferenceLink(
                url="https://developer.mozilla.org/en-US/docs/Web/HTTP/Overview",
                title="MDN: An overview of HTTP",
            )
        ],
    )


RULES: list[tuple[str, Callable[[Context], Analysis | None]]] = [
    ("http-5xx", _http_5xx),
    ("tls", _tls),
    ("dns", _dns),
    ("connection", _connection),
    ("selector", _selector),  # before timeouts: Playwright reports a missing element as a timeout
    ("timeout", _timeout),
    ("http-4xx", _http_4xx),
    ("assertion", _assertion),
    ("script-error", _script),
]


def analyse(message: str, check_type: str | None, check_name: str) -> tuple[Analysis, str]:
    """The analysis of an error message and the model name of the rule that produced it."""
    ctx = Context(
        message=_CONTROL.sub(" ", message[:MAX_SCAN_CHARS]),
        check_type=_quote(check_type or "", 40).upper(),
        check_name=_quote(check_name or "", 80),
    )
    for name, rule in RULES:
        analysis = rule(ctx)
        if analysis is not None:
            return analysis, f"{MODEL_PREFIX}/{name}"
    return _unknown(ctx), f"{MODEL_PREFIX}/unknown"
