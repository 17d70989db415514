"""Fuzzing the spec: mutated and random specs given to `testsession validate` and `testsession run`.

Whatever the file holds, both commands answer with an exit code, never a traceback: 0 for a valid spec
(validate), 2 with one or more lines on stderr otherwise. `run` is called with no service configured, so
a valid spec ends at "missing credentials" (exit 2) and an invalid one at its problems (exit 2) — both
before any network access, which a guard on socket.connect proves.
"""

from __future__ import annotations

import copy
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [ROOT / "examples" / "testsession.yml", ROOT / "examples" / "testsession-multi.yml"]
BASE_DATA = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in EXAMPLES]
BASE_TEXT = [path.read_text(encoding="utf-8") for path in EXAMPLES]

# The environment of every call: a set and an empty variable for ${VAR} forms, no credentials at all.
FUZZ_ENV = {"FUZZ_SET": "from-env", "FUZZ_EMPTY": "", "FUZZ_SECRET": "fuzz-secret-value-8d1c"}
CLEARED = (
    "TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_BASE_URL", "PREVIEW_URL", "API_TOKEN",
    "EU_LOCATION", "US_LOCATION", "GITHUB_ACTIONS", "GITLAB_CI", "CI",
)  # fmt: skip

SETTINGS = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
}
# Each example runs `validate` and `run` in this process (~35 ms of CPU). A long run:
#   HYPOTHESIS_PROFILE=deep python -m pytest tests/test_fuzz_spec.py   (helpers.examples)
EXAMPLES_MUTATED = examples(20)
EXAMPLES_TEXT = examples(15)

# --- strategies -------------------------------------------------------------------------------------

VAR_FORMS = [
    "${FUZZ_SET}", "${FUZZ_EMPTY}", "${FUZZ_UNSET_XYZ}", "${FUZZ_UNSET_XYZ:-fallback}", "${FUZZ_EMPTY:-}",
    "$${literal}", "${", "${}", "${1BAD}", "${A-B}", "${FUZZ_SET:-${NESTED}}", "${ÄÖÜ}", "$FUZZ_SET",
    "pre ${FUZZ_SET} post ${FUZZ_UNSET_XYZ}", "${FUZZ_SECRET}", "}${", "${FUZZ_SET", "${ FUZZ_SET }",
]  # fmt: skip
ODD_TEXT = [
    "", " ", "\t", "\n", "\x00", "\x1b[31m", "\u202e", "😀", "é", "\ufeff", "\ufffe", "~", "null", "yes",
    "0x1F", "1e400", "-0", ".inf", "&anchor", "*alias", "!!python/object:os.system", "%YAML", "---",
    "key: value", "[", "{", "|", ">", "#", "'", '"',
]  # fmt: skip

no_surrogates = st.characters(exclude_categories=["Cs"])
fuzz_text = st.one_of(
    st.text(no_surrogates, max_size=40),
    st.sampled_from(VAR_FORMS),
    st.sampled_from(ODD_TEXT),
    st.text(st.characters(max_codepoint=0x1F), max_size=10),
    st.tuples(st.sampled_from(["x", "é", "😀", "${FUZZ_SET}"]), st.integers(1_000, 120_000)).map(
        lambda pair: pair[0] * pair[1]
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**20, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    fuzz_text,
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(fuzz_text, st.integers(), st.booleans()), children, max_size=4),
    ),
    max_leaves=12,
)
KNOWN_KEYS = [
    "sessions", "name", "runLocation", "target", "matchTags", "checkId", "allowDeactivated",
    "environmentVariables", "key", "value", "secret", "locked", "retryStrategy", "type", "maxRetries",
    "metadata", "environment", "commitId", "github", "wait", "timeoutSeconds", "rca", "max", "context",
    "reports", "junit", "markdown", "json", "gate", "failOnDegraded", "failOnNoMatchingChecks",
]  # fmt: skip


def paths(data: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into the document (the root included)."""
    found = [at]
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths(value, (*at, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += paths(value, (*at, index))
    return found


def get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    """An example spec with a few mutations: keys, types, values, nesting."""
    data = copy.deepcopy(draw(st.sampled_from(BASE_DATA)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths(data)))
        op = draw(st.sampled_from(["replace", "delete", "add", "rename", "wrap_list", "wrap_dict", "dup"]))
        if not path:
            if op in ("replace", "wrap_list"):
                data = draw(values) if op == "replace" else [data]
            continue
        parent, last = get(data, path[:-1]), path[-1]
        if op == "replace":
            parent[last] = draw(values)
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.one_of(st.sampled_from(KNOWN_KEYS), fuzz_text))] = draw(values)
        elif op == "add" and isinstance(parent, list):
            parent.insert(draw(st.integers(0, len(parent))), draw(values))
        elif op == "rename" and isinstance(parent, dict):
            new = draw(st.one_of(st.sampled_from(KNOWN_KEYS), fuzz_text, st.integers(), st.none()))
            parent[new] = parent.pop(last)
        elif op == "wrap_list":
            parent[last] = [parent[last]]
        elif op == "wrap_dict":
            parent[last] = {draw(st.sampled_from(KNOWN_KEYS)): parent[last]}
        elif op == "dup" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        # A path's meaning changes after a structural mutation: recompute them on the next round.
        paths(data)
    return data


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**6)


@st.composite
def mutated_texts(draw: st.DrawFn) -> bytes:
    """YAML syntax damage on an example's text, or random text and bytes."""
    kind = draw(st.sampled_from(["edit", "edit", "edit", "random", "bytes", "document"]))
    if kind == "random":
        return draw(st.text(max_size=400)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    if kind == "document":
        return dump(draw(mutated_documents())).encode("utf-8")
    text = draw(st.sampled_from(BASE_TEXT))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "truncate", "indent", "dup_line"]))
        if op == "insert":
            text = text[:at] + draw(st.one_of(fuzz_text, st.sampled_from(ODD_TEXT))) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 200)) :]
        elif op == "truncate":
            text = text[:at]
        elif op == "indent":
            lines = text.splitlines(keepends=True)
            if lines:
                index = draw(st.integers(0, len(lines) - 1))
                lines[index] = draw(st.sampled_from([" ", "  ", "\t", "    "])) + lines[index]
                text = "".join(lines)
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                index = draw(st.integers(0, len(lines) - 1))
                lines.insert(index, lines[index])
                text = "".join(lines)
    return text.encode("utf-8", "surrogatepass")


# --- the checks -------------------------------------------------------------------------------------


@contextmanager
def fuzz_environment(cwd: Path) -> Iterator[None]:
    """FUZZ_ENV set, credentials and the examples' variables unset, no network, cwd outside any repo."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(FUZZ_ENV)
    env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access during a run that cannot be configured: {args!r}")

    old_cwd = os.getcwd()
    os.chdir(cwd)
    try:
        no_network = mock.patch.object(socket.socket, "connect", refuse)
        with mock.patch.dict(os.environ, env, clear=True), no_network:
            yield
    finally:
        os.chdir(old_cwd)


def call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)  # an unexpected exception fails the test with its traceback
    out, err = capsys.readouterr()
    return code, out, err


def check_spec_file(content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """validate and run on one file; returns validate's exit code."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    spec = work / "spec.yml"
    spec.write_bytes(content)
    with fuzz_environment(work):
        v_code, v_out, v_err = call(["validate", str(spec)], capsys)
        # Report paths from flags (they win over the spec's): a fuzzed `reports:` path never
        # sends a report outside the work directory.
        out = work / "out"
        flags = ["--junit", f"{out}/j.xml", "--markdown", f"{out}/s.md", "--json", f"{out}/r.json"]
        r_code, r_out, r_err = call(["run", str(spec), *flags], capsys)
    for text in (v_out, v_err, r_out, r_err):
        assert "Traceback" not in text
        assert FUZZ_ENV["FUZZ_SECRET"] not in text or "secret" not in content.decode("utf-8", "replace")
    assert v_code in (0, 2), v_err
    assert r_code == 2, (r_out, r_err)
    assert r_err.strip(), "exit 2 without a message"
    assert r_err.count("\n") <= max(50, v_err.count("\n")), "one line per problem"
    # A list, or `checks:` without sessions: validate reads it as `run --checks` would, not as a spec.
    checks_file = "(a checks file" in v_out + v_err
    if v_code == 0:
        assert v_out.startswith(f"{spec}: ok ("), v_out
        assert v_err == "" or checks_file  # a checks file's notes (no assertions, cannot run here)
        assert "missing credentials" in r_err or checks_file
    else:
        assert v_out == ""
        assert v_err.strip().splitlines()[-1].startswith(f"{spec}: "), v_err
        # run names the same problems as validate (validate adds a count line)
        assert checks_file or r_err.strip().splitlines()[0] == v_err.strip().splitlines()[0]
        assert "missing credentials" not in r_err
    # Reports on every exit: a run that never started still writes the reports asked for, naming why.
    assert not (work / "testsession-reports").exists(), "the flags' paths win over the spec's"
    results = json.loads((out / "r.json").read_text(encoding="utf-8"))
    assert (results["exitCode"], results["verdict"]) == (2, "usage-error") and results["message"]
    assert 'errors="1"' in (out / "j.xml").read_text(encoding="utf-8")
    written = (out / "r.json").read_text(encoding="utf-8")
    assert FUZZ_ENV["FUZZ_SECRET"] not in written or "secret" not in content.decode("utf-8", "replace")
    return v_code


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_are_valid(example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_spec_file(example.read_bytes(), tmp_path, capsys) == 0


def test_a_valid_mutation_still_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fuzz checks can tell a valid spec from an invalid one (guards against a vacuous check)."""
    data = copy.deepcopy(BASE_DATA[0])
    data["name"] = "ünïcode ${FUZZ_SET} 😀"
    data["environmentVariables"].append({"key": "FROM_ENV", "value": "${FUZZ_SECRET}", "secret": True})
    assert check_spec_file(dump(data).encode("utf-8"), tmp_path, capsys) == 0
    data["wait"]["timeoutSeconds"] = "soon"
    assert check_spec_file(dump(data).encode("utf-8"), tmp_path, capsys) == 2


@settings(max_examples=EXAMPLES_MUTATED, **SETTINGS)  # type: ignore[arg-type]
@given(document=mutated_documents())
def test_mutated_specs_exit_0_or_2_without_traceback(
    document: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_spec_file(dump(document).encode("utf-8"), tmp_path, capsys)


@settings(max_examples=EXAMPLES_TEXT, **SETTINGS)  # type: ignore[arg-type]
@given(content=mutated_texts())
def test_damaged_yaml_and_random_bytes_exit_0_or_2_without_traceback(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_spec_file(content, tmp_path, capsys)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xef\xbb\xbf",
        b"---\n...\n",
        b"a: &a [*a]\n",
        b"- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - x\n",
        b"name: x\nrunLocation: " + b"y" * 999_000 + b"\n",
        b"name: x\nrunLocation: eu-west-1\n" + b"#" * 1_000_001,
        b"runLocation: eu-west-1\nname: !!binary aGVsbG8=\n",
        b"runLocation: eu-west-1\nname: !!python/object/apply:os.system ['true']\n",
        b"runLocation: eu-west-1\n? [a, b]\n: c\n",
        b"runLocation: eu-west-1\nwait: {timeoutSeconds: .nan}\n",
        b"runLocation: eu-west-1\nwait: {timeoutSeconds: 1e999}\n",
        b"runLocation: eu-west-1\nrca: {max: 99999999999999999999999999999}\n",
        b"runLocation: eu-west-1\nenvironmentVariables: {A: ${FUZZ_SECRET}, A2: [1, 2]}\n",
        b"sessions:\n" + b"  - {runLocation: eu-west-1}\n" * 2000,
        b"runLocation: \x00\n",
        b"\xff\xfe\x00r\x00u\x00n\x00",
    ],
    ids=lambda c: repr(c[:24]),
)
def test_odd_files_exit_0_or_2(content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_spec_file(content, tmp_path, capsys)
