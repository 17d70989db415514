"""What a browser attempt says from Playwright's report (protocols/browser/report.py) and how its failure is
analysed (analysis/by_browser.py): no browser needed, the report's shapes as Playwright 1.58 writes them."""

from __future__ import annotations

from dataclasses import replace

from runner.checks.analysis.by_evidence import analyse_run
from runner.checks.failures import ErrorClass, FailureKind
from runner.checks.outcome import Attempt, EvidenceFile, Step
from runner.checks.protocols.browser.report import (
    BrowserTest,
    browser_tests,
    describe_failure,
    suite_tests,
    verdict,
)

TIMED_OUT = {
    "title": "checkout",
    "status": "timedOut",
    "expected": "passed",
    "durationMs": 30000,
    "errors": [{"message": "Test timeout of 30000ms exceeded."}],
    "steps": [
        {"title": 'Navigate to "/cart"', "category": "pw:api", "durationMs": 300, "error": None},
        {"title": "Click getByRole('button', { name: 'Pay' })", "category": "pw:api", "durationMs": 29000,
         "error": {"message": "Error: locator.click: Test timeout of 30000ms exceeded."}},
    ],
}  # fmt: skip


def test_a_timeout_names_the_step_it_waited_on() -> None:
    (test,) = browser_tests({"tests": [TIMED_OUT]})
    failure = describe_failure(test)
    assert failure.kind is FailureKind.TIMEOUT and failure.error_class is ErrorClass.TIMEOUT
    assert failure.message == (
        "checkout: Test timeout of 30000ms exceeded. waiting on Click getByRole('button', { name: 'Pay' })"
    )


def test_a_script_without_tests_or_that_does_not_compile_is_a_configuration_error() -> None:
    none = verdict({"tests": [], "errors": []}, ())
    broken = verdict({"tests": [], "errors": [{"message": "SyntaxError: Unexpected token (3:4)"}]}, ())
    assert none is not None and none.kind is FailureKind.INVALID_DEFINITION and "no test()" in none.message
    assert broken is not None and broken.error_class is ErrorClass.CONFIGURATION_ERROR
    assert "SyntaxError: Unexpected token" in broken.message
    assert verdict({"tests": [{**TIMED_OUT, "status": "skipped", "expected": "skipped"}]}, browser_tests(
        {"tests": [{**TIMED_OUT, "status": "skipped", "expected": "skipped"}]})) is None  # fmt: skip


def _attempt(kind: FailureKind, message: str) -> Attempt:
    return Attempt(
        number=1, started_at=0.0, duration_ms=5000.0, passed=False, error_class=kind.error_class,
        error_kind=kind, message=message, network_failure=kind.error_class is ErrorClass.NETWORK_ERROR,
        steps=(Step("test shopper signs in", False, 4000.0, message),),
        console=("HTTP error: GET http://127.0.0.1:8380/api/me: HTTP 500",),
        files=(EvidenceFile("trace", "TRACE", "testsession-reports/browser/x/attempt-1/trace.zip"),),
    )  # fmt: skip


def test_the_analyses_tell_a_refused_page_from_a_changed_one() -> None:
    error = (
        "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:8380/\nCall log:\n  - navigating"
    )
    refused = describe_failure(BrowserTest("home", "failed", 1.0, error=error))
    assert refused.kind is FailureKind.PAGE_LOAD and refused.network
    analysis, model = analyse_run(_attempt(refused.kind, refused.message), refused.message, "BROWSER", "Home")
    assert (analysis.classification, model) == ("INFRA ERROR", "rules-v1/run-browser-page-load")
    assert "not about the page's content" in analysis.rootCause

    message = (
        "home: expect(locator).toHaveText(expected) failed: locator getByRole('heading'), received \"Oops\""
    )
    analysis, model = analyse_run(_attempt(FailureKind.ASSERTION, message), message, "BROWSER", "Home")
    assert (analysis.classification, model) == ("ASSERTION FAILURE", "rules-v1/run-browser-assertion")
    assert (
        "HTTP error: GET http://127.0.0.1:8380/api/me: HTTP 500" in analysis.rootCause
    )  # what the page said
    assert "trace.zip" in str(analysis.evidence)


def test_a_multi_step_failure_is_named_by_the_answer_that_failed_not_the_page() -> None:
    """A MULTI_STEP check's request answered 503 (fixtures.cjs records its `request` calls): the
    503 of GET /api/cart is the cause, an unavailable service (INFRA ERROR), not a page that changed;
    a 500 is the application's; without a server error its expectation failed on the answers."""
    message = "cart answers: expect(received).toBe(expected) // Object.is equality: expected 200, got 503"
    attempt = _attempt(FailureKind.ASSERTION, message)
    unavailable = replace(attempt, console=("HTTP error: GET http://127.0.0.1:8380/api/cart: HTTP 503",))
    analysis, model = analyse_run(unavailable, message, "MULTI_STEP", "Cart")
    assert (analysis.classification, model) == ("INFRA ERROR", "rules-v1/run-multistep-server-error")
    assert analysis.rootCause.startswith("GET http://127.0.0.1:8380/api/cart answered HTTP 503")
    assert "page" not in analysis.rootCause
    analysis, _ = analyse_run(attempt, message, "MULTI_STEP", "Cart")  # /api/me: HTTP 500
    assert analysis.classification == "APPLICATION ERROR"
    plain = replace(attempt, console=())
    analysis, model = analyse_run(plain, message, "MULTI_STEP", "Cart")
    assert (analysis.classification, model) == ("ASSERTION FAILURE", "rules-v1/run-browser-assertion")
    assert analysis.rootCause.startswith("The requests were answered and an expectation failed")


def test_a_suites_tests_are_listed_with_their_runs_and_a_retried_pass_is_flaky() -> None:
    passed = {"title": "a", "status": "passed", "expected": "passed", "durationMs": 5, "runs": ["passed"]}
    retried = {**passed, "title": "b", "runs": ["failed", "timedOut", "passed"]}
    failed = {**passed, "title": "c", "status": "failed", "runs": ["failed", "failed"]}
    tests = suite_tests(browser_tests({"tests": [passed, retried, failed]}))
    assert [(t.name, t.status, t.runs) for t in tests] == [
        ("a", "passed", 1),
        ("b", "flaky", 3),
        ("c", "failed", 2),
    ]


def test_only_checks_with_the_same_variables_share_a_playwright_run() -> None:
    """A worker's process.env is shared by its tests: a check's secrets never meet another check's."""
    from pathlib import Path

    from runner.checks.protocols.browser.batch import key_of, split_environment
    from runner.checks.protocols.browser.setup import Playwright

    pw = Playwright(Path("/pw"), "1.58.2", "the cache")

    def key(env: dict[str, str], name: str, config: dict[str, object] | None = None) -> object:
        shared, _ = split_environment(env, {"CHECK_NAME": name, "CHECK_ID": None, "CHECK_TYPE": "BROWSER"})
        return key_of(pw, Path("/usr/bin/chromium"), shared, config, 240_000)

    base = {"SHOP_URL": "http://x", "CHECK_TYPE": "BROWSER"}
    assert split_environment({**base, "CHECK_NAME": "a"}, {"CHECK_NAME": "a", "CHECK_TYPE": "BROWSER"}) == (
        {"SHOP_URL": "http://x"},
        {"CHECK_TYPE": "BROWSER", "CHECK_NAME": "a"},
    )
    assert key({**base, "CHECK_NAME": "a"}, "a") == key({**base, "CHECK_NAME": "b"}, "b")
    assert key({**base, "TOKEN": "s3cret-a"}, "a") != key({**base, "TOKEN": "s3cret-b"}, "b")
    # A CHECK_NAME that is not the check's own name (a variable of the session) is not public.
    assert key({**base, "CHECK_NAME": "secret-x"}, "a") != key({**base, "CHECK_NAME": "secret-y"}, "b")
    assert key(base, "a", {"timeout": 5000}) != key(base, "b")
