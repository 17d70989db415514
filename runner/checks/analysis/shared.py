"""What both analysers use: the model name's prefix, quoting bounds, HTTP status words and links.

A status's reason phrase is the standard library's (`http.HTTPStatus`), the same words the rest of
this tool prints; a code it does not know (a 599, a CDN's 520) has none.
"""

from __future__ import annotations

from http import HTTPStatus

from runner.models import ReferenceLink

MODEL_PREFIX = "rules-v1"
MAX_QUOTE = 120  # how much of a hostile text a sentence quotes by default
MDN_STATUS = "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status"
NODE_SYSTEM_ERRORS = "https://nodejs.org/api/errors.html#common-system-errors"


def reason(code: int) -> str | None:
    """`Service Unavailable` for 503; None for a code that is not a standard one."""
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return None


def status_text(code: int) -> str:
    """`503 Service Unavailable`, or `599` alone."""
    phrase = reason(code)
    return f"{code} {phrase}" if phrase else str(code)


def mdn(code: int) -> ReferenceLink:
    """MDN's page for the status, or its list of statuses for a code it has no page for."""
    phrase = reason(code)
    if phrase is None:
        return ReferenceLink(url=MDN_STATUS, title="MDN: HTTP response status codes")
    return ReferenceLink(url=f"{MDN_STATUS}/{code}", title=f"MDN: {code} {phrase}")
