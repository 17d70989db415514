"""results.json: documented JSON that loads back into the same Outcome; bad files are one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer
from helpers import child_env, run_here
from outcome_factory import big_outcome, outcome, result, sample_outcome, session

from runner.core.errors import UsageError
from runner.job.outcome import SCHEMA_VERSION
from runner.reports import json_bytes, json_chunks, load_outcome, render_json, write_atomic


def test_round_trip_is_equal() -> None:
    original = sample_outcome()
    text = render_json(original)
    assert text == original.model_dump_json(indent=2)
    assert json.loads(text)["schemaVersion"] == SCHEMA_VERSION
    assert load_outcome(text, "results.json") == original


def test_round_trip_of_many_results() -> None:
    original = big_outcome(2_000)
    assert load_outcome(render_json(original), "results.json") == original


def test_lone_surrogates_do_not_cost_the_file() -> None:
    original = outcome([session([result("failed", "bad \ud800 name", error="x\udfffy\x01")])])
    text = render_json(original)
    text.encode("utf-8")
    loaded = load_outcome(text, "results.json")
    assert loaded.sessions[0].results[0].name == "bad \ufffd name"
    assert loaded.sessions[0].results[0].error == "x\ufffdy\x01"  # JSON carries controls escaped


def test_the_bytes_written_are_the_documented_json_text_encoded() -> None:
    # The CLI writes results.json from pydantic's bytes (no text of every result made and encoded):
    # byte for byte what model_dump_json(indent=2) says, surrogates replaced as for the text.
    for original in (big_outcome(50), outcome([session([result("failed", "bad \ud800 name")])])):
        data = json_bytes(original)
        assert data == render_json(original).encode("utf-8")
    assert json_bytes(sample_outcome()) == sample_outcome().model_dump_json(indent=2).encode("utf-8")


def test_the_file_written_a_result_at_a_time_is_the_same_bytes(tmp_path: Path) -> None:
    # The CLI writes results.json in pieces (never the whole file in memory): the same bytes, for a
    # session without results, a text that reads like the results' key, and surrogates.
    cases = [
        sample_outcome(),
        big_outcome(50),
        outcome([session([result("failed", "bad \ud800 name", error="x\udfffy\x01")])]),
        outcome([]),
        outcome(
            [session([]), session([result("passed", '"results": [] and\n      "results": []')]), session([])]
        ),
    ]
    for number, original in enumerate(cases):
        pieces = list(json_chunks(original))
        assert len(pieces) > 1 or not original.sessions
        written = write_atomic(tmp_path / f"results-{number}.json", iter(pieces))
        assert written.read_bytes() == json_bytes(original)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "out/results.json: not valid JSON"),
        ("{not json", "out/results.json: not valid JSON"),
        (
            "[1, 2]",
            "out/results.json: not a testsession results file: (body): expected a mapping (key: value), "
            "got a list",
        ),
        ("{}", "out/results.json: not a testsession results file: schemaVersion: required field is missing"),
        (
            '{"schemaVersion": 1, "sessions": 5}',
            "out/results.json: not a testsession results file: sessions:",
        ),
        ('{"schemaVersion": 7}', "out/results.json: schemaVersion 7 was written by a newer testsession"),
        ('{"schemaVersion": 9, "sessions": 5}', "out/results.json: schemaVersion 9 was written by a newer"),
        ('{"schemaVersion": 0}', "out/results.json: schemaVersion 0 is not valid"),
    ],
)
def test_bad_files_are_one_line_usage_errors(text: str, expected: str) -> None:
    with pytest.raises(UsageError) as info:
        load_outcome(text, "out/results.json")
    message = str(info.value)
    assert message.startswith(expected)
    assert "\n" not in message


def test_validation_errors_never_echo_values() -> None:
    text = render_json(sample_outcome()).replace('"exitCode": 1', '"exitCode": "sk-secret-value"', 1)
    with pytest.raises(UsageError) as info:
        load_outcome(text, "r.json")
    assert "exitCode" in str(info.value)
    assert "sk-secret-value" not in str(info.value)


def _results(tmp_path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (tmp_path / "testsession-reports" / "results.json").read_text(encoding="utf-8")
    )
    return loaded


def test_a_checks_files_run_says_it_ran_here_and_a_worlds_run_says_emulator(
    web: HttpServer, tmp_path: Path
) -> None:
    """A checks file's checks run by the engine in the process (no emulator): `service: local`, and
    its analyses are the engine's own (`provider: local`); a world's run is the emulator's."""
    down = {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}
    request = {"url": web.url("/status/503"), "assertions": [down]}
    checks = [{"name": "Down", "checkType": "API", "request": request}]
    (tmp_path / "checks.yml").write_text(yaml.safe_dump(checks), encoding="utf-8")
    ran = run_here(["run", "--checks", "checks.yml"], child_env(), tmp_path)
    assert ran.returncode == 1, ran.stderr
    data = _results(tmp_path)
    assert (data["service"], data["world"]) == ("local", "checks")
    groups = [g for s in data["sessions"] for g in s["errorGroups"]]
    assert groups and {g["analysis"]["provider"] for g in groups} == {"local"}

    world = {"accounts": [{"id": "a", "keys": [{"key": "tsk_test_0123456789"}],
                           "checks": [{"id": "c", "name": "C", "durationSeconds": 0}]}]}  # fmt: skip
    (tmp_path / "world.yml").write_text(yaml.safe_dump(world), encoding="utf-8")
    (tmp_path / "spec.yml").write_text("runLocation: eu-west-1\n", encoding="utf-8")
    argv = ["run", "spec.yml", "--emulator", "--world", "world.yml", "--no-rca"]
    ran = run_here(argv, child_env(), tmp_path)
    assert ran.returncode == 0, ran.stderr
    data = _results(tmp_path)
    assert (data["service"], data["world"]) == ("emulator", "world")


def test_an_older_checks_files_run_that_says_emulator_reads_as_local() -> None:
    """Earlier versions wrote `service: emulator` for a checks file's run: read back, it says where
    it ran (a world's run stays the emulator's), so `merge` of old and new parts names one service."""
    older = sample_outcome().model_copy(update={"service": "emulator", "world": "checks"})
    assert load_outcome(render_json(older), "results.json").service == "local"
    world = older.model_copy(update={"world": "world"})
    assert load_outcome(render_json(world), "results.json").service == "emulator"
