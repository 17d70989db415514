"""What a real check's failure is, as one readable line: its error group's key and cleaned message.

A scripted failure is grouped by its message with every number replaced (messages.clean_message), so
the same failure at another port, id or time is one group. For a check that ran for real that rule
would be wrong: `STATUS_CODE EQUALS 200: received 503` and `... received 404` would be one group, and
with `--fail-on new` yesterday's 503 (a store that was down) would make today's 404 (a route that is
gone) "known". So the executor says what the failure is, and the emulator keys the group by that
(groups.py: errorHash is the hash of this line, cleanedErrorMessage is this line):

- A failed assertion: the assertion as the user wrote it (source, property, regex, comparison,
  target) and the value it received, as it is (quoted as the message quotes it: one line, at most
  200 characters, secrets masked). A RESPONSE_TIME value is a duration: cleaned (`received <n>`), or
  every slow run would be new. A detail without a received value (not JSON, found nothing, a regex
  that took too long, a truncated body) is cleaned like a scripted message.
- The HTTP status of the answer, whenever there was one (`(HTTP 503)` after a JSON assertion's
  failure): the same assertion failing on a 200 and on a 500 are two failures.
- Anything else (refused, DNS, TLS, reset, timeouts, configuration): the message cleaned as a
  scripted one (addresses, ports, durations replaced). Each such message begins with its kind
  (`connection refused:`, `DNS lookup failed:`, `timeout:` ...), so the kind stays part of the key.

The price, in the safe direction: an asserted value that changes on every request (a request id, a
counter or a time, in a field or in a body an assertion reads whole) makes each failure new; an
assertion on a field that does not change, or a regex that extracts the part it is about, avoids it.
Received values are never cleaned: an id, a date, an address or a version can be the very value the
assertion is about (a DNS answer's address, `$.version`), and two different ones are two failures.
The line is made from the attempt after its secrets were masked.
"""

from __future__ import annotations

from runner.checks.failures import FailureKind
from runner.checks.outcome import AssertionResult, Attempt, RequestSummary
from runner.core.messages import clean_message, error_hash

# Bounded so that the state file's evidence (evidence.MAX_TEXT_CHARS) never cuts it: a cut line
# would hash differently after a restart.
MAX_FINGERPRINT_CHARS = 1000


# What an HTTP status fails a check with, after `received HTTP <status> from <request>: `.
HTTP_STATUS_RULE = "4xx and 5xx responses fail the check unless shouldFail is set"


def http_status_message(status: int, request: RequestSummary) -> str:
    """`received HTTP 404 from GET http://127.0.0.1:8380/x: 4xx and 5xx responses fail ...`."""
    return f"received HTTP {status} from {_http_status_rest(request)}"


def _http_status_rest(request: RequestSummary) -> str:
    return f"{request.method} {request.target}: {HTTP_STATUS_RULE}"


def fingerprint(attempt: Attempt) -> str | None:
    """The key line of a failed attempt; None for a passed or cancelled one."""
    if attempt.passed or attempt.cancelled:
        return None
    failed = attempt.failed_assertion
    status = attempt.status_code
    says_status = False
    if failed is not None:
        text = f"{failed.label()}: {_detail(failed)}"
        says_status = failed.source == "STATUS_CODE"
    elif attempt.error_kind is FailureKind.HTTP_STATUS and status is not None and attempt.request is not None:
        # All cleaned but the status (the request's address, port and ids are volatile).
        text = f"received HTTP {status} from {clean_message(_http_status_rest(attempt.request))}"
        says_status = True
    else:
        text = clean_message(attempt.message or attempt.error_kind or "failed")
    if status is not None and not says_status:
        text += f" (HTTP {status})"
    return text[:MAX_FINGERPRINT_CHARS]


def _detail(failed: AssertionResult) -> str:
    if failed.actual is None or failed.source == "RESPONSE_TIME":
        return clean_message(failed.detail)
    return failed.detail


def group_key(raw: str, evidence: Attempt | None) -> tuple[str, str]:
    """A failure's error group key, the same for every caller (the local run's groups, the emulator's):
    its cleaned message (a real failure's fingerprint, else the message cleaned) and that line's hash."""
    fingerprint = evidence.fingerprint if evidence is not None else None
    cleaned = fingerprint or clean_message(raw)
    return cleaned, error_hash(cleaned)
