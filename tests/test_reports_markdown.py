"""Markdown summary: verdict first, failures first, escaped, always under the byte limit."""

from __future__ import annotations

import re

import pytest
from outcome_factory import big_outcome, error_group, outcome, result, sample_outcome, session

from runner.job.digest import ORDER
from runner.reports import render_markdown
from runner.reports.markdown import MAX_ROWS, escape_cell, fenced

MIB = 1024 * 1024
STATUS_WORDS = {
    "failed": "failed",
    "error": "error",
    "running": "did not finish",
    "degraded": "degraded",
    "flaky": "flaky",
    "cancelled": "cancelled",
    "passed": "passed",
}


def table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| Status")]


def cells(row: str) -> list[str]:
    # Split on pipes that are not escaped: a cell can never add a column.
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]


def row_verdict(row: str) -> str:
    status = cells(row)[0]
    return next(v for v, word in STATUS_WORDS.items() if status.endswith(word))


def test_verdict_line_counts_exit_code_and_links_come_first() -> None:
    md = render_markdown(sample_outcome())
    lines = md.splitlines()
    assert lines[0] == "## ❌ Failed — 6 of 14 checks failed the gate (2 failed, 2 error, 2 cancelled)"
    assert lines[2] == (
        "**Exit code 1** · 4 passed · 2 failed · 2 degraded · 2 flaky · 2 error · 2 cancelled"
    )
    assert "(https://app.example.test/test-sessions/ts-us-east-1)" in md
    assert "**Commit** 3f2a9c1d4e5b · **Branch** feature/checkout" in md
    assert md.index("**Commit**") < md.index("| Status |") < md.index("<details>")


def test_passed_run() -> None:
    out = outcome([session([result("passed"), result("degraded", "Slow API")])])
    md = render_markdown(out)
    assert md.startswith("## ✅ Passed — all 2 checks passed (1 degraded)\n")
    assert "<details>" not in md  # degraded passes unless failOnDegraded


def test_partial_run_and_message_are_stated() -> None:
    out = outcome(
        [session([result("passed"), result("running", "Slow page")])],
        verdict="timeout",
        exitCode=3,
        partial=True,
        message="deadline of 600 s passed; the session was cancelled",
    )
    md = render_markdown(out)
    assert md.startswith("## ⏱️ Timed out — 1 of 2 checks failed the gate (1 did not finish)")
    assert "**Partial results:**" in md
    assert "deadline of 600 s passed; the session was cancelled" in md
    assert "**Exit code 3**" in md
    assert "The run ended before this check finished: deadline of 600 s passed" in md


def test_table_orders_failures_first() -> None:
    md = render_markdown(sample_outcome())
    verdicts = [row_verdict(row) for row in table_rows(md)]
    assert len(verdicts) == 14
    assert verdicts == sorted(verdicts, key=ORDER.index)
    assert cells(table_rows(md)[0]) == [
        "❌ failed",
        "Checkout API",
        "API",
        "us-east-1",
        "1.5 s",
        "1",
        "[open](https://app.example.test/results/res-checkout-api-us-east-1-failed)",
    ]


def test_cells_escape_pipes_newlines_backticks_and_html() -> None:
    name = "a|b\nc`d` <script>x</script> [l](javascript:alert(1)) *e* _f_ ~g~ \r\n& \\|"
    out = outcome([session([result("failed", name, checkType="API|X", link="https://x.test/a b|(c)")])])
    md = render_markdown(out)
    row = table_rows(md)[0]
    assert "\n" not in row
    columns = cells(row)
    assert len(columns) == 7
    check = columns[1]
    assert "<script>" not in check and "&lt;script&gt;" in check
    assert "\\|" in check and "\\`" in check and "\\[" in check
    assert columns[2] == "API\\|X"
    assert columns[6] == "[open](https://x.test/a%20b%7C%28c%29)"
    assert escape_cell("x" * 500).endswith("…")


def test_non_http_links_are_not_linked() -> None:
    out = outcome([session([result("passed", link="javascript:alert(1)")])])
    assert cells(table_rows(render_markdown(out))[0])[6] == "–"


def test_details_hold_error_and_analysis_or_why_not() -> None:
    md = render_markdown(sample_outcome())
    blocks = re.findall(r"<details>.*?</details>", md, re.DOTALL)
    assert len(blocks) == 6  # 2 failed + 2 error + 2 cancelled fail the gate; degraded/flaky pass
    first = blocks[0]
    assert "<summary>❌ failed <b>Checkout API [us-east-1]</b> — Error: expect" in first
    assert "```text\nError: expect(received).toBe(expected)" in first
    assert "at Object.<anonymous>" in first  # inside a code block: shown as is
    for part in (
        "**Classification:** BACKEND\\_ERROR",
        "**Root cause:** The payment service",
        "**User impact:** Customers cannot",
        "**Code fix:**",
        "**Evidence:**",
        "[Connection pools](https://app.example.test/docs/pools)",
    ):
        assert part in first
    assert "Root cause analysis unavailable: 402 Payment Required" in blocks[2]


def test_shared_error_group_is_explained_once() -> None:
    group = error_group("eg-1", count=2)
    results = [result("failed", f"Check {n}", group_ids=["eg-1"]) for n in range(2)]
    md = render_markdown(outcome([session(results, [group])]))
    assert md.count("**Root cause:**") == 1
    assert "see error group eg-1 above (BACKEND\\_ERROR)" in md


def test_fence_cannot_be_broken_by_content() -> None:
    error = "before\n```\n</details>\n# not a heading\n````\nafter"
    md = render_markdown(outcome([session([result("failed", error=error)])]))
    assert "`````text\nbefore\n```\n</details>\n# not a heading\n````\nafter\n`````" in md
    assert fenced("plain").startswith("```text\n")
    assert fenced("").endswith("(empty)\n```")


def test_analysis_text_cannot_break_the_page() -> None:
    group = error_group("eg-1")
    assert group.analysis is not None and group.analysis.analysis is not None
    group.analysis.analysis.rootCause = "</details>\n```\n~~~\n<img src=x onerror=alert(1)>"
    md = render_markdown(outcome([session([result("failed", group_ids=["eg-1"])], [group])]))
    assert md.count("</details>") == 1
    assert "<img" not in md
    assert "\n```\n~~~" not in md


def test_ten_thousand_results_fit_with_failures_first_and_notice() -> None:
    big = big_outcome(10_000)
    md = render_markdown(big)
    size = len(md.encode("utf-8"))
    assert size < MIB
    rows = table_rows(md)
    assert len(rows) == MAX_ROWS
    verdicts = [row_verdict(row) for row in rows]
    assert verdicts == sorted(verdicts, key=ORDER.index)
    assert verdicts[0] == "failed"
    assert re.search(r"_Table shows 1000 of 10000 results; 9000 left out \(\d+ of them failing\)", md)
    assert "more failing results are not detailed here" in md


def test_long_rows_are_capped_by_bytes() -> None:
    results = [result("failed", "名" * 300 + str(n), error="e", result_id=f"r{n}") for n in range(2_000)]
    md = render_markdown(outcome([session(results)]), max_bytes=200_000)
    assert len(md.encode("utf-8")) <= 200_000
    assert 0 < len(table_rows(md)) < MAX_ROWS
    assert "_Table shows" in md


@pytest.mark.parametrize("max_bytes", [0, 1, 50, 300, 2_000, 10_000])
def test_tiny_limits_are_respected_on_utf8_boundaries(max_bytes: int) -> None:
    md = render_markdown(sample_outcome(), max_bytes=max_bytes)
    data = md.encode("utf-8")
    assert len(data) <= max_bytes
    if max_bytes >= 300 and md != render_markdown(sample_outcome()):
        assert "Summary cut at" in md or "not detailed here" in md


def test_huge_header_is_cut_with_notice() -> None:
    out = sample_outcome()
    out.message = "€" * 2_000_000
    md = render_markdown(out, max_bytes=5_000)
    assert len(md.encode("utf-8")) <= 5_000
    assert md.startswith("## ❌ Failed")


@pytest.mark.heavy
def test_hundred_thousand_results_still_work() -> None:
    md = render_markdown(big_outcome(100_000, locations=10))
    assert len(md.encode("utf-8")) < MIB
    assert md.startswith("## ❌ Failed")


@pytest.mark.parametrize(("verdict", "code"), [("service-error", 4), ("interrupted", 130), ("passed", 0)])
def test_a_run_that_is_no_pass_never_reads_like_one(verdict: str, code: int) -> None:
    """Every check read passed, but the service's answers did not add up (or a signal came): the
    headline must not say "all 2 checks passed" under a failing exit code."""
    passing = session([result("passed", "Home"), result("passed", "Login")])
    md = render_markdown(outcome([passing], verdict=verdict, exitCode=code))
    headline = md.splitlines()[0]
    if code:
        assert "all 2 checks passed" not in headline
        assert f"the 2 checks read passed, but that is no verdict (exit code {code})" in headline
    else:
        assert headline.endswith("all 2 checks passed")
