"""A run split over CI jobs (`--shard i/n`) and `testsession merge` (issue 30).

The claims a user checks: the parts of a split, merged, give exactly the counts, verdict and exit code of
the run that was not split; every check runs in exactly one part; an earlier run's durations balance the
parts; a merge that is not whole (a part missing, one given twice, a part of another split) fails closed
naming the part. The runs are real, in this process, against the emulator.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CI_PREFIXES, REPO_ROOT, cli_run, fast_world, run_here

from runner.core.errors import UsageError
from runner.job.digest import digest
from runner.job.merge import Part, problems
from runner.job.outcome import Outcome, ResultOutcome, SessionOutcome
from runner.job.shard import Durations, Unit, durations_of, load_durations, parse_shard, split

SPEC = str(REPO_ROOT / "examples" / "testsession.yml")  # the default world's all-outcomes checks


def _units(count: int) -> list[Unit]:
    return [Unit(0, f"check-{i:03d}", f"s\x1feu-west-1\x1fcheck-{i:03d}", "eu-west-1") for i in range(count)]


def _passed(check: str, seconds: float) -> ResultOutcome:
    return ResultOutcome(
        id=check, checkId=check, name=check, status="PASSED", verdict="passed", runLocation="eu-west-1",
        durationSeconds=seconds,
    )  # fmt: skip


def _load(i: int, parts: list[list[Unit]], seconds: dict[str, float]) -> float:
    return sum(seconds[u.check_id] for u in parts[i])


# --- the split, in-process ---------------------------------------------------------------------


def test_every_check_in_exactly_one_part_and_the_split_is_the_same_in_every_job() -> None:
    units = _units(23)
    parts = split(units, 4)
    assert sorted(u for part in parts for u in part) == sorted(units)  # each once, none lost
    assert sorted(len(p) for p in parts) == [5, 6, 6, 6]  # without durations: counts within one
    assert split(list(reversed(units)), 4) == parts  # another job listing the checks in another order


def test_durations_of_an_earlier_run_balance_the_parts(tmp_path: Path) -> None:
    # Very uneven: two long browser checks, a few medium ones, many short API checks.
    seconds = {f"check-{i:03d}": s for i, s in enumerate([60, 55, 30, 25, 20, 12, 10, 8] + [1] * 32)}
    units = _units(len(seconds))
    earlier = Outcome(
        sessions=[
            SessionOutcome(
                name="s",
                runLocation="eu-west-1",
                results=[_passed(c, s) for c, s in seconds.items()],
            )
        ]
    )
    path = tmp_path / "results.json"
    path.write_text(earlier.model_dump_json(), encoding="utf-8")
    durations = load_durations(str(path))
    assert durations.warning is None and len(durations.by_check) == len(seconds)
    balanced = split(units, 4, durations)
    mean = sum(seconds.values()) / 4
    loads = [_load(i, balanced, seconds) for i in range(4)]
    assert max(loads) <= 1.3 * mean, loads
    # By count alone the same set is far out of balance: what the durations are for.
    by_count = split(units, 4)
    assert max(_load(i, by_count, seconds) for i in range(4)) > 1.3 * mean
    # Durations rounded onto the ladder: a run 1% slower than the last splits alike.
    jitter = durations_of([_passed(c, s * 1.01) for c, s in seconds.items()])
    assert split(units, 4, jitter) == balanced


def test_an_unreadable_durations_file_is_a_warning_and_the_split_goes_by_count(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    for path in (tmp_path / "missing.json", tmp_path / "bad.json"):
        durations = load_durations(str(path))
        assert durations.warning and str(path) in durations.warning and not durations.by_check
    assert split(_units(8), 2, Durations({}, {})) == split(_units(8), 2)


def test_shard_parts_and_auto_from_gitlab() -> None:
    assert parse_shard("2/4", {}).label == "2/4"
    assert parse_shard("auto", {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}).label == "3/5"
    for bad, why in (("0/4", "1 to n"), ("5/4", "1 to n"), ("2-4", "not a part"), ("auto", "not set")):
        with pytest.raises(UsageError, match=why):
            parse_shard(bad, {})


# --- real runs against the emulator, merged ----------------------------------------------------


def _run(out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    ran = cli_run(out, "run", SPEC, *flags, rca=False)
    return ran.code, ran.data


def _merge(tmp_path: Path, *files: Path, flags: tuple[str, ...] = ()) -> Any:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return run_here(["merge", *map(str, files), "-o", str(tmp_path / "merged"), *flags], env, tmp_path)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The default world's all-outcomes checks (failed, error, degraded, flaky, passed; known
    failures among them) run whole on one emulator, and in 4 parts on another with the same world
    (the same history: known stays known), with `failOn: new`. Once for the module."""
    from runner.emulator import Emulator

    tmp_path = tmp_path_factory.mktemp("shards")
    world = fast_world(tmp_path)
    runs: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in list(os.environ):
            if name.startswith(CI_PREFIXES) or name == "CI":
                monkeypatch.delenv(name)
        monkeypatch.chdir(tmp_path)
        for name, parts in (("whole", [None]), ("parts", [f"{i}/4" for i in range(1, 5)])):
            with Emulator(world=str(world)) as emu:
                monkeypatch.setenv("TESTSESSION_API_KEY", emu.api_key)
                monkeypatch.setenv("TESTSESSION_ACCOUNT_ID", emu.account_id)
                monkeypatch.setenv("TESTSESSION_BASE_URL", emu.url)
                for part in parts:
                    out = tmp_path / (name if part is None else f"shard{part[0]}")
                    flags = ["--fail-on", "new", *(["--shard", part] if part else [])]
                    runs[out.name] = (*_run(out, *flags), out)
        yield runs


def test_four_parts_merged_are_the_whole_run(tmp_path: Path, shards: dict[str, Any]) -> None:
    whole_code, whole, _ = shards["whole"]
    assert whole["counts"]["failed"] and whole["counts"]["error"]  # a set with failures
    assert any(r.get("known") for s in whole["sessions"] for r in s["results"])  # some known
    files = [shards[f"shard{i}"][2] / "results.json" for i in range(1, 5)]
    ids = [r["checkId"] for f in files for s in json.loads(f.read_text())["sessions"] for r in s["results"]]
    whole_ids = [r["checkId"] for s in whole["sessions"] for r in s["results"]]
    assert sorted(ids) == sorted(whole_ids) and len(set(ids)) == len(ids)  # each check in one part
    for i in range(1, 5):
        shard = json.loads(files[i - 1].read_text())["shard"]
        assert (shard["index"], shard["total"], shard["matched"]) == (i, 4, len(whole_ids))
    merged = _merge(tmp_path, *files)
    result = json.loads((tmp_path / "merged" / "results.json").read_text())
    assert merged.returncode == whole_code == result["exitCode"]
    assert result["counts"] == whole["counts"] and result["verdict"] == whole["verdict"]
    assert result["failOn"] == "new"
    known = {r["checkId"]: r["known"] for s in result["sessions"] for r in s["results"]}
    assert known == {r["checkId"]: r["known"] for s in whole["sessions"] for r in s["results"]}
    assert [p["shard"] for p in result["merged"]] == ["1/4", "2/4", "3/4", "4/4"]
    assert all(s["origin"]["service"] == "127.0.0.1" for s in result["sessions"])
    assert (tmp_path / "merged" / "junit.xml").is_file() and (tmp_path / "merged" / "summary.md").is_file()


def test_a_merge_that_is_not_whole_fails_closed_naming_it(tmp_path: Path, shards: dict[str, Any]) -> None:
    files = {i: shards[f"shard{i}"][2] / "results.json" for i in range(1, 5)}
    missing = _merge(tmp_path, files[1], files[2], files[4])
    assert missing.returncode == 2 and "shard 3/4" in missing.stderr and "missing" in missing.stderr
    refused = json.loads((tmp_path / "merged" / "results.json").read_text())  # reports on every exit
    assert (refused["exitCode"], refused["verdict"]) == (2, "usage-error")
    assert "shard 3/4" in refused["message"] and "missing" in refused["message"]
    twice = _merge(tmp_path, files[1], files[2], files[2], files[3], files[4])
    assert twice.returncode == 2 and "shard 2/4" in twice.stderr and "given twice" in twice.stderr
    # A part of another run of the same checks: same set, split by other durations.
    data = json.loads(files[3].read_text())
    data["shard"]["split"] = "0123456789abcdef"
    data["sessions"][0]["testSessionId"] = "5b0e6c3a-7d7e-4b3c-9a53-2f0f6f1f0a11"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(data), encoding="utf-8")
    split_otherwise = _merge(tmp_path, files[1], files[2], foreign, files[4])
    assert split_otherwise.returncode == 2 and "split differently" in split_otherwise.stderr
    # The whole run among parts: different runs, merged only when asked.
    whole = shards["whole"][2] / "results.json"
    mixed = _merge(tmp_path, whole, *files.values())
    assert mixed.returncode == 2 and "--combine" in mixed.stderr
    combined = _merge(tmp_path, whole, *files.values(), flags=("--combine",))
    result = json.loads((tmp_path / "merged" / "results.json").read_text())
    assert (
        combined.returncode == result["exitCode"]
        and result["counts"]["total"] == 2 * shards["whole"][1]["counts"]["total"]
    )
    assert {s["origin"]["shard"] for s in result["sessions"]} == {None, "1/4", "2/4", "3/4", "4/4"}


def test_parts_of_different_check_sets_are_foreign() -> None:
    def part(name: str, fingerprint: str, index: int) -> Part:
        shard = {"index": index, "total": 2, "matched": 3, "checks": 1, "fingerprint": fingerprint}
        shard["split"] = "s"
        return Part(name, Outcome.model_validate({"schemaVersion": 1, "shard": shard}))

    found = problems([part("a.json", "aaaa", 1), part("b.json", "bbbb", 2)])
    assert any("not the parts of one sharded run" in p and "b.json" in p for p in found)
    assert any("shard 2/2 of check set aaaa" in p and "missing" in p for p in found)


def _github(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "out.txt").touch()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_ACTIONS": "true"}
    return {**env, "GITHUB_OUTPUT": str(tmp_path / "out.txt"), **extra}


def test_a_part_does_not_annotate_the_actions_merge_mode_does_once(
    tmp_path: Path, shards: dict[str, Any], cli_env: Any
) -> None:
    from runner.cli import action

    spec = tmp_path / "spec.yml"
    spec.write_text(Path(SPEC).read_text(encoding="utf-8"), encoding="utf-8")
    credentials = {
        "TESTSESSION_API_KEY": cli_env.api_key,
        "TESTSESSION_ACCOUNT_ID": cli_env.account_id,
        "TESTSESSION_BASE_URL": cli_env.url,
    }
    github = _github(tmp_path, **credentials)
    part = run_here(["run", str(spec), "--shard", "2/4", "--no-rca"], github, tmp_path)
    assert "exit-code=" in (tmp_path / "out.txt").read_text() and part.returncode in (0, 1)
    assert "::error " not in part.stdout  # the parts leave the annotations to the merge
    whole_code, whole, _ = shards["whole"]
    for i in range(1, 5):
        (tmp_path / f"shard{i}").mkdir()
        source = shards[f"shard{i}"][2] / "results.json"
        (tmp_path / f"shard{i}" / "results.json").write_bytes(source.read_bytes())
    (tmp_path / "out.txt").write_text("")
    env = _github(tmp_path, INPUT_MERGE="shard*/results.json", INPUT_JSON_PATH="merged/results.json")
    merged = run_here([], env, tmp_path, entry=action.main)
    assert merged.returncode == whole_code
    outputs = (tmp_path / "out.txt").read_text()
    assert f"exit-code={whole_code}" in outputs and f"failed={whole['counts']['failed']}" in outputs
    failing = digest(Outcome.model_validate(whole)).failing  # under failOn new: the new failures
    assert merged.stdout.count("::error ") == len(failing) > 0
    assert json.loads((tmp_path / "merged" / "results.json").read_text())["counts"] == whole["counts"]


def test_a_part_without_checks_triggers_nothing_and_a_bad_part_is_a_usage_error(
    tmp_path: Path, cli_env: Any
) -> None:
    from helpers import sessions_created

    spec = tmp_path / "spec.yml"
    spec.write_text(Path(SPEC).read_text(encoding="utf-8") + "\nshard: 5/4\n", encoding="utf-8")
    bad = cli_run(tmp_path, "run", str(spec), rca=False)
    assert bad.code == 2 and bad.data["verdict"] == "usage-error" and "5/4" in bad.data["message"]
    empty = cli_run(tmp_path, "run", SPEC, "--shard", "6/6", rca=False)  # 5 checks, 6 parts
    assert (empty.code, empty.data["shard"]["checks"], empty.data["shard"]["matched"]) == (0, 0, 5)
    assert "holds none of the 5 matched checks" in empty.data["message"]
    assert sessions_created(cli_env) == 0


def test_the_parts_comparisons_with_one_baseline_are_one_comparison() -> None:
    from runner.job.merge import merge
    from runner.job.shard import key_fingerprint, split_fingerprint

    def ref(name: str) -> dict[str, str]:
        return {"checkId": f"id-{name}", "name": name, "runLocation": "eu-west-1"}

    nothing = key_fingerprint([])  # parts of no checks: the comparison is what is tested here

    def part(index: int, missing: list[str], fixed: list[str]) -> Part:
        shard = {"index": index, "total": 2, "matched": 0, "checks": 0, "fingerprint": nothing}
        shard.update(split=split_fingerprint([[], []]), own=nothing)
        baseline = {"path": "base.json", "used": True, "missing": [ref(m) for m in missing]}
        baseline["fixed"] = [ref(f) for f in fixed]
        data = {"schemaVersion": 1, "shard": shard, "baseline": baseline}
        return Part(f"p{index}.json", Outcome.model_validate(data))

    # Each part misses the other's check, and both miss `gone`: only `gone` is missing from the run.
    merged = merge([part(1, ["b", "gone"], ["a"]), part(2, ["a", "gone"], [])])
    assert merged.baseline is not None and merged.baseline.used
    assert [r.name for r in merged.baseline.missing] == ["gone"]
    assert [r.name for r in merged.baseline.fixed] == ["a"]


def test_durations_from_an_emulator_state_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TESTSESSION_API_KEY", "TESTSESSION_ACCOUNT_ID", "TESTSESSION_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    state = tmp_path / "state.db"
    world = str(fast_world(tmp_path))
    ran = cli_run(tmp_path, "run", SPEC, "--emulator", "--world", world, "--state", str(state), rca=False)
    durations = load_durations(str(state))
    assert durations.warning is None
    ran_seconds = {r["checkId"]: r["durationSeconds"] for s in ran.data["sessions"] for r in s["results"]}
    assert {c: durations.by_check.get(c) for c in ran_seconds} == ran_seconds
    (tmp_path / "other.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert "split by count" in (load_durations(str(tmp_path / "other.db")).warning or "")


def test_the_actions_inputs_for_parts_and_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.cli.action import InputError, build_argv

    part = build_argv({"INPUT_SPEC": "s.yml", "INPUT_SHARD": "2/4", "INPUT_SHARD_DURATIONS": "d.json"})
    assert part == ["run", "s.yml", "--shard", "2/4", "--shard-durations", "d.json"]
    for i in (1, 2):
        (tmp_path / f"shard-{i}").mkdir()
        (tmp_path / f"shard-{i}" / "results.json").touch()
    monkeypatch.chdir(tmp_path)
    merge = {"INPUT_MERGE": "shard-*/results.json", "INPUT_COMMENT": "true", "INPUT_JSON_PATH": "out/r.json"}
    assert build_argv(merge) == [
        "merge", "shard-1/results.json", "shard-2/results.json", "-o", "out", "--comment"
    ]  # fmt: skip
    with pytest.raises(InputError, match="matches no file"):
        build_argv({"INPUT_MERGE": "nowhere/*.json"})
    with pytest.raises(InputError, match="merge and shard"):
        build_argv({**merge, "INPUT_SHARD": "1/2"})
