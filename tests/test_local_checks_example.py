"""The README's "Run your checks against a local build", as a user runs it: the commands of its block,
examples/local-app/shop.py (the good build, then the broken one) and `testsession run --checks
examples/shop-checks.yml`. Every output says the same, and the analyses cite what happened. The same
checks as a world file (examples/local-checks.yml and its spec) stay valid."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checks_servers import free_port
from conftest import CI_PREFIXES
from doc_blocks import README, code_blocks, commands

from runner.cli.main import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def readme_commands() -> tuple[Path, list[str]]:
    """The build the README starts (`python SCRIPT &`) and the arguments of its `testsession` line,
    paths resolved from the repository root."""
    (block,) = code_blocks(README, "## Run your checks against a local build", "sh")
    (start,) = commands(block, "python ")
    (run,) = commands(block)
    script = REPO / shlex.split(start)[1]
    argv = [str(REPO / arg) if arg.startswith("examples/") else arg for arg in shlex.split(run)[1:]]
    return script, argv


class Shop:
    def __init__(self, broken: bool) -> None:
        self.port, self.tcp_port, self.dns_port = free_port(), free_port(), free_port()
        flags = ["--broken"] if broken else []
        script, _ = readme_commands()
        self.process = subprocess.Popen(
            [sys.executable, str(script), *flags, "--port", str(self.port),
             "--tcp-port", str(self.tcp_port), "--dns-port", str(self.dns_port)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.banner = self.process.stdout.readline()  # printed once every server listens

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(5)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    shops: list[Shop] = []
    # No CI variables (a run must not publish into the CI job running the tests), no credentials.
    for name in list(os.environ):
        if name.startswith((*CI_PREFIXES, "TESTSESSION_")) or name == "CI":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)

    def run_against(broken: bool) -> tuple[int, str, dict[str, Any], str, ET.Element]:
        shop = Shop(broken)
        shops.append(shop)
        assert shop.banner.startswith("shop ("), shop.banner
        # Where the build listens, as a CI job would say it: the environment.
        monkeypatch.setenv("SHOP_URL", f"http://127.0.0.1:{shop.port}")
        monkeypatch.setenv("SHOP_TCP_PORT", str(shop.tcp_port))
        monkeypatch.setenv("SHOP_DNS_PORT", str(shop.dns_port))
        _, argv = readme_commands()
        code = main(argv)
        console = capsys.readouterr()
        reports = tmp_path / "testsession-reports"
        results = json.loads((reports / "results.json").read_text(encoding="utf-8"))
        markdown = (reports / "summary.md").read_text(encoding="utf-8")
        junit = ET.parse(reports / "junit.xml").getroot()
        shop.stop()
        return code, console.out + console.err, results, markdown, junit

    yield run_against
    for shop in shops:
        shop.stop()


def verdicts(results: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["verdict"] for s in results["sessions"] for r in s["results"]}


def junit_kinds(junit: ET.Element) -> dict[str, str]:
    kinds = {}
    for case in junit.iter("testcase"):
        name = case.get("name", "").split(" [")[0]
        found = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        kinds[name] = found[0] if found else "passed"
    return kinds


def shown_verdicts() -> list[str]:
    """The verdict lines of the README's before/after block: the good build's, then the broken one's."""
    (block,) = code_blocks(README, "## Run your checks against a local build", "text")
    return [line for line in block.splitlines() if line.startswith("verdict: ")]


LABELS = ("PASSED ", "FAILED ", "DEGRADED ", "ERROR ", "FLAKY ")


def shown_results() -> tuple[list[str], list[str]]:
    """The result lines of the README's before/after block: the good build's, then the broken one's."""
    (block,) = code_blocks(README, "## Run your checks against a local build", "text")
    good, broken = (
        [line for line in part.splitlines() if line.startswith("  ") and line.strip().startswith(LABELS)]
        for part in block.split("verdict: ", 1)
    )
    return good, broken


def timeless(line: str) -> str:
    """A result line without what changes from run to run: durations, then any other number."""
    return re.sub(r"\d[\d,.]*", "N", re.sub(r"\d[\d,.]*\s?(ms|s)\b", "T", line))


def assert_shown(shown: list[str], console: str) -> None:
    """Each result line the README shows is printed so, but for timings and ports."""
    printed = {timeless(line) for line in console.splitlines()}
    for line in shown:
        assert timeless(line) in printed, (line, console)


def test_the_good_build_passes_and_the_broken_one_fails_with_the_same_story_everywhere(run: Any) -> None:
    good_verdict, broken_verdict = shown_verdicts()
    good_lines, broken_lines = shown_results()
    assert len(good_lines) == 2 and len(broken_lines) == 3
    code, console, results, markdown, junit = run(broken=False)
    assert code == 0, console
    assert good_verdict in console.splitlines(), console  # as the README shows it
    assert_shown(good_lines, console)
    assert verdicts(results) == {
        "Shop health": "passed", "Products API": "passed", "Cart API": "passed", "Search API": "passed",
        "Payments API": "flaky", "Line service": "passed", "Shop DNS": "passed",
    }  # fmt: skip
    assert "all 7 checks passed (1 flaky)" in console and "exit code 0" in console
    assert set(junit_kinds(junit).values()) == {"passed"}

    code, console, results, markdown, junit = run(broken=True)
    assert code == 1, console
    assert broken_verdict in console.splitlines(), console
    assert_shown(broken_lines, console)
    outcome = {r["name"]: r for s in results["sessions"] for r in s["results"]}
    assert verdicts(results) == {
        "Shop health": "passed", "Products API": "passed", "Cart API": "failed", "Search API": "degraded",
        "Payments API": "flaky", "Line service": "error", "Shop DNS": "passed",
    }  # fmt: skip
    cart, line, payments = outcome["Cart API"], outcome["Line service"], outcome["Payments API"]
    assert cart["error"] == "STATUS_CODE EQUALS 200: received 503"
    assert line["error"].startswith("connection refused: 127.0.0.1:")
    assert payments["attempts"] == 2 and payments["failedAttempts"][0]["error"] == (
        "STATUS_CODE EQUALS 200: received 502"
    )
    assert outcome["Search API"]["durationSeconds"] >= 1.0  # the broken search answers in 1.5 s

    # The console, the markdown and the JUnit XML say the same.
    assert "FAILED         Cart API (API, local)" in console
    assert "— STATUS_CODE EQUALS 200: received 503" in console
    assert "ERROR          Line service (TCP, local)" in console
    assert "DEGRADED       Search API" in console and "FLAKY          Payments API" in console
    assert "2 of 7 checks failed the gate (1 failed, 1 error)" in console
    assert "## ❌ Failed — 2 of 7 checks failed the gate (1 failed, 1 error)" in markdown
    assert "| ❌ failed | Cart API |" in markdown and "| ❗ error | Line service |" in markdown
    assert "| 🐢 degraded | Search API |" in markdown and "| 🔁 flaky | Payments API |" in markdown
    kinds = junit_kinds(junit)
    assert kinds["Cart API"] == "failure" and kinds["Line service"] == "error"
    failure = next(c for c in junit.iter("testcase") if c.get("name", "").startswith("Cart API")).find(
        "failure"
    )
    assert failure is not None and "STATUS_CODE EQUALS 200: received 503" in (failure.get("message") or "")

    # The analyses cite the real status and timings (in every output that shows them).
    groups = {g["message"]: g for s in results["sessions"] for g in s["errorGroups"]}
    cart_cause = groups["STATUS_CODE EQUALS 200: received 503"]["analysis"]["analysis"]["rootCause"]
    assert f"GET {os.environ['SHOP_URL']}/api/cart answered 503 Service Unavailable" in cart_cause
    assert "first byte at" in cart_cause and "cart store not reachable" in cart_cause
    line_cause = groups[line["error"]]["analysis"]["analysis"]["rootCause"]
    assert line_cause.startswith(f"Nothing listens at {line['error'].split(': ')[1]}")
    for text in (console, markdown, ET.tostring(junit, encoding="unicode")):
        assert "answered 503 Service Unavailable" in text
    assert "TIMING\\_PHASES (TIMINGS)" in markdown and "first byte" in markdown


def test_the_example_world_and_spec_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulator", "--check", "--world", str(EXAMPLES / "local-checks.yml")]) == 0
    assert main(["validate", str(EXAMPLES / "local-checks-spec.yml")]) == 0
    out = capsys.readouterr().out
    assert "10 checks" in out and "tags shop" in out
