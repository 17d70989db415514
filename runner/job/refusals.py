"""What a refusal of the service most likely means, in words that name the URL called.

A gate must never read an answer it does not understand as "nothing to run": the trigger's only
no-match answer is a 403 with errorCode ERR_NO_MATCHING_CHECKS (NoMatchingChecksError). Any other 403
or 404 on the trigger, be it the service's JSON without that code, a proxy's HTML page or the 404 of
a base URL with an extra path, is an error (exit 4) whose message says where it came from and what
to check.
"""

from __future__ import annotations

import re

from runner.core.errors import ApiError, NotFoundError, UnknownIdError
from runner.models import NO_MATCHING_CHECKS

_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_HTML = re.compile(r"<(!doctype|html|head|body|center|h1)\b", re.IGNORECASE)
BASE_URL_SETTING = "TESTSESSION_BASE_URL or --base-url"


def _answer(exc: ApiError) -> str:
    """What came back, said briefly: the service's message, or what kind of page it was."""
    status = f"{exc.status} {exc.error or ''}".strip()
    if exc.service_body:
        return f"{status}: {exc.message}"
    if _HTML.search(exc.message):
        title = _TITLE.search(exc.message)
        shown = f" ({' '.join(title.group(1).split())[:80]})" if title else ""
        return f"{status} with an HTML page{shown}, not the service's JSON"
    return f"{status} with an answer that is not the service's error body ({exc.message[:120]})"


def trigger_refusal(exc: ApiError) -> str:
    """The problem line of a 403 or 404 on the trigger that is not the no-match answer."""
    called = f"{exc.method or 'POST'} {exc.url or exc.path or 'the trigger'}"
    not_no_match = f"not a no-match (the service says that with a 403 and errorCode {NO_MATCHING_CHECKS})"
    if exc.status == 404:
        if exc.service_body:
            cause = "the base URL is likely wrong: it must be the service's root, without /v1"
        else:
            cause = "the base URL likely points at a proxy or another site, not the service"
        cause += f" ({BASE_URL_SETTING})"
    elif exc.service_body:
        cause = (
            "the API key likely may not trigger test sessions in this account "
            "(check TESTSESSION_API_KEY, TESTSESSION_ACCOUNT_ID and the key's role)"
        )
    else:
        cause = "a proxy or firewall between here and the service likely refused the request"
    return f"{called} answered {_answer(exc)}; {not_no_match}; {cause}"


def unknown_session(exc: NotFoundError, session_id: str, account_id: str) -> UnknownIdError | None:
    """A 404 of the service itself for a session id the user gave: the user must act (exit 2).
    None when the 404 is not the service speaking (a proxy's page): then it stays a service error."""
    if not exc.service_body:
        return None
    return UnknownIdError(
        f"no test session with id {session_id} in account {account_id} (the service answered 404); "
        "check the id: `run --detach` prints it, and only the account that triggered a session sees it"
    )
