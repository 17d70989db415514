"""What a browser attempt showed, from reporter.cjs's JSON: the tests, their steps, page events and files,
and the attempt's verdict with one line that says why (docs/checks.md, "Browser").

- Each test() is a result of the check; the check passes when every test ends as expected.
- The first failed test decides the message, prefixed with its title:
  - a page that did not load (`net::ERR_...`): NETWORK_ERROR `page_load` (a request of Node's own:
    `connection_refused` or `network`), Playwright's line as it is
    (`page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:8380/login`); onlyOn NETWORK_ERROR
    retries it;
  - a failed expect: ASSERTION_FAILURE `assertion`, naming the locator, what was expected and received;
  - a test or action timeout: TIMEOUT `timeout`, naming the step it waited on;
  - any other error the script threw: SCRIPT_ERROR `script`, its first line.
- A script that does not compile or defines no test(): CONFIGURATION_ERROR (never retried).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.checks.failures import Failure, FailureKind
from runner.checks.outcome import SuiteTest

MAX_EVENTS = 100


@dataclass(frozen=True)
class BrowserStep:
    """One step of a test as Playwright names it (`Navigate to "/login"`, `Expect "toHaveText"
    getByRole('heading')`, a test.step's title), its time and its error's first line."""

    title: str
    category: str  # pw:api, expect, test.step
    duration_ms: float
    error: str | None = None


@dataclass(frozen=True)
class BrowserTest:
    """One test() of a check's script: a result of the check."""

    title: str
    status: str  # Playwright's: passed, failed, timedOut, skipped, interrupted
    duration_ms: float
    error: str | None = None  # as Playwright wrote it (several lines: Locator, Expected, Received)
    steps: tuple[BrowserStep, ...] = ()
    waiting_on: str | None = None  # the step it stopped at (a timeout's step)
    runs: tuple[str, ...] = ()  # the status of each of its runs (its retries), first to last


@dataclass(frozen=True)
class PageEvent:
    """A console error, an uncaught page error, a failed request or an HTTP error status a page saw."""

    kind: str  # console, pageerror, requestfailed, response
    text: str
    url: str = ""
    method: str = ""
    status: int | None = None

    def line(self) -> str:
        """`console error: boom (http://...)`, `request failed: GET http://...: net::ERR_...`."""
        if self.kind in ("requestfailed", "response"):
            what = "request failed" if self.kind == "requestfailed" else "HTTP error"
            return f"{what}: {self.method} {self.url}: {self.text}"
        what = "page error" if self.kind == "pageerror" else "console error"
        return f"{what}: {self.text}" + (f" ({self.url})" if self.url else "")


@dataclass(frozen=True)
class Artifact:
    """A file a test left (screenshot, trace.zip): the user's own, kept as written."""

    name: str
    path: str
    content_type: str


MAX_LINE = 300
MAX_RUNS = 20  # a test's runs kept (Playwright's retries: production's default is 2)
MAX_SUITE_TESTS = 500  # a suite's tests listed in the results
KEPT_ATTACHMENTS = frozenset({"screenshot", "trace", "video", "error-context"})
_NET_ERROR = re.compile(r"net::ERR_[A-Z_]+(?: at \S+)?")
# The same from Node's own requests (the `request` fixture of a MULTI_STEP check).
_NODE_NET_ERROR = re.compile(
    r"(?:connect )?(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ENETUNREACH)\b[^\n]*"
)
_FIELD = re.compile(
    r"^\s*(Locator|Expected|Received|Expected string|Received string|Expected pattern):\s*(.*)$"
)


def browser_tests(report: Mapping[str, Any]) -> tuple[BrowserTest, ...]:
    out = []
    for item in _list(report.get("tests")):
        if not isinstance(item, Mapping):
            continue
        errors = [e for e in _list(item.get("errors")) if isinstance(e, Mapping)]
        steps = tuple(
            BrowserStep(
                title=str(s.get("title", "")),
                category=str(s.get("category", "")),
                duration_ms=_number(s.get("durationMs")),
                error=summary(s["error"].get("message")) if isinstance(s.get("error"), Mapping) else None,
            )
            for s in _list(item.get("steps"))
            if isinstance(s, Mapping)
        )
        status = str(item.get("status", "failed"))
        expected = str(item.get("expected", "passed"))
        out.append(
            BrowserTest(
                title=str(item.get("title", "")),
                status=status if status != expected or status == "passed" else "passed",
                duration_ms=_number(item.get("durationMs")),
                error=str(errors[0].get("message", "")).strip() if errors and status != expected else None,
                steps=steps,
                waiting_on=_waited_on(steps, item.get("waitingOn")),
                runs=tuple(str(r) for r in _list(item.get("runs")))[:MAX_RUNS],
            )
        )
    return tuple(out)


def events_of(report: Mapping[str, Any]) -> tuple[PageEvent, ...]:
    out: list[PageEvent] = []
    for item in _list(report.get("tests")):
        for attachment in _list(item.get("attachments") if isinstance(item, Mapping) else None):
            if not isinstance(attachment, Mapping) or attachment.get("name") != "testsession-events":
                continue
            try:
                events = json.loads(str(attachment.get("body") or "[]"))
            except ValueError:
                continue
            for e in _list(events):
                if isinstance(e, Mapping) and len(out) < MAX_EVENTS:
                    status = e.get("status")
                    out.append(PageEvent(kind=str(e.get("kind", "")), text=str(e.get("text", ""))[:MAX_LINE],
                                         url=str(e.get("url", "")), method=str(e.get("method", "")),
                                         status=status if isinstance(status, int) else None))  # fmt: skip
    return tuple(out)


def suite_tests(tests: tuple[BrowserTest, ...]) -> tuple[SuiteTest, ...]:
    """Each test of a suite with its outcome and its runs: `flaky` when it passed on a retry, as
    Playwright's own reporters say (a retry hidden behind the check's one attempt otherwise)."""
    out = []
    for test in tests[:MAX_SUITE_TESTS]:
        runs = test.runs or (test.status,)
        flaky = test.status == "passed" and any(r not in ("passed", "skipped") for r in runs[:-1])
        out.append(
            SuiteTest(name=test.title[:MAX_LINE], status="flaky" if flaky else test.status, runs=len(runs))
        )
    return tuple(out)


def artifacts_of(report: Mapping[str, Any]) -> tuple[Artifact, ...]:
    out = []
    for item in _list(report.get("tests")):
        for a in _list(item.get("attachments") if isinstance(item, Mapping) else None):
            if isinstance(a, Mapping) and a.get("path") and a.get("name") in KEPT_ATTACHMENTS:
                out.append(Artifact(str(a["name"]), str(a["path"]), str(a.get("contentType", ""))))
    return tuple(out)


def verdict(
    report: Mapping[str, Any], tests: tuple[BrowserTest, ...], code: str = "script"
) -> Failure | None:
    """Why the attempt failed (None: every test passed), from the report; `code` names the field of
    what ran (a Playwright check suite's: testCommand) when nothing could be checked."""
    errors = [e for e in _list(report.get("errors")) if isinstance(e, Mapping)]
    if not tests:
        if errors:
            line = first_line(errors[0].get("message"))
            return _failed(FailureKind.INVALID_DEFINITION, f"{code}: it cannot run: {line}")
        return _failed(FailureKind.INVALID_DEFINITION, f"{code}: it defines no test(): nothing was checked")
    failed = next((t for t in tests if t.status not in ("passed", "skipped")), None)
    if failed is None:
        if errors:  # an error outside any test (an afterAll hook)
            return _failed(FailureKind.SCRIPT, first_line(errors[0].get("message")))
        return None
    return describe_failure(failed)


def describe_failure(test: BrowserTest) -> Failure:
    text = test.error or ""
    first = first_line(text)
    prefix = f"{test.title}: " if test.title else ""
    net = _NET_ERROR.search(text)
    if net is not None:
        first = first.removeprefix("Error: ")
        action = first.split(":", 1)[0] if ": net::" in first else "page.goto"
        return _failed(FailureKind.PAGE_LOAD, f"{prefix}{action}: {net[0]}", network=True)
    node_net = _NODE_NET_ERROR.search(first)
    if node_net is not None:
        action = first.removeprefix("Error: ").split(":", 1)[0]
        kind = FailureKind.CONNECTION_REFUSED if "ECONNREFUSED" in node_net[0] else FailureKind.NETWORK
        return _failed(kind, f"{prefix}{action}: {node_net[0]}", network=True)
    if test.status == "timedOut" or ("Timeout" in first and "exceeded" in first):
        step = test.waiting_on
        where = f" waiting on {step}" if step else ""
        return _failed(FailureKind.TIMEOUT, f"{prefix}{first}{where}")
    fields = _expect_fields(text)
    lines = [line.strip() for line in text.split("Call log:")[0].splitlines() if line.strip()]
    if fields or any(line.startswith(("expect(", "Error: expect(")) for line in lines):
        if fields:
            shown = ", ".join(f"{name.lower()} {value}" for name, value in fields)
            said = f"{first.removeprefix('Error: ')}: {shown}"
        else:  # expect(response).toBeOK() and the like: the call log says what came back
            said = ": ".join(line.removeprefix("Error: ")[:MAX_LINE] for line in lines[:2]) + _exchange(text)
        return _failed(FailureKind.ASSERTION, prefix + said)
    return _failed(FailureKind.SCRIPT, f"{prefix}{first or test.status}")


def _exchange(text: str) -> str:
    """`: GET http://.../api/cart received 503 Service Unavailable, body {"error": ...}` from a call log."""
    lines = [line.strip() for line in text.splitlines()]
    sent = next((line[1:].strip() for line in lines if line.startswith("\u2192")), None)
    got = next((line[1:].strip() for line in lines if line.startswith("\u2190")), None)
    if got is None:
        return ""
    body = ""
    if "Response text:" in lines:
        rest = lines[lines.index("Response text:") + 1 :]
        body = f", body {rest[0][:120]}" if rest and rest[0] else ""
    return f": {sent + ' ' if sent else ''}received {got[:MAX_LINE]}{body}"


def summary(value: Any) -> str:
    """An error in one line: its first line, and an expect's locator, expected and received."""
    text = str(value or "")
    fields = ", ".join(f"{name.lower()} {v}" for name, v in _expect_fields(text))
    first = first_line(text).removeprefix("Error: ")
    return f"{first}: {fields}"[:1000] if fields else first


def _expect_fields(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match and match[2].strip():
            out.append((match[1].split()[0], match[2].strip()[:MAX_LINE]))
        if line.strip().startswith("Call log:"):
            break
    return out


def _waited_on(steps: tuple[BrowserStep, ...], running: Any) -> str | None:
    """The action or expect a failed test stopped at: the first that failed, else the one still running."""
    for step in steps:
        if step.error and step.category in ("pw:api", "expect"):
            return step.title
    return str(running) if running else None


def _failed(kind: FailureKind, message: str, *, network: bool = False) -> Failure:
    return Failure(kind, message[:1000], network=network)


def first_line(value: Any) -> str:
    for line in str(value or "").splitlines():
        if line.strip():
            return line.strip()[:MAX_LINE]
    return ""


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
