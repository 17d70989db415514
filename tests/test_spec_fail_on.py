"""gate.failOn and baseline in the spec, --fail-on and --baseline on run and wait, and the schema."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from runner.cli.common import new_context
from runner.cli.main import build_parser, main
from runner.cli.run_command import _load, _overrides
from runner.core.errors import SpecError
from runner.spec import Overrides, apply_overrides, parse_spec, spec_json_schema


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "spec.yml", {})
    return info.value.problems


def test_defaults_are_any_and_no_baseline() -> None:
    spec = parse_spec("runLocation: eu-west-1\n", "spec.yml", {})
    assert spec.gate.failOn == "any" and spec.baseline is None


def test_fail_on_new_and_a_baseline_in_both_spec_forms() -> None:
    single = parse_spec(
        "runLocation: eu-west-1\ngate: {failOn: new}\nbaseline: main/results.json\n", "spec.yml", {}
    )
    multi = parse_spec(
        "sessions:\n  - runLocation: eu-west-1\ngate: {failOn: new}\nbaseline: main/results.json\n",
        "spec.yml",
        {},
    )
    for spec in (single, multi):
        assert (spec.gate.failOn, spec.baseline) == ("new", "main/results.json")


def test_an_empty_baseline_means_none_also_from_an_unset_variable() -> None:
    spec = parse_spec("runLocation: x\nbaseline: ${BASELINE_PATH:-}\n", "spec.yml", {})
    assert spec.baseline is None
    spec = parse_spec(
        "runLocation: x\nbaseline: ${BASELINE_PATH:-}\n", "spec.yml", {"BASELINE_PATH": "b.json"}
    )
    assert spec.baseline == "b.json"


def test_bad_values_are_one_line_each() -> None:
    assert problems("runLocation: x\ngate: {failOn: known}\n") == [
        "spec.yml:2: gate.failOn: expected one of 'any' or 'new'"
    ]
    assert problems("runLocation: x\nbaseline: [a]\n") == [
        "spec.yml:2: baseline: expected a string, got a list"
    ]
    assert problems("sessions:\n  - runLocation: x\n    baseline: b.json\n")[0].startswith(
        "spec.yml:3: sessions[0].baseline: unknown field 'baseline'"
    )


def test_flags_override_the_spec() -> None:
    spec = parse_spec("runLocation: x\ngate: {failOn: new}\nbaseline: spec.json\n", "spec.yml", {})
    out = apply_overrides(spec, Overrides(fail_on="any", baseline="flag.json"))
    assert (out.gate.failOn, out.baseline) == ("any", "flag.json")
    assert apply_overrides(spec, Overrides(baseline="")).baseline is None  # --baseline '' turns it off
    assert apply_overrides(spec, Overrides()) == spec
    with pytest.raises(SpecError) as info:
        apply_overrides(spec, Overrides(fail_on="known"))
    assert info.value.problems == ["--fail-on: gate.failOn: expected one of 'any' or 'new'"]


SESSION_ID = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize("command", [["run", "--location", "eu-west-1"], ["wait", SESSION_ID]])
def test_run_and_wait_take_the_flags(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no testsession.yml here: the spec comes from flags
    args = build_parser().parse_args([*command, "--fail-on", "new", "--baseline", "base/results.json"])
    run = command[0] == "run"
    spec = _load(getattr(args, "spec", None), _overrides(args), required=run, ctx=new_context())
    assert (spec.gate.failOn, spec.baseline) == ("new", "base/results.json")
    plain = build_parser().parse_args(command)
    spec = _load(getattr(plain, "spec", None), _overrides(plain), required=run, ctx=new_context())
    assert (spec.gate.failOn, spec.baseline) == ("any", None)


def test_a_bad_fail_on_flag_exits_2_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "--location", "eu-west-1", "--fail-on", "known"])
    assert info.value.code == 2
    assert "--fail-on: invalid choice: 'known' (choose from" in capsys.readouterr().err


def test_the_schema_knows_both() -> None:
    schema = spec_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    assert "baseline" in schema["properties"] and schema["properties"]["baseline"]["description"]
    assert validator.is_valid({"runLocation": "x", "gate": {"failOn": "new"}, "baseline": "b.json"})
    assert validator.is_valid({"runLocation": "x", "baseline": None})
    assert not validator.is_valid({"runLocation": "x", "gate": {"failOn": "known"}})
