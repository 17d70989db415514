"""The analyser's rules for a BROWSER, MULTI_STEP or PLAYWRIGHT check that really ran (protocols/browser,
protocols/playwright): its message names the test and what failed; its steps, console lines and files
are the evidence.

- A page that did not load (`page_load`: net::ERR_CONNECTION_REFUSED at http://...; a refused request of
  the script's own): INFRA ERROR, the build is not up or the check's address is wrong; not the page.
- A failed expect on a page that loaded: ASSERTION FAILURE, the page changed (the build) or the check is
  out of date; the locator, expected and received are in the message, with what else the pages
  reported (console errors, failed requests, HTTP errors), which often is the cause.
- A MULTI_STEP check has no page: a failed expect after one of its requests answered 500 or more is
  named by that answer (`GET http://.../api/cart answered HTTP 503`): APPLICATION ERROR, or INFRA
  ERROR for 502, 503 and 504 (a gateway or an unavailable service), as an API check's; else its
  expectation failed on the answers (ASSERTION FAILURE, without "the page").
- A timeout: TIMEOUT naming the step it waited on (a locator that never matched, a load that never ended).
- Any other error the script threw: SCRIPT ERROR.
Configuration errors (no Chromium, no Playwright, a script without test()) keep the engine's rule.
Everything the page or the script said is hostile: quoted only through `for_line`, shortened.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from runner.checks.analysis.shared import MODEL_PREFIX
from runner.checks.failures import ErrorClass, FailureKind
from runner.core.text import for_line
from runner.models import Analysis, Artifact, Evidence, ReferenceLink
from runner.models.check_definitions import CHECK_KINDS

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt

# Types that run here in a browser (a suite: the same report), from the one table of check kinds.
BROWSER_TYPES = frozenset(name for name, kind in CHECK_KINDS.items() if kind.browser and kind.runs)
MAX_QUOTE = 200
MAX_EVENTS_QUOTED = 3
LINKS = {
    "timeouts": ReferenceLink(
        url="https://www.checklyhq.com/docs/detect/synthetic-monitoring/browser-checks/timeouts/",
        title="Browser check timeouts",
    ),
    "assertions": ReferenceLink(
        url="https://playwright.dev/docs/test-assertions", title="Playwright: assertions"
    ),
    "network": ReferenceLink(
        url="https://playwright.dev/docs/api/class-page#page-goto",
        title="Playwright: page.goto and its errors",
    ),
}


def _q(text: object, limit: int = MAX_QUOTE) -> str:
    return for_line(str(text), limit)


def analyse_browser(ev: Attempt, check_type: str, check_name: str) -> tuple[Analysis, str] | None:
    """The analysis of a browser check's failure; None for another type or a configuration error."""
    if check_type not in BROWSER_TYPES or ev.error_class in (None, ErrorClass.CONFIGURATION_ERROR):
        return None
    check = f'{check_type} check "{_q(check_name, 80)}"'
    message = _q(ev.message or "", 400)
    seen = _pages_said(ev.console, "requests" if check_type == "MULTI_STEP" else "pages")
    evidence = [Evidence(artifacts=[Artifact(name="BROWSER_RESULT", type="REQUEST")], description=message)]
    files = ", ".join(f"{_q(f.name, 30)} {_q(f.path, 200)}" for f in ev.files[:6])
    if files:
        kinds = sorted({f.kind for f in ev.files})
        evidence.append(
            Evidence(artifacts=[Artifact(name=k, type=k) for k in kinds], description=f"Files: {files}.")
        )
    if ev.error_class is ErrorClass.NETWORK_ERROR:
        analysis = Analysis(
            classification="INFRA ERROR",
            userImpact=f"The {check} got no page or answer at all: users cannot reach it either.",
            rootCause=f"{message}. Nothing answered at that address: the build is not running (yet), "
            "crashed on start, or the check's URL points at another host or port than the build listens on. "
            "This is not about the page's content.",
            codeFix="Start the build before the checks and wait until it answers; check the variables that "
            "build the URL (e.g. SHOP_URL) for this environment.",
            evidence=evidence,
            referenceLinks=[LINKS["network"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-page-load"
    if ev.error_class is ErrorClass.TIMEOUT:
        waited = next((s.name for s in ev.steps if not s.passed and not s.name.startswith("test ")), None)
        step = f' The step it stopped at: "{_q(waited, 160)}".' if waited else ""
        analysis = Analysis(
            classification="TIMEOUT",
            userImpact=f"A step of the {check} did not finish in time: users wait on the same thing.",
            rootCause=f"Time ran out: {message}.{step}{seen} A locator that never matches (an element "
            "renamed or removed) or a page or request that never finishes loading both end so.",
            codeFix="Open the trace at that step: if the element is gone or renamed, fix the build or the "
            "locator; if the page is slow, fix what it waits on before raising the timeout.",
            evidence=evidence,
            referenceLinks=[LINKS["timeouts"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-timeout"
    server = _server_error(ev.console) if check_type == "MULTI_STEP" else None
    if ev.error_kind is FailureKind.ASSERTION and server is not None:
        method, url, status = server
        gateway = status in (502, 503, 504)
        analysis = Analysis(
            classification="INFRA ERROR" if gateway else "APPLICATION ERROR",
            userImpact=f"Users of the {check} get a server error (HTTP {status}) from {_q(url, 160)}.",
            rootCause=f"{_q(method, 16)} {_q(url, 200)} answered HTTP {status}, and the step that "
            f"expected otherwise failed: {message}.{seen} The service failed this request; the "
            "expectation did not change. "
            + (
                "A 502, 503 or 504 comes from a gateway or a service that is down or overloaded."
                if gateway
                else "A 500 is an unhandled error in the request's handler."
            ),
            codeFix="Find the server's log entry for this request and fix the failure behind it"
            + (" (is the upstream service up?)" if gateway else "")
            + "; the check's expectation stays as it is.",
            evidence=evidence,
            referenceLinks=[LINKS["assertions"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-multistep-server-error"
    if ev.error_kind is FailureKind.ASSERTION:
        loaded = "The requests were answered" if check_type == "MULTI_STEP" else "The page loaded"
        what = "answer" if check_type == "MULTI_STEP" else "page or answer"
        analysis = Analysis(
            classification="ASSERTION FAILURE",
            userImpact=f"What the {check} verifies changed: users see the same difference.",
            rootCause=f"{loaded} and an expectation failed: {message}.{seen} Either the build changed "
            f"this {what} (a regression) or the check's expectation is out of date.",
            codeFix="Compare the screenshot and trace with what the check expects: fix the regression in the "
            "build, or update the expectation if the new page is intended.",
            evidence=evidence,
            referenceLinks=[LINKS["assertions"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-assertion"
    analysis = Analysis(
        classification="SCRIPT ERROR",
        userImpact=f"The {check} stopped with an error before it could judge the page.",
        rootCause=f"The script threw: {message}.{seen}",
        codeFix="Read the error's line in the trace: the script expects something the page no longer has (a "
        "missing element, a changed response), or the script itself has a bug.",
        evidence=evidence,
        referenceLinks=[LINKS["assertions"]],
    )
    return analysis, f"{MODEL_PREFIX}/run-browser-script-error"


_HTTP_ERROR = re.compile(r"HTTP error: (\S{1,16}) (\S{1,2000}): HTTP (\d{3})")


def _server_error(console: tuple[str, ...]) -> tuple[str, str, int] | None:
    """The first answer of 500 or more a MULTI_STEP check's requests got (fixtures.cjs: `request`)."""
    for line in console:
        match = _HTTP_ERROR.fullmatch(line)
        if match and int(match.group(3)) >= 500:
            return match.group(1), match.group(2), int(match.group(3))
    return None


def _pages_said(console: tuple[str, ...], who: str = "pages") -> str:
    """` The pages also reported: console error: ...; HTTP error: GET http://.../api/cart: HTTP 503.`"""
    said = [_q(line, 160) for line in console[:MAX_EVENTS_QUOTED]]
    if len(console) > MAX_EVENTS_QUOTED:
        said.append(f"{len(console) - MAX_EVENTS_QUOTED} more")
    return f" The {who} also reported: {'; '.join(said)}." if said else ""
