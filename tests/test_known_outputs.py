"""Known/new and the baseline in every output, rendered from synthetic outcomes: the markdown summary,
the JUnit (valid against junit-10.xsd), the GitHub outputs and the GitLab dotenv."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

from helpers import junit_xsd_errors
from outcome_factory import STARTED, error_group, outcome, result, session

from runner.ci import github, gitlab
from runner.job.baseline import Baseline, BaselineWarning, mark_baseline
from runner.job.digest import digest
from runner.job.known import mark_known
from runner.job.outcome import Outcome
from runner.reports import render_junit, render_markdown

HOSTILE = "Gone | <img src=x onerror=alert(1)> ``` [x](javascript:alert(1))"


def build(fail_on: str = "any", new_failure: bool = True, baseline: bool = True) -> Outcome:
    """Checkout flow fails, its error group first seen 3 days ago (known); Profile page fails with a
    group first seen in this run (new) unless `new_failure` is False; Home page got slower, Login API
    was fixed and a hostile-named check is missing against the baseline."""
    known = error_group("eg-known")
    known.firstSeen, known.lastSeen = STARTED - timedelta(days=3), STARTED - timedelta(hours=5)
    new = error_group("eg-new")
    new.firstSeen = new.lastSeen = STARTED + timedelta(seconds=5)
    profile = (
        result("failed", "Profile page", group_ids=["eg-new"])
        if new_failure
        else result("passed", "Profile page")
    )
    results = [
        result("failed", "Checkout flow", group_ids=["eg-known"]),
        profile,
        result("passed", "Home page", duration=4.0),
        result("passed", "Login API"),
    ]
    marked = mark_known(outcome([session(results, [known, new])], failOn=fail_on))
    if baseline:
        then = [
            result("failed", "Checkout flow"),
            result("passed", "Profile page"),
            result("passed", "Home page", duration=1.2),
            result("failed", "Login API"),
            result("passed", HOSTILE),
        ]
        marked = mark_baseline(marked, Baseline("main/results.json", then))
    if fail_on == "new" and not new_failure:
        marked.verdict, marked.exitCode = "passed", 0  # what the run's policy decides (tested e2e)
    return marked


def test_markdown_opens_with_the_changes_then_splits_new_from_known() -> None:
    md = render_markdown(build())
    headline, rest = md.split("\n", 1)
    assert headline == "## ❌ Failed — 2 of 4 checks failed the gate (2 failed)"
    assert "**1 new failure** (in this build) · **1 known** (already failing before this build)" in rest
    changes = md.index("### Changes since the baseline (1 newly failing, 1 fixed, 1 slower, 1 missing)")
    assert changes < md.index("| Status | Check |") < md.index("### New in this build (1)")
    assert md.index("### New in this build (1)") < md.index("### Already failing before this build (1)")
    block = md[changes : md.index("| Status | Check |")]
    assert "**Newly failing (1)**\n\n- Profile page \\[us-east-1\\]" in block
    assert "**Fixed (1)**\n\n- Login API \\[us-east-1\\]" in block
    assert "- Home page \\[us-east-1\\]: 1.2 s in the baseline, 4.0 s now" in block
    assert "**Missing now (1)**" in block and "1 still failing since the baseline." in block
    new_part = md[md.index("### New in this build") : md.index("### Already failing")]
    assert "Profile page" in new_part and "**New:** first seen 2024-05-17 12:00 UTC, in this run" in new_part
    assert "**Baseline:** newly failing" in new_part
    known_part = md[md.index("### Already failing") :]
    assert "**Known:** first seen 2024-05-14 12:00 UTC (3 days before this run)" in known_part
    assert "last seen before this run 2024-05-17 07:00 UTC" in known_part
    assert "**Baseline:** still failing" in known_part and "Did not fail the gate" not in md


def test_hostile_check_names_in_the_changes_are_escaped() -> None:
    md = render_markdown(build())
    assert "<img" not in md and not re.search(r"(?<!\\)\]\(javascript", md)
    assert "```" not in md.split("| Status |")[0]
    assert (
        "- Gone \\| &lt;img src=x onerror=alert(1)&gt; \\`\\`\\` \\[x\\](javascript:alert(1)) \\[us-east-1\\]"
        in md
    )


def test_fail_on_new_lists_the_forgiven_failure_and_says_why_the_gate_passed() -> None:
    md = render_markdown(build("new", new_failure=False, baseline=False))
    assert md.startswith("## ✅ Passed — gate passed: 1 known failure, no new ones\n")
    assert "**0 new failures** (in this build) · **1 known**" in md
    assert "**The gate passed because it fails on new failures only (failOn: new):** this known failure" in md
    assert "### New in this build" not in md and "Changes since the baseline" not in md
    known_part = md[md.index("### Already failing before this build (1)") :]
    assert "Checkout flow" in known_part and "**Did not fail the gate** (failOn: new forgives" in known_part


def test_fail_on_new_with_a_new_failure_says_which_did_not_count() -> None:
    md = render_markdown(build("new"))
    assert md.startswith("## ❌ Failed — 1 of 4 checks failed the gate (1 failed)\n")
    assert "this known failure did not fail it, the others did" in md


def test_a_baseline_warning_is_shown_plainly_and_nothing_is_compared() -> None:
    warned = mark_baseline(
        build(baseline=False),
        BaselineWarning("old.json", "baseline old.json: no such file; comparing without"),
    )
    md = render_markdown(warned)
    assert "> [!WARNING]\n> **Baseline not used:** baseline old.json: no such file; comparing without" in md
    assert "Changes since the baseline" not in md
    assert {r.baseline for r in warned.all_results()} == {None}


def test_failures_without_history_are_not_called_new_in_this_build() -> None:
    plain = outcome([session([result("error", "Search page"), result("running", "Cart page")])])
    md = render_markdown(mark_known(plain))
    assert "### Failures (2)" in md and "New in this build" not in md
    assert md.count("**New or known:** cannot be told") == 2


def test_markdown_stays_within_its_byte_cap_with_known_and_baseline() -> None:
    for cap in (300, 2_000, 5_000):
        assert len(render_markdown(build(), max_bytes=cap).encode("utf-8")) <= cap


def test_junit_carries_known_first_seen_and_the_baseline_mark_and_is_valid() -> None:
    xml = render_junit(build())
    root = ET.fromstring(xml)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    out = {name: (c.findtext("system-out") or "").splitlines() for name, c in cases.items()}
    assert out["Checkout flow [us-east-1]"] == [
        "testsession.known=true",
        "testsession.firstSeen=2024-05-14T12:00:00+00:00",
        "testsession.lastSeenBefore=2024-05-17T07:00:00+00:00",
        "testsession.baseline=still-failing",
    ]
    assert out["Profile page [us-east-1]"] == [
        "testsession.known=false",
        "testsession.firstSeen=2024-05-17T12:00:05+00:00",
        "testsession.baseline=newly-failing",
    ]
    assert out["Login API [us-east-1]"] == ["testsession.baseline=fixed"]
    assert (cases["Checkout flow [us-east-1]"].findtext("failure") or "").startswith("Known failure:")
    assert (cases["Profile page [us-east-1]"].findtext("failure") or "").startswith("New failure:")
    assert junit_xsd_errors(xml) == []


def test_junit_forgiven_known_failure_is_a_skip_with_its_text_not_a_failure() -> None:
    xml = render_junit(build("new", new_failure=False, baseline=False))
    root = ET.fromstring(xml)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    (skipped,) = root.iter("skipped")
    assert (skipped.text or "").startswith("Known failure: seen before this session (first seen 2024-05-14")
    assert "it did not fail the gate (failOn: new forgives known failures)" in (skipped.text or "")
    assert "503" in (skipped.text or "")  # the failure itself is still there to read
    assert junit_xsd_errors(xml) == []


def test_github_outputs_and_gitlab_dotenv_count_new_known_fixed() -> None:
    d = digest(build())
    values = github.outputs(d, {})
    assert (values["new-failures"], values["known-failures"], values["fixed"]) == ("1", "1", "1")
    env = gitlab.dotenv_values(d)
    assert (env["TESTSESSION_NEW_FAILURES"], env["TESTSESSION_KNOWN_FAILURES"], env["TESTSESSION_FIXED"]) == (
        "1",
        "1",
        "1",
    )
    passed = digest(build("new", new_failure=False, baseline=False))
    values = github.outputs(passed, {})
    assert (values["status"], values["new-failures"], values["known-failures"], values["fixed"]) == (
        "passed",
        "0",
        "1",
        "0",
    )
