"""The target spec file: what loads, and every way a bad one is reported (FILE:LINE: path: rule)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from runner.core.errors import SpecError
from runner.models import SessionMetadata
from runner.spec import RunSpec, load_spec, parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def problems(text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_spec(textwrap.dedent(text), "spec.yml", environ or {})
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


def parse(text: str, environ: dict[str, str] | None = None) -> RunSpec:
    return parse_spec(textwrap.dedent(text), "spec.yml", environ or {})


# --- what loads ---------------------------------------------------------------------------------


def test_example_spec_loads_with_its_documented_values() -> None:
    spec = load_spec(EXAMPLES / "testsession.yml", {})
    (session,) = spec.sessions
    assert session.name == "pre-deploy checks"
    assert session.runLocation == "eu-west-1"
    assert session.target is not None and session.target.matchTags == [["all-outcomes"]]
    variables = {v.key: v for v in session.environmentVariables}
    assert variables["ENVIRONMENT_URL"].value == "https://preview.example.com"
    assert variables["API_TOKEN"].secret and variables["API_TOKEN"].value == "demo-token-not-secret"
    assert session.secret_values() == ["demo-token-not-secret"]
    assert session.retryStrategy is not None and session.retryStrategy.onlyOn == ["NETWORK_ERROR"]
    assert session.metadata is not None and session.metadata.environment == "preview"
    assert spec.wait.timeoutSeconds == 900
    assert spec.reports.json == "testsession-reports/results.json"


def test_example_values_come_from_the_environment_when_set() -> None:
    environ = {"PREVIEW_URL": "https://pr-42.example.com", "API_TOKEN": "s3cr3t-value"}
    (session,) = load_spec(EXAMPLES / "testsession.yml", environ).sessions
    assert {v.key: v.value for v in session.environmentVariables} == {
        "ENVIRONMENT_URL": "https://pr-42.example.com",
        "API_TOKEN": "s3cr3t-value",
    }
    assert session.secret_values() == ["s3cr3t-value"]


def test_multi_session_example_shares_variables_through_an_anchor() -> None:
    spec = load_spec(EXAMPLES / "testsession-multi.yml", {"US_LOCATION": "us-west-2"})
    assert [(s.name, s.runLocation) for s in spec.sessions] == [
        ("smoke (Europe)", "eu-west-1"),
        ("api and checkout (US)", "us-west-2"),
    ]
    target = spec.sessions[1].target
    assert target is not None and target.matchTags == [["api", "smoke"], ["checkout"]]
    assert all(s.secret_values() == ["demo-token-not-secret"] for s in spec.sessions)
    assert spec.gate.failOnDegraded is True


def test_minimal_single_session_gets_every_default() -> None:
    spec = parse("runLocation: eu-west-1\n")
    assert spec.sessions[0].name == "testsession"
    assert (spec.wait.timeoutSeconds, spec.rca.enabled, spec.rca.generate) == (900, True, True)
    assert (spec.rca.timeoutSeconds, spec.rca.max, spec.rca.context) == (120, 20, None)
    assert spec.reports.junit == "testsession-reports/junit.xml"
    assert spec.reports.markdown == "testsession-reports/summary.md"
    assert (spec.gate.failOnDegraded, spec.gate.failOnNoMatchingChecks) == (False, True)


def test_to_trigger_builds_the_api_body() -> None:
    spec = parse(
        """
        name: smoke
        runLocation: eu-west-1
        target: {matchTags: [[smoke]], checkId: [0b9a3c4d-1111-4a5b-8c6d-0000000000c1]}
        environmentVariables: {URL: https://x.example.com}
        refreshCache: true
        """
    )
    body = spec.sessions[0].to_trigger(SessionMetadata(commitId="abc1234", environment="preview")).to_body()
    assert body == {
        "name": "smoke",
        "runLocation": "eu-west-1",
        "target": {
            "matchTags": [["smoke"]],
            "checkId": ["0b9a3c4d-1111-4a5b-8c6d-0000000000c1"],
            "allowDeactivated": False,
        },
        "environmentVariables": [
            {"key": "URL", "value": "https://x.example.com", "secret": False, "locked": False}
        ],
        "refreshCache": True,
        "metadata": {"commitId": "abc1234", "environment": "preview"},
    }
    bare = parse("runLocation: x\n").sessions[0].to_trigger(SessionMetadata()).to_body()
    assert "environmentVariables" not in bare


def test_variables_as_mapping_keep_their_text_as_written() -> None:
    spec = parse(
        """
        runLocation: eu-west-1
        environmentVariables:
          PORT: 0123
          DEBUG: no
          RATIO: 1.50
          TOKEN: {value: abc-123, secret: true, locked: true}
        """
    )
    variables = {v.key: v for v in spec.sessions[0].environmentVariables}
    assert {k: v.value for k, v in variables.items()} == {
        "PORT": "0123",
        "DEBUG": "no",
        "RATIO": "1.50",
        "TOKEN": "abc-123",
    }
    assert variables["TOKEN"].secret and variables["TOKEN"].locked
    assert spec.sessions[0].secret_values() == ["abc-123"]


def test_variables_as_items_keep_number_text_too() -> None:
    spec = parse(
        """
        sessions:
          - runLocation: eu-west-1
            environmentVariables:
              - {key: PORT, value: 0800}
        """
    )
    assert spec.sessions[0].environmentVariables[0].value == "0800"


# --- ${VAR} ---------------------------------------------------------------------------------------


def test_expansion_in_any_string_with_defaults_and_escapes() -> None:
    spec = parse(
        """
        name: "run ${BUILD:-local} of $${NOT_A_VAR}"
        runLocation: ${REGION}
        target: {matchTags: [["${TAG:-smoke}"]]}
        wait: {timeoutSeconds: "${TIMEOUT:-60}"}
        gate: {failOnDegraded: "${STRICT:-false}"}
        """,
        {"REGION": "us-east-1", "TAG": ""},
    )
    session = spec.sessions[0]
    assert session.name == "run local of ${NOT_A_VAR}"
    assert session.runLocation == "us-east-1"
    assert session.target is not None and session.target.matchTags == [["smoke"]]  # empty takes the default
    assert spec.wait.timeoutSeconds == 60
    assert spec.gate.failOnDegraded is False


def test_unset_variable_names_the_variable_and_the_field() -> None:
    lines = problems(
        """
        sessions:
          - runLocation: eu-west-1
            environmentVariables:
              - key: TOKEN
                value: ${DEPLOY_TOKEN}
                secret: true
        """
    )
    assert lines == [
        "spec.yml:6: sessions[0].environmentVariables[0].value: ${DEPLOY_TOKEN} is not set: "
        "set DEPLOY_TOKEN, or write ${DEPLOY_TOKEN:-default}"
    ]


def test_unset_required_field_is_reported_once() -> None:
    # The empty runLocation that an unset variable leaves is not reported a second time.
    assert problems("runLocation: ${REGION}\n") == [
        "spec.yml:1: runLocation: ${REGION} is not set: set REGION, or write ${REGION:-default}"
    ]


def test_allow_unset_checks_only_the_shape() -> None:
    text = "runLocation: ${REGION}\nname: x\nwait: {timeoutSeconds: '${T}'}\n"
    spec = parse_spec(text, "spec.yml", {}, allow_unset=True)
    assert (spec.sessions[0].name, spec.sessions[0].runLocation) == ("x", "${REGION}")
    assert spec.wait.timeoutSeconds == 900
    with pytest.raises(SpecError) as info:
        parse_spec(text + "rca: {max: -1}\n", "spec.yml", {}, allow_unset=True)
    assert info.value.problems == ["spec.yml:4: rca.max: must be greater than or equal to 0 (got -1)"]


def test_malformed_reference_is_a_problem() -> None:
    assert problems("runLocation: eu-west-1\nname: ${1BAD}\n") == [
        "spec.yml:2: name: malformed ${...}: use ${VAR} or ${VAR:-default}; write $${ for a literal ${"
    ]


# --- problems: all of them, one line each, with lines and hints ---------------------------------------


def test_every_problem_is_collected_with_its_line() -> None:
    lines = problems(
        """
        name: pre-deploy
        runLocaton: eu-west-1
        target:
          matchTags: [smoke]
          checkIds: [a]
        retryStrategy:
          type: FIXD
          maxRetries: 11
        wait:
          timeoutSeconds: 0
        rca: {max: lots}
        gate: {failOnDegrade: true}
        """
    )
    assert lines == [
        "spec.yml:2: runLocation: required field is missing",
        "spec.yml:3: runLocaton: unknown field 'runLocaton': did you mean 'runLocation'? allowed: name, "
        "runLocation, target, environmentVariables, retryStrategy, refreshCache, metadata, wait, rca, "
        "reports, gate, baseline, build, comment, shard, checks, quarantine, sessions",
        "spec.yml:5: target.matchTags[0]: expected a list, got text; each item is a tag group "
        "(a list of tags), e.g. [[smoke], [api, checkout]]",
        "spec.yml:6: target.checkIds: unknown field 'checkIds': did you mean 'checkId'? allowed: matchTags, "
        "checkId, allowDeactivated",
        "spec.yml:8: retryStrategy.type: expected one of 'FIXED', 'LINEAR', 'EXPONENTIAL' or 'SINGLE_RETRY'",
        "spec.yml:9: retryStrategy.maxRetries: must be less than or equal to 10 (got 11)",
        "spec.yml:11: wait.timeoutSeconds: must be greater than 0 (got 0)",
        "spec.yml:12: rca.max: expected a whole number, got text",
        "spec.yml:13: gate.failOnDegrade: unknown field 'failOnDegrade': did you mean 'failOnDegraded'? "
        "allowed: failOn, failOnDegraded, failOnNoMatchingChecks",
    ]


def test_missing_required_field_points_at_its_session() -> None:
    assert problems(
        """
        sessions:
          - name: a
            runLocation: eu-west-1
          - name: b
        """
    ) == ["spec.yml:5: sessions[1].runLocation: required field is missing"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sessions: []\n", "spec.yml:1: sessions: at least one session"),
        (
            "wait: {timeoutSeconds: 5}\n",
            "spec.yml:1: no sessions: give sessions: (a list of sessions) or runLocation: (a single session)",
        ),
        ("runLocation: ''\n", "spec.yml:1: runLocation: must not be empty"),
        ("runLocation: x\nname: ''\n", "spec.yml:2: name: must not be empty"),
        ("runLocation: [a]\n", "spec.yml:1: runLocation: expected a string, got a list"),
        (
            "runLocation: x\nrefreshCache: maybe\n",
            "spec.yml:2: refreshCache: expected true or false, got text",
        ),
        ("runLocation: x\ntarget: smoke\n", "spec.yml:2: target: expected a mapping (key: value), got text"),
        (
            "runLocation: x\nrca: {context: " + "c" * 300 + "}\n",
            "spec.yml:2: rca.context: at most 256 characters (got 300)",
        ),
        (
            "runLocation: x\nrca: {max: -1}\n",
            "spec.yml:2: rca.max: must be greater than or equal to 0 (got -1)",
        ),
        (
            "runLocation: x\nretryStrategy: {type: FIXED, maxDurationSeconds: 601}\n",
            "spec.yml:2: retryStrategy.maxDurationSeconds: must be less than or equal to 600 (got 601)",
        ),
        (
            "sessions:\n  - runLocation: x\nrunLocation: y\n",
            "spec.yml:3: runLocation: a session field: with sessions: given, it goes inside a session",
        ),
        (
            "sessions:\n  - runLocation: x\nsesions: []\n",
            "spec.yml:3: sesions: unknown field 'sesions': did you mean 'sessions'? allowed: sessions, wait, "
            "rca, reports, gate, baseline, build, checks, comment, shard, quarantine",
        ),
        (
            "runLocation: x\nrunlocation: y\n",
            "spec.yml:2: runlocation: unknown field 'runlocation': did you mean 'runLocation'? "
            "allowed: name, runLocation, target, environmentVariables, retryStrategy, refreshCache, "
            "metadata, wait, rca, reports, gate, baseline, build, comment, shard, checks, quarantine, "
            "sessions",
        ),
        (
            "runLocation: x\nname: a\nname: b\n",
            "spec.yml:3: duplicate key 'name': give each key once per mapping",
        ),
        (
            "runLocation: x\ntarget: {matchTags: [[a]], on: true}\n",
            "spec.yml:2: target.true: key must be text, got true/false: quote it",
        ),
    ],
)
def test_one_problem_one_line(text: str, expected: str) -> None:
    assert problems(text) == [expected]


def test_environment_variable_limits_come_through() -> None:
    many = "\n".join(f"  V{i}: x" for i in range(51))
    assert problems(f"runLocation: x\nenvironmentVariables:\n{many}\n") == [
        "spec.yml:2: environmentVariables: at most 50 items (got 51)"
    ]
    assert problems(
        "runLocation: x\nenvironmentVariables:\n  - {key: A, value: '1'}\n  - {key: A, value: '2'}\n"
    ) == ["spec.yml:2: environmentVariables: each key once; given more than once: A"]
    assert problems("runLocation: x\nenvironmentVariables:\n  - {value: '1'}\n") == [
        "spec.yml:3: environmentVariables[0].key: required field is missing"
    ]


def test_mapping_variable_problems_use_the_written_path() -> None:
    assert problems(
        "runLocation: x\nenvironmentVariables:\n  A: ok\n  TOKEN:\n    value: v\n    secret: maybe\n"
    ) == ["spec.yml:6: environmentVariables.TOKEN.secret: expected true or false, got text"]


def test_secret_values_never_appear_in_problems() -> None:
    text = """
    runLocation: [s3cr3t-region]
    name: {s3cr3t-name: 1}
    environmentVariables:
      - {key: TOKEN, value: s3cr3t-token, secret: maybe-s3cr3t}
    retryStrategy: {type: s3cr3t-type, maxRetries: s3cr3t-n}
    """
    lines = problems(text)
    assert len(lines) == 5
    assert not any("s3cr3t" in line for line in lines), lines


# --- files that are not specs -----------------------------------------------------------------------


def test_yaml_syntax_error_is_one_line_with_file_and_line() -> None:
    lines = problems("runLocation: x\ntarget:\n  matchTags: [[a]\nname: y\n")
    assert len(lines) == 1
    assert lines[0].startswith("spec.yml:4: YAML syntax error:"), lines


def test_a_tab_or_an_undefined_alias_is_named_where_yaml_refuses_it() -> None:
    # libyaml (the loader since onecheck3) says "found character that cannot start any token" without
    # the character; the pure loader named it. A tab's indent is the usual cause: said, at its line.
    lines = problems("runLocation: x\nwait:\n\ttimeoutSeconds: 5\n")
    assert lines == [
        "spec.yml:3: YAML syntax error: while scanning for the next token found character '\\t' that "
        "cannot start any token (YAML indents with spaces, not tabs)"
    ]
    assert problems("runLocation: x\nname: `y`\n") == [
        "spec.yml:2: YAML syntax error: while scanning for the next token found character '`' that "
        "cannot start any token"
    ]
    assert problems("runLocation: x\nname: *nope\n") == [
        "spec.yml:2: YAML syntax error: found undefined alias 'nope'"  # named, as the pure loader did
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "",
            "spec.yml:1: empty spec: expected sessions: (a list of sessions) or "
            "runLocation: (a single session)",
        ),
        (
            "# only a comment\n",
            "spec.yml:1: empty spec: expected sessions: (a list of sessions) or "
            "runLocation: (a single session)",
        ),
        ("- runLocation: x\n", "spec.yml:1: expected a mapping at the top level, got a list"),
        ("just text\n", "spec.yml:1: expected a mapping at the top level, got text"),
    ],
)
def test_not_a_mapping(text: str, expected: str) -> None:
    assert problems(text) == [expected]


def test_alias_bomb_and_recursion_are_refused_quickly() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    assert problems(bomb) == ["spec.yml: too large or too deeply nested (recursive aliases?)"]
    assert problems("runLocation: x\ntarget: &t {matchTags: [*t]}\n") == [
        "spec.yml: too large or too deeply nested (recursive aliases?)"
    ]


def test_file_problems_are_one_line_each(tmp_path: Path) -> None:
    def load(path: Path) -> list[str]:
        with pytest.raises(SpecError) as info:
            load_spec(path, {})
        return info.value.problems

    assert load(tmp_path / "nope.yml") == [f"{tmp_path / 'nope.yml'}: no such file"]
    assert load(tmp_path) == [f"{tmp_path}: is a directory, expected a YAML file"]
    latin1 = tmp_path / "latin1.yml"
    latin1.write_bytes(b"runLocation: x\nname: caf\xe9\n")
    assert load(latin1) == [f"{latin1}:2: not UTF-8 text (byte 0xe9 at offset 24); save it as UTF-8"]
    bom = tmp_path / "bom.yml"
    bom.write_bytes(b"\xef\xbb\xbfrunLocation: x\n")
    assert load_spec(bom, {}).sessions[0].runLocation == "x"
    big = tmp_path / "big.yml"
    big.write_bytes(b"#" * 1_000_001)
    assert load(big) == [
        f"{big}: larger than 1000000 bytes (the bound of a YAML file); is this the right file?"
    ]


def test_unreadable_file(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp_path / "secret.yml"
    path.write_text("runLocation: x\n")
    path.chmod(0)
    with pytest.raises(SpecError) as info:
        load_spec(path, {})
    assert info.value.problems == [f"{path}: cannot read: permission denied"]
