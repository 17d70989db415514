"""Flags over a spec, the spec without a file, and the JSON Schema editors use."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from runner.core.errors import SpecError, UsageError
from runner.spec import Overrides, apply_overrides, default_spec, parse_spec, spec_json_schema

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
sessions:
  - name: eu
    runLocation: eu-west-1
    target: {matchTags: [[smoke]], checkId: [0b9a3c4d-1111-4a5b-8c6d-0000000000c1], allowDeactivated: true}
    environmentVariables:
      - {key: TOKEN, value: from-spec, secret: true}
      - {key: URL, value: https://spec.example.com}
    metadata: {environment: staging, branchName: main}
  - name: us
    runLocation: us-east-1
"""


def test_flags_beat_the_spec_in_every_session() -> None:
    spec = parse_spec(SPEC, "spec.yml", {})
    out = apply_overrides(
        spec,
        Overrides(
            location="ap-south-1",
            tags=[["api", "checkout"], ["smoke"]],
            env=[("TOKEN", "from-flag"), ("NEW", "1")],
            name="pr-42",
            environment="preview",
            timeout=30,
            junit="",
            markdown="out/summary.md",
            fail_on_degraded=True,
            no_rca=True,
        ),
    )
    assert [(s.name, s.runLocation) for s in out.sessions] == [("pr-42", "ap-south-1")] * 2
    first = out.sessions[0]
    # A flag target replaces the spec's filters (the checkId too), keeping allowDeactivated.
    assert first.target is not None
    assert (first.target.matchTags, first.target.checkId, first.target.allowDeactivated) == (
        [["api", "checkout"], ["smoke"]],
        None,
        True,
    )
    variables = {v.key: v for v in first.environmentVariables}
    assert variables["TOKEN"].value == "from-flag" and variables["TOKEN"].secret  # stays secret
    assert variables["NEW"].value == "1" and not variables["NEW"].secret
    assert first.secret_values() == ["from-flag"]
    assert first.metadata is not None
    assert (first.metadata.environment, first.metadata.branchName) == ("preview", "main")
    assert out.sessions[1].metadata is not None and out.sessions[1].metadata.environment == "preview"
    assert out.wait.timeoutSeconds == 30
    assert (out.reports.junit, out.reports.markdown, out.reports.json) == (
        None,
        "out/summary.md",
        "testsession-reports/results.json",
    )
    assert out.gate.failOnDegraded is True and out.rca.enabled is False
    # The spec itself is left as it was.
    assert spec.sessions[0].runLocation == "eu-west-1" and spec.rca.enabled is True


def test_no_flags_change_nothing() -> None:
    spec = parse_spec(SPEC, "spec.yml", {})
    assert apply_overrides(spec, Overrides()) == spec


def test_check_ids_flag_alone_replaces_the_tags() -> None:
    spec = parse_spec(SPEC, "spec.yml", {})
    target = (
        apply_overrides(spec, Overrides(check_ids=["0b9a3c4d-1111-4a5b-8c6d-0000000000c9"]))
        .sessions[0]
        .target
    )
    assert target is not None and (target.matchTags, target.checkId) == (
        None,
        ["0b9a3c4d-1111-4a5b-8c6d-0000000000c9"],
    )


def test_bad_flag_values_name_the_flag() -> None:
    spec = parse_spec(SPEC, "spec.yml", {})
    with pytest.raises(SpecError) as info:
        apply_overrides(spec, Overrides(timeout=0, location=""))
    assert info.value.problems == [
        "--location: sessions.runLocation: must not be empty",
        "--timeout: wait.timeoutSeconds: must be greater than 0 (got 0)",
    ]
    with pytest.raises(SpecError) as info:
        apply_overrides(spec, Overrides(env=[(f"V{i}", "x") for i in range(49)]))
    assert info.value.problems == ["--env: sessions.environmentVariables: at most 50 items (got 51)"]


def test_default_spec_from_flags_only() -> None:
    spec = default_spec(Overrides(location="eu-west-1", tags=[["smoke"]], env=[("A", "b")]))
    (session,) = spec.sessions
    assert (session.name, session.runLocation) == ("testsession", "eu-west-1")
    assert session.target is not None and session.target.matchTags == [["smoke"]]
    assert [(v.key, v.value) for v in session.environmentVariables] == [("A", "b")]
    assert spec.reports.junit == "testsession-reports/junit.xml"


def test_default_spec_without_location_has_no_sessions_for_wait() -> None:
    spec = default_spec(Overrides(timeout=5))
    assert spec.sessions == [] and spec.wait.timeoutSeconds == 5
    with pytest.raises(UsageError):
        default_spec(Overrides(location=""))


# --- JSON Schema ------------------------------------------------------------------------------------


def validator() -> jsonschema.Draft202012Validator:
    schema = spec_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_is_draft_2020_12_with_title_and_descriptions() -> None:
    schema = spec_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] and "${VAR}" in schema["description"]
    session = schema["$defs"]["SessionSpec"]["properties"]
    assert all(prop.get("description") for prop in session.values())
    for name in ("Target", "RetryStrategy", "EnvironmentVariable", "SessionMetadata"):
        assert all(p.get("description") for p in schema["$defs"][name]["properties"].values()), name


@pytest.mark.parametrize("name", ["testsession.yml", "testsession-multi.yml"])
def test_examples_are_valid_against_the_schema(name: str) -> None:
    data = yaml.safe_load((EXAMPLES / name).read_text())
    assert list(validator().iter_errors(data)) == []


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        ({"runLocation": "x"}, True),
        ({"runLocation": "x", "wait": {"timeoutSeconds": "${TIMEOUT:-60}"}}, True),
        ({"runLocation": "x", "gate": {"failOnDegraded": "${STRICT}"}}, True),
        (
            {"runLocation": "x", "environmentVariables": {"A": "1", "B": {"value": "two", "secret": True}}},
            True,
        ),
        ({"runLocation": "x", "retryStrategy": {"type": "${RETRY_TYPE}"}}, True),
        ({"runLocation": "x", "wait": {"timeoutSeconds": "soon"}}, False),
        ({"runLocation": "x", "retryStrategy": {"type": "FIXD"}}, False),
        ({"runLocation": "x", "gate": {"failOnDegrade": True}}, False),
        ({"sessions": [], "wait": {}}, False),
        ({"sessions": [{"runLocation": "x"}], "runLocation": "y"}, False),
        ({"wait": {"timeoutSeconds": 5}}, False),
    ],
)
def test_schema_accepts_what_the_loader_accepts(data: dict[str, object], valid: bool) -> None:
    assert (not list(validator().iter_errors(data))) is valid
    try:
        environ = {"TIMEOUT": "60", "STRICT": "true", "RETRY_TYPE": "LINEAR"}
        parse_spec(yaml.safe_dump(data), "spec.yml", environ)
    except SpecError:
        assert not valid
    else:
        assert valid
