"""End to end: whatever text the service sends (check names, error messages, and the analyses built from
them), `testsession run` writes JUnit that validates against the XSD, markdown under 1 MiB and JSON that
keeps every name exactly. The renderers alone are fuzzed in test_reports_properties.py; this is the path
through the emulator, the client, the runner and the files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_SPEED
from helpers import examples, junit_xsd_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli.main import main
from runner.emulator import Emulator
from runner.emulator.core.world import escape_references, load_world

MIB = 1024 * 1024
ACCOUNT = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
KEY = "tsk_fuzz_reports_5e6f7a8b"
BEHAVIOURS = ["fail", "error", "flaky", "degrade", "pass"]
# Lone surrogates cannot be sent as UTF-8 JSON by any service; the renderers' own tests cover them.
SPECIAL = [
    "\x00", "\x01", "\x08", "\x0b", "\x1b", "\x1b[31m", "\x9b", "\x7f", "\ufffe", "\uffff", "\r", "\r\n",
    "\t", "|", "`", "```", "<", "</details>", "]]>", "&", '"', "😀", "\u202e", "\u0301", "<!--", "--",
    "<script>alert(1)</script>", "[x](javascript:alert(1))", "# heading", "\n---\n", "${{ secrets.X }}",
    "::error::injected", "%0A", "\\", "\u2028",
]  # fmt: skip

characters = st.one_of(
    st.characters(exclude_categories=["Cs"]),
    st.characters(max_codepoint=0x1F),
    st.sampled_from(SPECIAL),
)
text = st.one_of(
    st.lists(characters, min_size=1, max_size=60).map("".join),
    st.lists(st.sampled_from(SPECIAL), min_size=1, max_size=20).map("".join),
    st.tuples(st.sampled_from(["x", "é", "`", "|", "\x00", "😀", "<"]), st.integers(20_000, 300_000)).map(
        lambda pair: pair[0] * pair[1]
    ),
)


def world(checks: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "settings": {"analysisDelaySeconds": 0},
        "accounts": [
            {
                "id": ACCOUNT,
                "keys": [{"key": KEY}],
                "checks": [
                    {
                        "id": f"chk-{index}",
                        "name": escape_references(name),
                        "checkType": "BROWSER" if index % 2 else "API",
                        "behaviour": behaviour,
                        "errorMessage": escape_references(message),  # the text as is, no ${VAR}
                        "durationSeconds": 1,
                    }
                    for index, (name, message, behaviour) in enumerate(checks)
                ],
            }
        ],
    }


@pytest.fixture(scope="module")
def service() -> Iterator[Emulator]:
    """One emulator for the module; each run loads its own world into it first (Backend.load, as a new
    emulator loads its world), which costs ~0.15 s of CPU less than a new emulator per example."""
    with Emulator(world=world([("placeholder", "", "pass")]), speed=TEST_SPEED) as emu:
        yield emu


def run_and_check(checks: list[tuple[str, str, str]], emu: Emulator, out: Path, capsys: Any) -> None:
    emu.backend.load(load_world(world(checks)))
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        kind: out / name for kind, name in (("junit", "j.xml"), ("markdown", "s.md"), ("json", "r.json"))
    }
    argv = ["run", "--location", "eu-west-1", "--base-url", emu.url, "--account-id", ACCOUNT, "--verbose"]
    for kind, path in paths.items():
        argv += [f"--{kind}", str(path)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESTSESSION_API_KEY", KEY)
        for name in ("GITHUB_ACTIONS", "GITLAB_CI"):
            patch.delenv(name, raising=False)
        code = main(argv)
    stdout, stderr = capsys.readouterr()
    # Without a retry strategy a flaky check's one attempt fails: it counts as failing here.
    failing = any(b in ("fail", "error", "flaky") for _, _, b in checks)
    shown = [(len(n), n[:40], len(m), m[:40], b) for n, m, b in checks]
    assert code == (1 if failing else 0), (shown, stdout[-300:], stderr[-300:])

    xml = paths["junit"].read_text(encoding="utf-8")
    assert junit_xsd_errors(xml) == []
    cases = list(ET.fromstring(xml.encode("utf-8")).iter("testcase"))
    assert len(cases) >= len(checks)

    markdown = paths["markdown"].read_bytes()
    assert len(markdown) < MIB
    markdown.decode("utf-8")

    results = json.loads(paths["json"].read_text(encoding="utf-8"))
    names = sorted(r["name"] for s in results["sessions"] for r in s["results"])
    assert names == sorted(name for name, _, _ in checks)  # exactly what the service sent
    for session in results["sessions"]:
        for group in session["errorGroups"]:
            assert group["analysis"]["state"] in ("completed", "skipped"), group["analysis"]


@settings(
    max_examples=examples(8),  # each starts an emulator with its world and runs the CLI: ~0.3 s of CPU
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    checks=st.lists(
        st.tuples(text, text, st.sampled_from(BEHAVIOURS)),
        min_size=1,
        max_size=4,
        unique_by=lambda check: check[0],
    )
)
def test_any_service_text_gives_valid_reports_end_to_end(
    checks: list[tuple[str, str, str]], service: Emulator, tmp_path: Path, capsys: Any
) -> None:
    run_and_check(checks, service, tmp_path / "out", capsys)


@pytest.mark.parametrize(
    "checks",
    [
        pytest.param([(c, c, "fail") for c in SPECIAL if c.strip()], id="every-special-text"),
        pytest.param([(f"huge {n}", "é" * 400_000, "fail") for n in range(4)], id="four-400k-messages"),
        pytest.param(
            [("x" * 200_000, "y", "error"), ("😀" * 50_000, "\x00" * 50_000, "fail")], id="huge-names"
        ),
        pytest.param(
            [(f"check {n} \x1b[31m|`", f"err {n} </details>```", "fail") for n in range(60)], id="60-fails"
        ),
    ],
)  # fmt: skip
def test_nasty_service_texts_give_valid_reports_end_to_end(
    checks: list[tuple[str, str, str]], service: Emulator, tmp_path: Path, capsys: Any
) -> None:
    run_and_check(checks, service, tmp_path / "out", capsys)
