"""API and URL checks: one HTTP request with libcurl (pycurl), its timing phases and a bounded body.

pycurl rather than requests/urllib3: libcurl measures each phase of a request (DNS, connect, TLS,
first byte, download) the way the service's results and the analyser's TIMING_PHASES evidence need
them, enforces one hard time bound over the whole exchange (redirects included), and can be stopped
from another thread when a session is cancelled (a multi handle, polled in short slices: one per
worker thread, kept, with nothing of one transfer carried to the next).

Decisions (production: constructs/api-check.mdx, url-monitor.mdx, api-checks/configuration.mdx):
- Only http:// and https:// are ever requested, redirects included (a check URL never reads a file).
- The body is sent whenever it is not empty, whatever bodyType says (production's own GraphQL and
  form examples send a body with the default bodyType NONE and their own Content-Type header).
  bodyType sets the Content-Type only when the check's headers have none: JSON and GRAPHQL
  application/json, FORM application/x-www-form-urlencoded, RAW and NONE none at all. A GRAPHQL body
  that is not JSON (a bare query) is sent as {"query": body} (our choice; production's docs are silent).
- Query parameters are appended to the URL, form-encoded; repeated keys are kept.
- followRedirects (default true) follows at most `Limits.max_redirects`; STATUS_CODE is the status of
  the last response. skipSSL skips certificate and host name checks. ipFamily IPv4 (default) or IPv6.
- Responses are decompressed (gzip, deflate, brotli) and read up to `Limits.body_cap_bytes`; a
  longer body is cut there and the attempt says so.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
from typing import Any, NamedTuple
from urllib.parse import urlencode, urlsplit

import certifi
import pycurl

from runner import __version__
from runner.checks.assertions import parse_json_body
from runner.checks.failures import Failure, FailureKind, NotRun
from runner.checks.fingerprint import http_status_message
from runner.checks.limits import Limits
from runner.checks.outcome import Cut, RequestSummary, TimingPhases, plain_cut
from runner.checks.protocols.base import CheckProtocol, Job, Observation
from runner.checks.script_hooks import has_scripts, run_setup, teardown_for
from runner.checks.variables import Substitution, basic_credentials
from runner.core.redact import strip_url_credentials
from runner.models.check_definitions import ApiCheckDefinition, UrlCheckDefinition

USER_AGENT = f"testsession-runner/{__version__} (local check)"
_CONTENT_TYPES = {
    "JSON": "application/json",
    "GRAPHQL": "application/json",
    "FORM": "application/x-www-form-urlencoded",
}
# Header names whose values are credentials even when no secret variable fills them: masked in evidence.
_SENSITIVE = ("authorization", "cookie", "token", "secret", "password", "api-key", "apikey", "x-api-key")
SLICE = 0.05  # how often a running request looks at the stop event
_STOPPED = -1
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
_TLS_ERRORS = frozenset({35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98})
_RESET_ERRNOS = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})


# NamedTuples: one of each is made for every check (a frozen dataclass's __init__ costs ~3x as much).
class HttpRequest(NamedTuple):
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    basic_auth: tuple[str, str] | None
    follow_redirects: bool
    skip_ssl: bool
    ip_family: str


class HttpResponse(NamedTuple):
    status_code: int | None  # None: no status line arrived
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool
    timing: TimingPhases
    remote_address: str | None
    failure: Failure | None
    cancelled: bool = False

    @property
    def content_type(self) -> str | None:
        for key, value in reversed(self.headers):
            if key.lower() == "content-type":
                return value
        return None


def prepare_request(check: ApiCheckDefinition | UrlCheckDefinition, subst: Substitution) -> HttpRequest:
    """The request with every variable replaced; VariableError or ValueError (a one-line reason)."""
    r = check.request
    url = subst.render(r.url, "request.url").strip()
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError("request.url: must start with http:// or https:// (after variables are replaced)")
    if isinstance(check, UrlCheckDefinition):
        return HttpRequest("GET", url, (), None, None, r.followRedirects, r.skipSSL, r.ipFamily)
    api = check.request
    subst.request_url = url
    params = [
        (p.key, subst.render(p.value, f"request.queryParameters[{p.key}]"))
        for p in api.queryParameters
        if p.key
    ]
    if params:
        base, _, fragment = url.partition("#")
        url = base + ("&" if "?" in base else "?") + urlencode(params) + (f"#{fragment}" if fragment else "")
        subst.request_url = url
    headers = []
    for h in api.headers:
        if not h.key:
            continue
        value = subst.render(h.value, f"request.headers[{h.key}]")
        if any(c in h.key + value for c in "\r\n\0") or ":" in h.key:
            raise ValueError(f"request.headers[{h.key}]: a header name and value must be one line of text")
        headers.append((h.key, value))
    body_text = subst.render(api.body, "request.body") if api.body else ""
    body_type = api.bodyType.upper()
    if body_type == "GRAPHQL" and body_text and not _is_json(body_text):
        body_text = json.dumps({"query": body_text})
    content_type = _CONTENT_TYPES.get(body_type)
    if body_text and content_type and not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", content_type))
    auth = None
    if api.basicAuth and (api.basicAuth.username or api.basicAuth.password):
        username = subst.render(api.basicAuth.username, "request.basicAuth.username")
        password = subst.render(api.basicAuth.password, "request.basicAuth.password")
        if subst.is_secret_text(username) or subst.is_secret_text(password):
            subst.add_secret(basic_credentials(username, password))
        auth = (username, password)
    return HttpRequest(
        method=api.method.upper(),
        url=url,
        headers=tuple(headers),
        body=body_text.encode() if body_text else None,
        basic_auth=auth,
        follow_redirects=api.followRedirects,
        skip_ssl=api.skipSSL,
        ip_family=api.ipFamily,
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class HttpProtocol(CheckProtocol[ApiCheckDefinition | UrlCheckDefinition]):
    """API and URL checks: one request; a 4xx/5xx fails the check unless shouldFail is set."""

    def perform(self, check: ApiCheckDefinition | UrlCheckDefinition, job: Job) -> Observation:
        subst, teardown, seconds = job.subst, None, job.bounds.seconds
        if isinstance(check, ApiCheckDefinition) and job.scripts is not None and has_scripts(check):
            # The request between the check's setup and teardown scripts (script_hooks.py).
            prepared = run_setup(check, subst, job.scripts, job.stop)
            if isinstance(prepared, Failure):
                return Observation(request=None, timing=TimingPhases(None, None, None, None, None, 0.0),
                                   failure=prepared)  # fmt: skip
            check, subst = prepared
            teardown = teardown_for(check, subst, job.scripts, job.stop)
            seconds = max(job.bounds.left(), 0.001)  # the setup script took its part of the bound
        try:
            request = prepare_request(check, subst)
        except ValueError as exc:
            raise NotRun(FailureKind.INVALID_DEFINITION, str(exc)) from None
        limits, cut = job.limits, subst.cut
        response = perform(
            request,
            bound_seconds=seconds,
            limits=limits,
            stop=job.stop,
            timeout_text=job.bounds.text,
        )
        text = response.body.decode("utf-8", "replace")
        script_failure = None
        if teardown is not None and response.failure is None and not response.cancelled:
            text, script_failure = teardown(request, response, text)
        values: dict[str, Any] = {"STATUS_CODE": response.status_code}
        if isinstance(check, ApiCheckDefinition):  # a URL monitor asserts on its status only
            values.update(
                RESPONSE_TIME=round(response.timing.total_ms), TEXT_BODY=text, HEADERS=response.headers,
            )  # fmt: skip
            if any(a.source == "JSON_BODY" for a in check.request.assertions):
                values["JSON_BODY"] = parse_json_body(text, response.content_type)
        status = response.status_code
        shown = summary(request, limits, response.remote_address, cut)
        implicit = None
        if status is not None and status >= 400 and not check.shouldFail:
            implicit = Failure(FailureKind.HTTP_STATUS, http_status_message(status, shown), network=False)
        # A teardown script's error fails the check after the assertions ran, as production's runtime
        # runs them (the assertions' results are kept; a failed one is named first).
        return Observation(
            request=shown,
            timing=response.timing,
            failure=response.failure,
            implicit=script_failure or implicit,
            cancelled=response.cancelled,
            excerpt=cut(text, limits.excerpt_chars) if text else None,
            truncated=response.truncated,
            body_bytes=len(response.body),
            status_code=status,
            values=values,
        )


PROTOCOL = HttpProtocol()


def summary(
    request: HttpRequest, limits: Limits, remote_address: str | None = None, cut: Cut = plain_cut
) -> RequestSummary:
    """The request as evidence: no password, credential headers masked, the body's first characters."""
    headers = tuple((k, "***" if _sensitive(k) else v) for k, v in request.headers)
    if request.basic_auth:
        headers += (("Authorization", "Basic ***"),)
    body = cut(request.body.decode("utf-8", "replace"), limits.excerpt_chars) if request.body else None
    return RequestSummary(
        kind="HTTP",
        method=request.method,
        target=strip_url_credentials(request.url) or request.url,
        headers=headers,
        body_excerpt=body,
        remote_address=remote_address,
    )


def _sensitive(name: str) -> bool:
    low = name.lower()
    return any(part in low for part in _SENSITIVE)


def address_of(url: str) -> str:
    """host:port of a URL (for a message when no connection was made)."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        return url
    host = parts.hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Transfer:
    """The callbacks of one transfer: a capped body and capped headers. A header line is only kept
    in the callback (libcurl calls it once a line) and the lines are read once, after the transfer."""

    __slots__ = ("body", "cancelled", "header_bytes", "headers_too_large", "limits", "lines", "truncated")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.body = bytearray()
        self.truncated = False
        self.header_bytes = 0
        self.headers_too_large = False
        self.lines: list[bytes] = []
        self.cancelled = False

    def write(self, chunk: bytes) -> int | None:
        room = self.limits.body_cap_bytes - len(self.body)
        if len(chunk) > room:
            self.body += chunk[: max(room, 0)]
            self.truncated = True
            return 0  # stops the transfer: the rest is not needed
        self.body += chunk
        return None

    def header(self, line: bytes) -> int | None:
        self.header_bytes += len(line)
        if self.header_bytes > self.limits.header_cap_bytes:
            self.headers_too_large = True
            return 0
        self.lines.append(line)
        return None

    @property
    def headers(self) -> list[tuple[str, str]]:
        """The last response's headers (a redirect or a 100 Continue begins a new response)."""
        headers: list[tuple[str, str]] = []
        # libcurl hands whole lines, each ending in LF: one decode of them all, split at LF only.
        for text in b"".join(self.lines).decode("iso-8859-1").split("\n"):
            text = text.rstrip("\r")
            if text.startswith("HTTP/"):
                headers = []
            elif ":" in text and not text[:1].isspace():
                key, _, value = text.partition(":")
                headers.append((key.strip(), value.strip()))
        return headers


def perform(
    request: HttpRequest,
    *,
    bound_seconds: float,
    limits: Limits,
    stop: threading.Event | None = None,
    timeout_text: str = "",
) -> HttpResponse:
    """Sends the request within `bound_seconds` (connect to last byte, redirects included).

    `timeout_text` says which bound cut it off, for the message (`maxResponseTime of 2000 ms`).
    """
    transfer = _Transfer(limits)
    curl = _handle()
    failure: Failure | None = None
    try:
        _configure(curl, request, transfer, bound_seconds, limits)
        code, text = _drive(curl, stop)
        if code == _STOPPED:
            transfer.cancelled = True
            failure = Failure(FailureKind.CANCELLED, f"cancelled: {_remote(curl) or address_of(request.url)}")
        elif code:
            failure = _failure(curl, request, transfer, code, text, timeout_text)
        status = int(curl.getinfo(pycurl.RESPONSE_CODE)) or None
        timing = _timing(curl, answered=status is not None)
        remote = _remote(curl)
    finally:
        curl.close()
    if failure is not None and status is not None:
        failure = dataclasses.replace(failure, network=False)
    return HttpResponse(
        status_code=status,
        headers=tuple(transfer.headers),
        body=bytes(transfer.body),
        truncated=transfer.truncated,
        timing=timing,
        remote_address=remote,
        failure=failure,
        cancelled=transfer.cancelled,
    )


_THREAD = threading.local()  # each worker thread's own handles (pycurl handles are not thread-safe)


def _handle() -> Any:
    """A new easy handle with the options every transfer sets alike, duplicated from this thread's
    template (one call in C for a dozen setopt from Python). A duplicate takes no connection, name,
    TLS session or cookie of the template (curl_easy_duphandle), and the template performs nothing:
    each transfer connects, looks its host up and shakes hands as if it were alone."""
    template = getattr(_THREAD, "template", None)
    if template is None:
        template = _THREAD.template = pycurl.Curl()
        template.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        template.setopt(pycurl.REDIR_PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        template.setopt(pycurl.NOSIGNAL, 1)  # threads: no SIGALRM for name lookups
        # The thread's multi handle (_multi) keeps no connection, name or TLS session from one
        # transfer for the next.
        template.setopt(pycurl.FRESH_CONNECT, 1)
        template.setopt(pycurl.FORBID_REUSE, 1)
        template.setopt(pycurl.DNS_CACHE_TIMEOUT, 0)
        template.setopt(pycurl.SSL_SESSIONID_CACHE, 0)
        template.setopt(pycurl.ACCEPT_ENCODING, "")  # every encoding libcurl decodes
        template.setopt(pycurl.USERAGENT, USER_AGENT)
        # certifi's bundle (what requests trusts), found once: a transfer with a CA of its own
        # (Limits.ca_file) sets it over this one (_configure).
        template.setopt(pycurl.CAINFO, certifi.where())
    return template.duphandle()


def _multi() -> Any:
    """This thread's multi handle, made once: a new one per transfer cost ~0.1 ms of CPU (its wakeup
    socket pair made and closed) and a reading of the CA file per HTTPS transfer. Each transfer
    still gets a new connection, name lookup and TLS handshake (_configure): what it measures is
    its own."""
    multi = getattr(_THREAD, "multi", None)
    if multi is None:
        multi = _THREAD.multi = pycurl.CurlMulti()
    return multi


def _drive(curl: Any, stop: threading.Event | None) -> tuple[int, str]:
    """Runs the transfer on this thread's multi handle, looking at `stop` every SLICE seconds (a
    progress callback would only be called once a second while a server is silent). (0, "") when
    it finished, (_STOPPED, "") when stopped, else libcurl's error code and text."""
    multi = _multi()
    multi.add_handle(curl)
    try:
        active = 1
        while active:
            while True:
                ret, active = multi.perform()
                if ret != pycurl.E_CALL_MULTI_PERFORM:
                    break
            if not active:
                break
            if stop is not None and stop.is_set():
                return _STOPPED, ""
            multi.select(SLICE)
        _, _, failed = multi.info_read()
        if failed:
            _, code, text = failed[0]
            return int(code), str(text)
        return 0, ""
    finally:
        multi.remove_handle(curl)  # its messages with it: the next transfer reads only its own


def _configure(curl: Any, request: HttpRequest, transfer: _Transfer, bound: float, limits: Limits) -> None:
    """The options of this request (those every request shares are the handle's already: _handle)."""
    millis = max(1, int(bound * 1000))
    curl.setopt(pycurl.URL, request.url)
    curl.setopt(pycurl.TIMEOUT_MS, millis)
    curl.setopt(pycurl.CONNECTTIMEOUT_MS, millis)
    curl.setopt(pycurl.FOLLOWLOCATION, 1 if request.follow_redirects else 0)
    curl.setopt(pycurl.MAXREDIRS, limits.max_redirects)
    curl.setopt(pycurl.IPRESOLVE, pycurl.IPRESOLVE_V6 if request.ip_family == "IPv6" else pycurl.IPRESOLVE_V4)
    if request.skip_ssl:
        curl.setopt(pycurl.SSL_VERIFYPEER, 0)
        curl.setopt(pycurl.SSL_VERIFYHOST, 0)
    elif limits.ca_file:
        curl.setopt(pycurl.CAINFO, limits.ca_file)
    # POST, PUT and PATCH always carry a body (Content-Length: 0 at least: some servers answer 411).
    body = request.body if request.body is not None or request.method not in _WITH_BODY else b""
    if request.method == "HEAD":
        curl.setopt(pycurl.NOBODY, 1)
    elif request.method != "GET" or body is not None:
        curl.setopt(pycurl.CUSTOMREQUEST, request.method)
    lines = [f"{k}: {v}" for k, v in request.headers]
    if body is not None and request.method != "HEAD":
        curl.setopt(pycurl.POSTFIELDS, body)
        curl.setopt(pycurl.POSTFIELDSIZE, len(body))
        if not any(k.lower() == "content-type" for k, _ in request.headers):
            lines.append("Content-Type:")  # removes the form type libcurl would add (RAW, NONE: none)
    lines.append("Expect:")  # no 1 s wait for a 100 Continue before larger bodies
    curl.setopt(pycurl.HTTPHEADER, lines)
    if request.basic_auth:
        curl.setopt(pycurl.HTTPAUTH, pycurl.HTTPAUTH_BASIC)
        curl.setopt(pycurl.USERNAME, request.basic_auth[0])
        curl.setopt(pycurl.PASSWORD, request.basic_auth[1])
    curl.setopt(pycurl.WRITEFUNCTION, transfer.write)
    curl.setopt(pycurl.HEADERFUNCTION, transfer.header)


def _timing(curl: Any, answered: bool) -> TimingPhases:
    """Phases from libcurl's cumulative times (*_TIME_T: microseconds); None for a phase that never
    happened (libcurl may report a start of transfer for a connection that failed before any answer)."""
    info = curl.getinfo
    lookup, connect = info(pycurl.NAMELOOKUP_TIME_T) / 1000, info(pycurl.CONNECT_TIME_T) / 1000
    tls, pre = info(pycurl.APPCONNECT_TIME_T) / 1000, info(pycurl.PRETRANSFER_TIME_T) / 1000
    start, total = info(pycurl.STARTTRANSFER_TIME_T) / 1000, info(pycurl.TOTAL_TIME_T) / 1000
    redirect = info(pycurl.REDIRECT_TIME_T) / 1000
    ready = max(pre, tls, connect)
    return TimingPhases(
        dns_ms=round(lookup, 3) if lookup or connect else None,
        connect_ms=round(connect - lookup, 3) if connect else None,
        tls_ms=round(tls - connect, 3) if tls else None,
        first_byte_ms=round(start - ready, 3) if answered else None,
        download_ms=round(total - start, 3) if answered else None,
        total_ms=round(total, 3),
        redirect_ms=round(redirect, 3) if redirect else None,
    )


def _remote(curl: Any) -> str | None:
    ip = curl.getinfo(pycurl.PRIMARY_IP)
    if not ip:
        return None
    port = curl.getinfo(pycurl.PRIMARY_PORT)
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _failure(
    curl: Any, request: HttpRequest, transfer: _Transfer, code: int, text: str, bound: str
) -> Failure | None:
    if code == pycurl.E_WRITE_ERROR and transfer.truncated:
        return None  # the body cap: the answer is complete enough
    where = _remote(curl) or address_of(request.url)
    if code == pycurl.E_WRITE_ERROR and transfer.headers_too_large:
        return Failure(
            FailureKind.HEADERS_TOO_LARGE,
            f"response headers over {transfer.limits.header_cap_bytes} bytes: {where}",
            network=False,
        )
    os_errno = int(curl.getinfo(pycurl.OS_ERRNO) or 0)
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return Failure(
            FailureKind.TIMEOUT, f"timeout: no complete response within {bound or 'the time limit'}: {where}"
        )
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        host = urlsplit(request.url).hostname or request.url
        return Failure(FailureKind.DNS_LOOKUP, f"DNS lookup failed: {host}")
    if code == pycurl.E_COULDNT_CONNECT:
        if os_errno == errno.ECONNREFUSED or "refused" in text.lower():
            return Failure(FailureKind.CONNECTION_REFUSED, f"connection refused: {where}")
        reason = os.strerror(os_errno).lower() if os_errno else "could not connect"
        return Failure(FailureKind.CONNECTION_FAILED, f"connection failed ({reason}): {where}")
    if code in _TLS_ERRORS:
        detail = text.split(": ", 1)[-1] if text else "handshake failed"
        return Failure(FailureKind.TLS, f"TLS error ({detail}): {where}")
    if code == pycurl.E_GOT_NOTHING:
        return Failure(FailureKind.EMPTY_REPLY, f"empty reply (connection closed without an answer): {where}")
    if os_errno in _RESET_ERRNOS or (
        code in (pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR) and "reset" in text.lower()
    ):
        return Failure(FailureKind.CONNECTION_RESET, f"connection reset: {where}")
    if code == pycurl.E_PARTIAL_FILE:
        return Failure(
            FailureKind.PARTIAL_RESPONSE, f"connection closed before the whole body arrived: {where}"
        )
    if code == pycurl.E_TOO_MANY_REDIRECTS:
        return Failure(
            FailureKind.TOO_MANY_REDIRECTS,
            f"more than {transfer.limits.max_redirects} redirects: {where}",
        )
    if code in (pycurl.E_URL_MALFORMAT, pycurl.E_UNSUPPORTED_PROTOCOL):
        return Failure(
            FailureKind.INVALID_URL,
            f"cannot request this URL ({text or 'malformed'})",
            network=False,
        )
    return Failure(FailureKind.NETWORK, f"request failed ({text or f'libcurl error {code}'}): {where}")
