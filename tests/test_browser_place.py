"""Where a shared run of browser checks writes its project (protocols/browser/place.py): the same
folder from run to run (Playwright's compile cache is keyed by a file's path), another one while a
run holds it, a folder of the run where the cache cannot be written; emptied before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.checks.protocols.browser import place


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "testsession"


def test_runs_one_after_another_write_to_the_same_emptied_folder(tmp_path: Path, cache: Path) -> None:
    folders = []
    for n in range(2):
        with place.run_place(tmp_path / f"fallback{n}") as got:
            assert list(got.folder.iterdir()) == []  # what a killed run left is gone
            (got.folder / "check.spec.ts").write_text("a script")
            folders.append(got.folder)
            assert got.compile_cache == cache / "playwright-compile"
        assert not got.folder.exists()  # the script does not stay in the cache
        (got.folder).mkdir()
        (got.folder / "left-by-a-killed-run").write_text("x")
    assert folders[0] == folders[1] == cache / "browser-runs" / "0"
    assert not (tmp_path / "fallback0").exists()


def test_a_run_beside_another_takes_the_next_folder_and_none_free_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(place, "SLOTS", 2)
    with (
        place.run_place(tmp_path / "a") as first,
        place.run_place(tmp_path / "b") as second,
        place.run_place(tmp_path / "c") as third,
    ):
        assert [first.folder.name, second.folder.name] == ["0", "1"]
        assert third == place.Place(tmp_path / "c", None)  # Playwright's own cache folder
    with place.run_place(tmp_path / "d") as again:
        assert again.folder.name == "0"  # released


def test_a_cache_that_cannot_be_written_falls_back_to_the_runs_folder(tmp_path: Path, cache: Path) -> None:
    cache.parent.mkdir(parents=True)
    cache.write_text("a file where the cache folder would be")
    with place.run_place(tmp_path / "run") as got:
        assert got == place.Place(tmp_path / "run", None) and got.folder.is_dir()


def test_a_link_planted_as_the_folder_is_removed_not_followed(tmp_path: Path, cache: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("theirs")
    (cache / "browser-runs").mkdir(parents=True)
    (cache / "browser-runs" / "0").symlink_to(victim, target_is_directory=True)
    with place.run_place(tmp_path / "run") as got:
        assert not got.folder.is_symlink() and got.folder.is_dir()
    assert (victim / "keep.txt").read_text() == "theirs"
