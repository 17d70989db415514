"""The analyser's rules for a BROWSER or MULTI_STEP check that really ran (checks/outcome.py BrowserEvidence).

- A page that did not load (`net::ERR_CONNECTION_REFUSED`, ECONNREFUSED from a request): INFRA ERROR,
  the build is not up or the check's address is wrong; not the page's content.
- A failed expect on a page that loaded: ASSERTION FAILURE, the page changed (the build) or the check is
  out of date; the locator, expected and received are quoted, with what else the page said (console
  errors, failed requests, HTTP errors), which often is the cause.
- A timeout: TIMEOUT naming the step it waited on (a locator that never appeared, a load that never ended).
- Any other error the script threw: SCRIPT ERROR.
Everything the page or script said is hostile: quoted only through `for_line`, shortened. The files
(screenshot, trace) are named as evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runner.checks.analysis.by_message import MODEL_PREFIX
from runner.core.text import for_line
from runner.models import Analysis, Artifact, Evidence, ReferenceLink

if TYPE_CHECKING:
    from runner.checks.outcome import Attempt, BrowserEvidence, BrowserTest

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
    """The analysis of a browser check's failure; None when the evidence has no browser part."""
    browser = ev.browser
    if browser is None or ev.error_class == "CONFIGURATION_ERROR":
        return None
    failed = next((t for t in browser.tests if t.status not in ("passed", "skipped")), None)
    check = f'{_q(check_type, 20)} check "{_q(check_name, 80)}"'
    message = _q(ev.message or "", 400)
    test = f'test "{_q(failed.title, 100)}"' if failed is not None else "the script"
    seen = _page_said(browser)
    files = _files(browser)
    evidence = [Evidence(artifacts=[Artifact(name="BROWSER_RESULT", type="REQUEST")], description=message)]
    if files:
        evidence.append(
            Evidence(artifacts=[Artifact(name="TRACE", type="TRACE")], description=f"Files: {files}.")
        )
    if ev.error_class == "NETWORK_ERROR":
        analysis = Analysis(
            classification="INFRA ERROR",
            userImpact=f"The page of {check} did not load at all: users cannot reach it.",
            rootCause=f"In {test} the browser got no page: {message}. Nothing answered at that address: the "
            "build is not running (yet), crashed on start, or the check's URL points at another host or port "
            "than the build listens on. This is not about the page's content.",
            codeFix="Start the build before the checks and wait until it answers; check the variables that "
            "build the URL (SHOP_URL and the like) for this environment.",
            evidence=evidence,
            referenceLinks=[LINKS["network"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-page-load"
    if ev.error_class == "TIMEOUT":
        step = _step(failed)
        waited = f" while it waited on {step}" if step else ""
        analysis = Analysis(
            classification="TIMEOUT",
            userImpact=f"A step of {check} did not finish in time: users wait on the same thing or give up.",
            rootCause=f"In {test} time ran out{waited}: {message}.{seen} A locator that never matches (the "
            "element was renamed or removed) or a page or request that never finishes loading both end so.",
            codeFix="Open the trace at that step: if the element is gone or renamed, fix the build or the "
            "locator; if the page is slow, fix what it waits on before raising the timeout.",
            evidence=evidence,
            referenceLinks=[LINKS["timeouts"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-timeout"
    if ev.error_kind in ("assertion", "should_fail"):
        analysis = Analysis(
            classification="ASSERTION FAILURE",
            userImpact=f"What {check} verifies on the page changed: users see the same difference.",
            rootCause=f"The page loaded, and in {test} an expectation failed: {message}.{seen} Either the "
            "build changed this page (a regression) or the check's expectation is out of date.",
            codeFix="Compare the screenshot with what the check expects: fix the regression in the build, "
            "or update the expectation if the new page is intended.",
            evidence=evidence,
            referenceLinks=[LINKS["assertions"]],
        )
        return analysis, f"{MODEL_PREFIX}/run-browser-assertion"
    analysis = Analysis(
        classification="SCRIPT ERROR",
        userImpact=f"{check[0].upper()}{check[1:]} stopped with an error before it could judge the page.",
        rootCause=f"In {test} the script threw: {message}.{seen}",
        codeFix="Read the error's line in the trace: a script that expects something the page no longer "
        "has (a missing element, a changed response) or a bug in the script itself.",
        evidence=evidence,
        referenceLinks=[LINKS["assertions"]],
    )
    return analysis, f"{MODEL_PREFIX}/run-browser-script-error"


def _step(test: BrowserTest | None) -> str:
    if test is None or not test.waiting_on:
        return ""
    return f'"{_q(test.waiting_on, 120)}"'


def _page_said(browser: BrowserEvidence) -> str:
    """` The page also reported: console error "..."; GET http://.../api/cart HTTP 503.` or ""."""
    said = []
    for event in browser.events[:MAX_EVENTS_QUOTED]:
        if event.kind in ("requestfailed", "response"):
            said.append(f"{_q(event.method, 10)} {_q(event.url, 120)} {_q(event.text, 80)}")
        else:
            said.append(
                f'{"page error" if event.kind == "pageerror" else "console error"} "{_q(event.text, 120)}"'
            )
    more = len(browser.events) - MAX_EVENTS_QUOTED
    if more > 0:
        said.append(f"{more} more")
    return f" The page also reported: {'; '.join(said)}." if said else ""


def _files(browser: BrowserEvidence) -> str:
    return ", ".join(f"{_q(a.name, 30)} {_q(a.path, 200)}" for a in browser.artifacts[:6])
