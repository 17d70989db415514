"""The baseline (runner/job/baseline.py): every mark, matching, slower checks, and bad baseline files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from outcome_factory import result

from runner.job.baseline import Baseline, BaselineWarning, compare, load_baseline, mark_baseline
from runner.job.outcome import Outcome, ResultOutcome, SessionOutcome

EU = "eu-west-1"


def baseline(*results: ResultOutcome) -> Baseline:
    return Baseline(path="base.json", results=list(results))


def marks(now: list[ResultOutcome], then: Baseline, fail_on_degraded: bool = False) -> list[str]:
    return list(compare(now, then, fail_on_degraded).marks)


def test_each_mark() -> None:
    then = baseline(
        result("passed", "a", EU, checkId="A"),
        result("failed", "b", EU, checkId="B"),
        result("error", "c", EU, checkId="C"),
        result("passed", "d", EU, checkId="D"),
    )
    now = [
        result("failed", "a", EU, checkId="A"),
        result("failed", "b", EU, checkId="B"),
        result("passed", "c", EU, checkId="C"),
        result("flaky", "d", EU, checkId="D"),
        result("failed", "e", EU, checkId="E"),
    ]
    assert marks(now, then) == ["newly-failing", "still-failing", "fixed", "still-passing", "new-check"]
    summary = compare(now, then).summary
    assert [f.checkId for f in summary.fixed] == ["C"] and summary.used and summary.missing == []


def test_unfinished_and_cancelled_count_as_failing_degraded_only_with_the_flag() -> None:
    then = baseline(
        result("running", "r", EU, checkId="R"),
        result("passed", "x", EU, checkId="X"),
        result("passed", "g", EU, checkId="G"),
    )
    now = [
        result("passed", "r", EU, checkId="R"),
        result("cancelled", "x", EU, checkId="X"),
        result("degraded", "g", EU, checkId="G"),
    ]
    assert marks(now, then) == ["fixed", "newly-failing", "still-passing"]
    assert marks(now, then, fail_on_degraded=True) == ["fixed", "newly-failing", "newly-failing"]


def test_matched_by_check_id_and_location_even_when_renamed() -> None:
    then = baseline(
        result("failed", "old name", EU, checkId="A"), result("passed", "a", "us-east-1", checkId="A")
    )
    now = [result("failed", "new name", EU, checkId="A"), result("failed", "a", "us-east-1", checkId="A")]
    assert marks(now, then) == ["still-failing", "newly-failing"]


def test_name_and_location_when_the_check_id_is_missing_on_either_side() -> None:
    then = baseline(
        result("failed", "a", EU, checkId=None),
        result("failed", "b", EU, checkId="B"),
        result("failed", "c", EU, checkId="C1"),
    )
    now = [
        result("passed", "a", EU, checkId="A"),
        result("passed", "b", EU, checkId=None),
        result("passed", "c", EU, checkId="C2"),
    ]
    # A different check id under the same name is a different check: new, and the old one is missing.
    got = compare(now, then)
    assert got.marks == ["fixed", "fixed", "new-check"]
    assert [(m.name, m.checkId) for m in got.summary.missing] == [("c", "C1")]


def test_checks_missing_now_are_listed_with_their_location() -> None:
    then = baseline(
        result("passed", "a", EU, checkId="A"), result("failed", "gone", "ap-south-1", checkId="G")
    )
    got = compare([result("passed", "a", EU, checkId="A")], then)
    assert [(m.checkId, m.name, m.runLocation) for m in got.summary.missing] == [("G", "gone", "ap-south-1")]


def test_the_same_check_twice_pairs_in_order_each_baseline_result_once() -> None:
    then = baseline(result("failed", "a", EU, checkId="A"), result("passed", "a", EU, checkId="A"))
    now = [
        result("failed", "a", EU, checkId="A"),
        result("failed", "a", EU, checkId="A"),
        result("failed", "a", EU, checkId="A"),
    ]
    assert marks(now, then) == ["still-failing", "newly-failing", "new-check"]


@pytest.mark.parametrize(
    ("then_s", "now_s", "slower"),
    [
        (2.0, 3.0, True),  # exactly 1.5x
        (2.0, 2.9, False),
        (0.5, 3.0, False),  # the baseline under 1 s
        (1.0, 1.5, True),
        (0.9, 1.4, False),
        (None, 5.0, False),
        (2.0, None, False),
        (4.0, 2.0, False),
    ],
)
def test_slower_needs_both_at_least_a_second_and_one_and_a_half_times(
    then_s: float | None, now_s: float | None, slower: bool
) -> None:
    got = compare(
        [result("passed", "a", EU, checkId="A", duration=now_s)],
        baseline(result("passed", "a", EU, checkId="A", duration=then_s)),
    )
    assert bool(got.summary.slower) is slower
    if slower:
        entry = got.summary.slower[0]
        assert (entry.checkId, entry.baselineSeconds, entry.durationSeconds) == ("A", then_s, now_s)


def _results_file(tmp_path: Path, document: Any, name: str = "results.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document) if not isinstance(document, str) else document, encoding="utf-8")
    return str(path)


def _outcome_document(*results: ResultOutcome, **fields: Any) -> dict[str, Any]:
    session = SessionOutcome(name="s", runLocation=EU, results=list(results))
    return Outcome(sessions=[session], **fields).model_dump(mode="json")


def test_loads_a_results_file_written_by_a_run(tmp_path: Path) -> None:
    path = _results_file(tmp_path, _outcome_document(result("failed", "a", EU, checkId="A")))
    loaded = load_baseline(path)
    assert isinstance(loaded, Baseline) and loaded.warning is None
    assert [(r.checkId, r.verdict) for r in loaded.results] == [("A", "failed")]


def test_a_partial_baseline_is_used_with_a_caveat(tmp_path: Path) -> None:
    path = _results_file(
        tmp_path, _outcome_document(result("running", "a", EU, checkId="A"), partial=True, verdict="timeout")
    )
    loaded = load_baseline(path)
    assert isinstance(loaded, Baseline) and loaded.warning and "partial run (timeout)" in loaded.warning


def test_a_bom_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_outcome_document()).encode())
    assert isinstance(load_baseline(str(path)), Baseline)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[1, 2]", "expected a JSON object"),
        ({"sessions": []}, "no schemaVersion"),
        ({"schemaVersion": 2, "sessions": []}, "schemaVersion 2; this testsession reads 1"),
        ({"schemaVersion": "1", "sessions": []}, 'schemaVersion "1"'),
        ({"schemaVersion": True, "sessions": []}, "schemaVersion true"),
        ({"schemaVersion": 1}, "no sessions list"),
        ({"schemaVersion": 1, "sessions": [{"name": "s"}]}, "sessions.0.runLocation: Field required"),
        (
            {"schemaVersion": 1, "sessions": [{"name": "s", "runLocation": EU, "results": [{"id": "x"}]}]},
            "sessions.0.results.0.name: Field required (and 2 more)",
        ),
    ],
)
def test_an_unusable_baseline_is_one_warning_line(tmp_path: Path, content: Any, expected: str) -> None:
    if content is None:
        path = str(tmp_path / "absent.json")
    elif isinstance(content, bytes):
        (tmp_path / "b.json").write_bytes(content)
        path = str(tmp_path / "b.json")
    else:
        path = _results_file(tmp_path, content)
    loaded = load_baseline(path)
    assert isinstance(loaded, BaselineWarning)
    assert expected in loaded.warning and path in loaded.warning
    assert loaded.warning.endswith("comparing without a baseline") and "\n" not in loaded.warning


def test_a_directory_is_not_a_baseline(tmp_path: Path) -> None:
    loaded = load_baseline(str(tmp_path))
    assert isinstance(loaded, BaselineWarning) and "is a directory" in loaded.warning


def test_a_huge_file_is_refused_without_reading_it_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runner.job.baseline as module

    monkeypatch.setattr(module, "MAX_BASELINE_BYTES", 100)
    path = _results_file(
        tmp_path, _outcome_document(*(result("passed", f"c{i}", EU, checkId=f"C{i}") for i in range(5)))
    )
    loaded = load_baseline(path)
    assert isinstance(loaded, BaselineWarning) and "larger than" in loaded.warning


def test_mark_baseline_sets_marks_and_the_summary() -> None:
    now = Outcome.model_validate(
        _outcome_document(result("passed", "a", EU, checkId="A"), result("failed", "b", EU, checkId="B"))
    )
    then = baseline(
        result("failed", "a", EU, checkId="A"),
        result("failed", "b", EU, checkId="B"),
        result("passed", "z", EU, checkId="Z"),
    )
    marked = mark_baseline(now, then)
    assert [r.baseline for r in marked.all_results()] == ["fixed", "still-failing"]
    assert marked.baseline is not None and [m.checkId for m in marked.baseline.missing] == ["Z"]
    assert [r.baseline for r in now.all_results()] == [None, None]  # the input is unchanged
    assert mark_baseline(now, None) is now


def test_mark_baseline_with_an_unusable_file_keeps_only_the_warning() -> None:
    now = Outcome.model_validate(_outcome_document(result("failed", "a", EU, checkId="A")))
    marked = mark_baseline(now, BaselineWarning("x.json", "baseline x.json: no such file; comparing without"))
    assert (
        marked.baseline is not None and not marked.baseline.used and "no such file" in marked.baseline.warning
    )
    assert marked.all_results()[0].baseline is None
    data = marked.model_dump(mode="json")
    assert data["baseline"]["used"] is False and Outcome.model_validate(data) == marked
