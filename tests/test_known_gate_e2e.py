"""--fail-on new and --baseline end to end: CLI -> HTTP -> one long-lived emulator -> every output.

The default world seeds Checkout flow's error group as first seen 3 days ago (known); Profile page
script's error is new the first time it is seen and known in every later session.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import cli_run

from runner.emulator import Emulator

# One emulator for the module, reset before each test (conftest's `emulator`).
SHARE_EMULATOR = True

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SPEC = str(EXAMPLES / "testsession.yml")


class Run:
    """`testsession run SPEC --no-rca ARGS` with its reports in OUT: what it printed and wrote."""

    def __init__(self, out: Path, capsys: pytest.CaptureFixture[str], *args: str) -> None:
        self.out = out
        self.code, self.data = cli_run(out, "run", SPEC, *args, rca=False)
        captured = capsys.readouterr()
        self.console = captured.out + captured.err
        self.markdown = (out / "summary.md").read_text(encoding="utf-8")
        self.junit = ET.fromstring((out / "junit.xml").read_text(encoding="utf-8"))

    def result(self, name: str) -> dict[str, Any]:
        (found,) = [r for s in self.data["sessions"] for r in s["results"] if r["name"] == name]
        return found


def verdict_line(console: str) -> str:
    return next(line for line in console.splitlines() if line.startswith("verdict: "))


def test_fail_on_new_passes_known_failures_and_fails_new_ones_then_forgives_them_next_time(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary"))

    # Only the known failure (Checkout flow, seeded 3 days ago): the gate passes, every output says so.
    known = Run(tmp_path / "known", capsys, "--fail-on", "new", "--tag", "checkout")
    assert known.code == 0, known.console
    said = "gate passed: 1 known failure, no new ones"
    assert verdict_line(known.console).startswith(f"verdict: PASSED — {said}")
    assert known.markdown.startswith(f"## ✅ Passed — {said}\n")
    assert "[known since 3 days]" in known.console
    assert (known.data["verdict"], known.data["exitCode"], known.data["failOn"]) == ("passed", 0, "new")
    checkout = known.result("Checkout flow")
    assert checkout["verdict"] == "failed" and checkout["known"] is True and checkout["firstSeen"]
    assert known.junit.get("failures") == "0" and known.junit.get("errors") == "0"
    assert len(list(known.junit.iter("skipped"))) == 1
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    assert (values["status"], values["exit-code"]) == ("passed", "0")
    assert (values["new-failures"], values["known-failures"], values["fixed"]) == ("0", "1", "0")
    assert (tmp_path / "step_summary").read_text().startswith(f"## ✅ Passed — {said}")

    # Profile page script's error, never seen before: new, and the gate fails.
    first = Run(tmp_path / "new", capsys, "--fail-on", "new", "--tag", "profile")
    assert first.code == 1, first.console
    profile = first.result("Profile page script")
    assert profile["verdict"] == "error" and profile["known"] is False
    assert profile["firstSeen"] >= first.data["sessions"][0]["startedAt"]
    assert verdict_line(first.console).startswith("verdict: FAILED — the 1 check failed the gate")
    assert "### New in this build (1)" in first.markdown and "[new]" in first.console
    assert first.junit.get("errors") == "1"

    # The same error in a later session of the same service: known, first seen in the run above. It
    # still fails the gate: failOn: new forgives known failed checks, never errors.
    again = Run(tmp_path / "again", capsys, "--fail-on", "new", "--tag", "profile")
    later = again.result("Profile page script")
    assert later["known"] is True and later["firstSeen"] == profile["firstSeen"]
    assert later["firstSeen"] < again.data["sessions"][0]["startedAt"]
    assert "### Already failing before this build (1)" in again.markdown
    assert again.code == 1 and "never errors, unfinished or cancelled checks" in again.markdown
    assert again.junit.get("errors") == "1"


def test_results_json_marks_failing_results_known_or_new_and_passing_ones_null(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = Run(tmp_path / "all", capsys)
    assert done.code == 1
    results = [r for s in done.data["sessions"] for r in s["results"]]
    for item in results:
        assert "known" in item and "firstSeen" in item and "baseline" in item
        if item["verdict"] in ("failed", "error"):
            assert isinstance(item["known"], bool) and item["firstSeen"], item
        elif item["verdict"] in ("passed", "flaky", "degraded"):
            assert item["known"] is None and item["firstSeen"] is None, item
        assert item["baseline"] is None  # no --baseline
    assert done.data["baseline"] is None
    assert done.result("Checkout flow")["known"] is True
    assert done.result("Profile page script")["known"] is False


def test_baseline_newly_failing_still_failing_fixed_end_to_end(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A: the checkout fix deployed (Checkout flow passes). B: the fix reverted. C: the fix again.
    a = Run(tmp_path / "a", capsys, "--env", "CHECKOUT_FIXED=true")
    assert a.result("Checkout flow")["verdict"] == "passed"
    b = Run(tmp_path / "b", capsys, "--baseline", str(a.out / "results.json"))
    assert b.code == a.code == 1
    assert b.result("Checkout flow")["baseline"] == "newly-failing"
    assert b.result("Profile page script")["baseline"] == "still-failing"
    assert {r["baseline"] for r in b.data["sessions"][0]["results"]} <= {
        "newly-failing",
        "still-failing",
        "still-passing",
    }
    assert b.data["baseline"]["used"] is True and b.data["baseline"]["fixed"] == []
    assert "### Changes since the baseline (1 newly failing, 0 fixed" in b.markdown
    newly = b.markdown[b.markdown.index("**Newly failing (1)**") :]
    assert newly.split("\n\n")[1] == "- Checkout flow \\[eu-west-1\\]"
    assert b.markdown.index("Changes since the baseline") < b.markdown.index("| Status | Check |")
    baseline_path = a.out / "results.json"
    assert f"since the baseline {baseline_path}: 1 newly failing, 0 fixed, 0 slower" in b.console

    c = Run(tmp_path / "c", capsys, "--env", "CHECKOUT_FIXED=true", "--baseline", str(b.out / "results.json"))
    assert c.result("Checkout flow")["baseline"] == "fixed"
    assert c.result("Profile page script")["baseline"] == "still-failing"
    assert [ref["name"] for ref in c.data["baseline"]["fixed"]] == ["Checkout flow"]
    assert "**Fixed (1)**\n\n- Checkout flow \\[eu-west-1\\]" in c.markdown
    cases = {case.get("name"): case for case in c.junit.iter("testcase")}
    assert "testsession.baseline=fixed" in (cases["Checkout flow [eu-west-1]"].findtext("system-out") or "")

    # With failOn new, a failed check still failing since the baseline is known and forgiven.
    baseline = str(b.out / "results.json")
    d = Run(tmp_path / "d", capsys, "--tag", "checkout", "--fail-on", "new", "--baseline", baseline)
    assert d.code == 0 and d.result("Checkout flow")["baseline"] == "still-failing"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "no such file"),
        (b"{not json", "not valid JSON"),
        (b'{"schemaVersion": 99, "sessions": []}', "schemaVersion 99; this testsession reads 1"),
    ],
    ids=["missing", "not-json", "other-schema"],
)
def test_a_bad_baseline_is_a_warning_and_the_exit_code_is_unchanged(
    cli_env: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, why: str
) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_bytes(content)
    without = Run(tmp_path / "without", capsys, "--tag", "checkout")
    warned = Run(tmp_path / "with", capsys, "--tag", "checkout", "--baseline", str(path))
    assert warned.code == without.code == 1
    warning = next(line for line in warned.console.splitlines() if "warning: baseline" in line)
    assert why in warning and "comparing without a baseline" in warning
    assert warned.data["baseline"] == {
        "path": str(path),
        "used": False,
        "warning": warning[warning.index("baseline ") :],
        "missing": [],
        "fixed": [],
        "slower": [],
    }
    assert "**Baseline not used:**" in warned.markdown and why.split(";")[0] in warned.markdown
    assert warned.result("Checkout flow")["baseline"] is None
