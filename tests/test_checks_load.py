"""Loading a checks file of many checks: a plain API check is held as a small value without its model
being made, and loads exactly as the full way (validating a WorldCheck) loads it: the same plan, the
same definition, the same problems at the same places."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from runner.checks.checksfile import load_checks_file, parse_checks
from runner.checks.declared import Mode, WorldError

URL = "http://127.0.0.1:9/health"
STATUS = {"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}


def api(request: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    check: dict[str, Any] = {"id": "c1", "name": "Health", "checkType": "API", "tags": ["smoke"]}
    check["request"] = {"method": "GET", "url": URL, "assertions": [STATUS]} if request is None else request
    return {**check, **fields}


# Plain checks, and checks a step away from plain (a value a validator converts, a key production
# keeps, a problem): each loads as it does the full way.
VARIANTS: list[dict[str, Any]] = [
    api(),
    api(tags=[]),
    api(activated=False),
    api({"url": URL}),
    api({"url": "{{API_URL}}/health", "method": "post", "body": "{}", "bodyType": "JSON"}),
    api({"url": URL, "headers": [{"key": "X-A", "value": "b"}], "queryParameters": [], "skipSSL": True}),
    api({"url": URL, "assertions": [{**STATUS, "property": "", "regex": None}]}),
    {"name": "No id", "request": {"url": URL}},
    api({"url": URL, "assertions": [{**STATUS, "target": 200}]}),  # a number: made a text
    api({"url": URL, "headers": {"X-A": "b"}}),  # production's older shape
    api({"url": URL, "followRedirects": None}),
    api(description="kept as production's"),
    api(locations=["eu-west-1"]),
    api({"url": "ftp://127.0.0.1/"}),
    api({"url": URL, "method": "FETCH"}),
    api({"url": URL, "assertions": [{**STATUS, "comparison": "IS"}]}),
    api({"url": URL, "assertions": None}),
    api({"url": URL, "asertions": []}),
    api({"url": URL, "headers": [{"key": "X-A", "value": "b", "regex": None}]}),
    api({"url": URL, "assertions": [{**STATUS, "regex": 1}]}),
    api({"url": URL, "followRedirects": 1}),
    api({"url": URL, "assertions": [{"comparison": "EQUALS"}]}),
    api({"url": URL, "queryParameters": [{"key": "q", "value": 1}]}),
    api(tags=None),
    api({"url": URL, "ipFamily": "IPv5", "bodyType": "XML"}),
    api({}),
    api({"url": 123}),
    api(tags=["a", 1]),
    api(id=7),
    api(name=""),
    api(checkType="URL"),
    api(checkType="HEARTBEAT"),
]


def loaded(checks: list[Any], project: bool = False) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Each check's fields, plan (its mode, reason, advice) and definition, or the problems."""
    try:
        found = parse_checks(checks, "checks.yml", {}, project=project)
    except WorldError as exc:
        return [], exc.problems
    held = [
        (c.id, c.name, c.checkType, c.tags, c.activated, c.locations, c.kept, c.runtimeId, c.plan)
        for c in found.checks
    ]
    return [(*row, c.plan.definition) for row, c in zip(held, found.checks, strict=True)], []


def the_full_way(check: dict[str, Any]) -> dict[str, Any]:
    """The same check, read the full way: `frequency` at its default is not a plain check's field."""
    return {**check, "frequency": 10}


@pytest.mark.parametrize("project", [False, True], ids=["file", "project"])
@pytest.mark.parametrize("check", VARIANTS, ids=[str(i) for i in range(len(VARIANTS))])
def test_a_check_loads_as_the_full_way_loads_it(check: dict[str, Any], project: bool) -> None:
    """`project`: a Checkly project's checks, where one check's fields fail it alone."""
    between = [api(id="before"), check, api(id="after")]
    full = [api(id="before"), the_full_way(check), api(id="after")]
    assert loaded(between, project) == loaded(full, project)


def test_problems_of_checks_among_plain_ones_are_named_at_their_place(tmp_path: Path) -> None:
    lines = ["checks:"]
    for i in range(6):
        lines += [f"  - id: c{i}", f"    name: check {i}", "    request:", f"      url: {URL}"]
    lines[lines.index("  - id: c3") + 3] = "      url: 123"  # check 3: a number for its url
    lines.insert(lines.index("  - id: c4") + 1, "    chekType: API")  # check 4: a misspelt key
    (tmp_path / "checks.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(WorldError) as caught:
        load_checks_file(tmp_path / "checks.yml", {})
    path = tmp_path / "checks.yml"
    assert caught.value.problems == [
        f"{path}:17: checks[3].request.url: expected a string, got a number",
        f"{path}:19: checks[4].chekType: unknown field 'chekType': did you mean 'checkType'?",
    ]


def test_the_checks_a_run_holds_are_small_values(tmp_path: Path) -> None:
    """A run of 10,000 checks holds each for its whole length: a slots value and its definition's
    data, not a model (~1.7 KiB more a check)."""
    lines = ["variables: [{key: API_URL, value: 'http://127.0.0.1:9'}]", "checks:"]
    for i in range(1000):
        lines += [f"  - id: check-{i:05}", f"    name: api check {i}", "    checkType: API"]
        lines += ["    tags: [bench]"]
        lines += ["    request:", "      method: GET", f"      url: '{{{{API_URL}}}}/items/{i}'"]
        lines += ["      assertions:", "        - {source: STATUS_CODE, comparison: EQUALS, target: '200'}"]
    (tmp_path / "checks.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tracemalloc.start()
    try:
        checks = load_checks_file(tmp_path / "checks.yml", {})
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(checks.checks) == 1000 and all(c.plan.mode is Mode.REAL for c in checks.checks)
    assert not hasattr(checks.checks[0], "__dict__")
    # Measured: ~1.1 KiB a check with its texts and request (was ~2.7 KiB with the model).
    assert held / 1000 < 1600, held / 1000


def test_a_check_that_is_not_plain_is_parsed_once_when_it_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its definition decides its plan and names its problems from one parse (it was four)."""
    from runner.checks import declared

    parsed: list[str] = []
    parse = declared.parse_check_definition

    def counted(data: Any) -> Any:
        parsed.append(str(data.get("name")))
        return parse(data)

    monkeypatch.setattr(declared, "parse_check_definition", counted)
    url = {"checkType": "URL", "request": {"url": URL}}
    checks = [{"id": f"u{i}", "name": f"url {i}", **url} for i in range(3)]
    loaded = parse_checks([*checks, api()], "checks.yml", {})
    assert [c.plan.mode for c in loaded.checks] == [Mode.REAL] * 4
    assert parsed == ["url 0", "url 1", "url 2"]  # the plain API check: none


def test_every_problem_of_the_file_at_once_among_plain_checks() -> None:
    """A variable's problem, a check's definition problem and a check's wrong type, each at its place."""
    url = {"checkType": "URL"}
    checks = [
        {"name": "a", "request": {"url": URL}},
        {"name": "u", **url, "request": {"url": "ftp://x"}},
        {"name": "p", "request": {"url": URL}},
        {"name": "v", **url, "request": {"url": 5}},
    ]
    with pytest.raises(WorldError) as caught:
        parse_checks({"variables": [{"key": ""}], "checks": checks}, "c.yml", {})
    assert caught.value.problems == [
        "c.yml: variables[0].key: must not be empty",
        "c.yml: checks[1].request.url: must start with http:// or https://",
        "c.yml: checks[3].request.url: expected a string, got a number",
    ]
