"""Production's assertion sources and its 14 comparisons, evaluated on real responses (and a few values)."""

from __future__ import annotations

from typing import Any

from checks_servers import HttpServer

from runner.checks import Attempt, run_check
from runner.checks.assertions import evaluate
from runner.models.check_definitions import COMPARISONS, Assertion, parse_check_definition


def a(
    source: str, comparison: str, target: str = "", prop: str = "", regex: str | None = None
) -> dict[str, Any]:
    return {"source": source, "comparison": comparison, "target": target, "property": prop, "regex": regex}


def run_api(url: str, assertions: list[dict[str, Any]]) -> Attempt:
    definition = {"name": "assertions", "checkType": "API", "request": {"url": url, "assertions": assertions}}
    return run_check(parse_check_definition(definition), max_run_seconds=30).final


# (assertion, expected to pass) against /json: JSON_DOC in checks_servers.py.
JSON_CASES: list[tuple[dict[str, Any], bool]] = [
    (a("JSON_BODY", "EQUALS", "42", "$.data.id"), True),
    (a("JSON_BODY", "EQUALS", "42.0", "$.data.id"), True),  # numbers compare as numbers
    (a("JSON_BODY", "GREATER_THAN", "2000", "$.data.id"), False),
    (a("JSON_BODY", "LESS_THAN", "100", "$.data.id"), True),
    (a("JSON_BODY", "EQUALS", "widget", "$.data.name"), True),
    (a("JSON_BODY", "EQUALS", "Widget", "$.data.name"), False),  # text: case matters
    (a("JSON_BODY", "NOT_EQUALS", "gadget", "$.data.name"), True),
    (a("JSON_BODY", "CONTAINS", "idg", "$.data.name"), True),
    (a("JSON_BODY", "NOT_CONTAINS", "xyz", "$.data.name"), True),
    (a("JSON_BODY", "EQUALS", "true", "$.data.active"), True),
    (a("JSON_BODY", "EQUALS", "false", "$.data.owner.site_admin"), True),
    (a("JSON_BODY", "IS_NULL", "", "$.data.nothing"), True),
    (a("JSON_BODY", "IS_NULL", "", "$.data.missing"), True),  # nothing found counts as null
    (a("JSON_BODY", "NOT_NULL", "", "$.data.id"), True),
    (a("JSON_BODY", "NOT_NULL", "", "$.data.missing"), False),
    (a("JSON_BODY", "IS_EMPTY", "", "$.data.empty"), True),
    (a("JSON_BODY", "NOT_EMPTY", "", "$.data.tags"), True),
    (a("JSON_BODY", "HAS_KEY", "owner", "$.data"), True),
    (a("JSON_BODY", "NOT_HAS_KEY", "password", "$.data"), True),
    (a("JSON_BODY", "HAS_VALUE", "beta", "$.data.tags"), True),
    (a("JSON_BODY", "NOT_HAS_VALUE", "gamma", "$.data.tags"), True),
    (a("JSON_BODY", "CONTAINS", "beta", "$.data.tags"), False),  # element by element: "alpha" fails
    (a("JSON_BODY", "LESS_THAN", "3", "$.items"), False),  # production's [1,5,2] example
    (a("JSON_BODY", "LESS_THAN", "10", "$.items"), True),
    (a("JSON_BODY", "EQUALS", "3", "$.items.length"), True),  # production's .length extension
    (a("JSON_BODY", "EQUALS", "A", "$.books[?(@.price<10)].title"), True),
    (a("JSON_BODY", "EQUALS", "B", "$..books[?(@.isbn)].title"), True),
    (a("JSON_BODY", "EQUALS", "B", '$.books[?(@.price<20 && @.category=="fiction")].title'), True),
    (a("JSON_BODY", "EQUALS", "C", "$.books[-1:].title"), True),
    (a("JSON_BODY", "EQUALS", "B", "$.books.[1].title"), True),  # `$.[1]` as production's docs write it
    (a("JSON_BODY", "CONTAINS", "fic", "$.books[*].category"), False),  # "reference" fails
    (a("HEADERS", "CONTAINS", "application/json", "content-type"), True),
    (a("HEADERS", "EQUALS", "application/json; charset=utf-8", "Content-Type"), True),
    (a("HEADERS", "IS_NULL", "", "x-not-sent"), True),
    (a("HEADERS", "HAS_KEY", "content-length"), True),
    (a("HEADERS", "EQUALS", "utf-8", "content-type", regex="charset=([\\w-]+)"), True),
    (a("TEXT_BODY", "CONTAINS", "widget"), True),
    (a("TEXT_BODY", "EQUALS", "widget", '"name": "(\\w+)"'), True),  # the regex in `property`
    (a("TEXT_BODY", "GREATER_THAN", "40", regex='"id": (\\d+)'), True),  # or in `regex`
    (a("TEXT_BODY", "IS_EMPTY", "", "no such (text)"), True),  # no match: nothing found
    (a("STATUS_CODE", "EQUALS", "200"), True),
    (a("STATUS_CODE", "NOT_EQUALS", "500"), True),
    (a("STATUS_CODE", "GREATER_THAN", "199"), True),
    (a("STATUS_CODE", "LESS_THAN", "300"), True),
    (a("RESPONSE_TIME", "LESS_THAN", "5000"), True),
    (a("RESPONSE_TIME", "GREATER_THAN", "-1"), True),
]


def test_every_source_and_comparison_on_a_real_json_response(web: HttpServer) -> None:
    attempt = run_api(web.url("/json"), [case for case, _ in JSON_CASES])
    got = [(r.label(), r.passed) for r in attempt.assertions]
    want = [(r.label(), expected) for r, (_, expected) in zip(attempt.assertions, JSON_CASES, strict=True)]
    assert got == want
    used = {case["comparison"] for case, _ in JSON_CASES}
    assert used == set(COMPARISONS)  # all 14
    # The first failing assertion is the check's failure, with what came back.
    assert not attempt.passed and attempt.error_class == "ASSERTION_FAILURE"
    assert attempt.message == "JSON_BODY $.data.id GREATER_THAN 2000: received 42"
    assert attempt.failed_assertion is not None and attempt.failed_assertion.actual == "42"


def test_messages_say_what_came_back(web: HttpServer) -> None:
    cases = [
        a("JSON_BODY", "LESS_THAN", "3", "$.items"),
        a("JSON_BODY", "EQUALS", "1", "$.data.missing"),
        a("JSON_BODY", "EQUALS", "1", "data.id"),
        a("JSON_BODY", "EQUALS", "1", "$.data["),
        a("HEADERS", "GREATER_THAN", "5", "content-type"),
        a("TEXT_BODY", "EQUALS", "x", "(unclosed"),
    ]
    results = run_api(web.url("/json"), cases).assertions
    details = [r.describe() for r in results]
    assert details[0] == "JSON_BODY $.items LESS_THAN 3: received [1,5,2]"
    assert details[1] == "JSON_BODY $.data.missing EQUALS 1: found nothing"
    assert details[2] == "JSON_BODY data.id EQUALS 1: the JSONPath 'data.id' must start with $"
    assert details[3].startswith("JSON_BODY $.data[ EQUALS 1: invalid JSONPath '$.data[': ")
    assert (
        details[4]
        == "HEADERS content-type GREATER_THAN 5: received application/json; charset=utf-8, not a number"
    )
    assert details[5].startswith("TEXT_BODY (unclosed EQUALS x: invalid regular expression '(unclosed'")
    assert not any(r.passed for r in results)


def test_header_regex_and_text_regex_as_production_documents_them(web: HttpServer) -> None:
    headers = run_api(
        web.url("/headers"),
        [
            a("HEADERS", "GREATER_THAN", "100000", "strict-transport-security", regex="max-age=(\\d+)"),
            a("HEADERS", "GREATER_THAN", "0", "x-rate-limit-remaining"),
        ],
    )
    assert headers.passed, headers.message
    html = run_api(
        web.url("/html"),
        [
            a("TEXT_BODY", "EQUALS", "en", 'lang="(.{2})"'),
            a("TEXT_BODY", "EQUALS", "html", "/<!DOCTYPE (.{4})/i"),
        ],
    )
    assert html.passed, html.message


def test_json_body_needs_a_json_response(web: HttpServer) -> None:
    id_42 = [a("JSON_BODY", "EQUALS", "42", "$.data.id")]
    text = run_api(web.url("/textjson"), id_42)
    assert (
        text.message == "JSON_BODY $.data.id EQUALS 42: the response is not JSON (Content-Type: text/plain)"
    )
    broken = run_api(web.url("/notjson"), id_42)
    assert broken.message == "JSON_BODY $.data.id EQUALS 42: the response body is not valid JSON"


def _eval(source: str, comparison: str, target: str, value: Any, prop: str = "") -> bool:
    assertion = Assertion(source=source, comparison=comparison, target=target, property=prop)
    return evaluate(assertion, {source: value}).passed


def test_values_edge_cases() -> None:
    assert _eval("JSON_BODY", "EQUALS", "1", {"a": []}, "$.a")  # an empty array: every() of nothing holds
    assert not _eval("JSON_BODY", "EQUALS", "1", {"a": []}, "$.a[*]")  # ... a path selecting nothing does not
    assert _eval("JSON_BODY", "EQUALS", '{"b":1}', {"a": {"b": 1}}, "$.a")  # objects as compact JSON
    assert _eval("JSON_BODY", "EQUALS", "null", {"a": None}, "$.a")
    assert not _eval("JSON_BODY", "GREATER_THAN", "abc", {"a": 5}, "$.a")
    assert not _eval("JSON_BODY", "EQUALS", "true", {"a": 1}, "$.a")  # no loose truthiness
    assert _eval("JSON_BODY", "EQUALS", "1e3", 1000, "")
    assert _eval("RESPONSE_CODE", "EQUALS", "NOERROR", "NOERROR")
    unknown = evaluate(
        Assertion(source="RESPONSE_DATA", comparison="EQUALS", target="x"), {"STATUS_CODE": 200}
    )
    assert (
        not unknown.passed and unknown.detail == "RESPONSE_DATA is not an assertion source of this check type"
    )
