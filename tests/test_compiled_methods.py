"""The dataclass methods compiled once and kept (runner/core/compiled.py): the same classes as without
the cache, a second process compiles none of them, and a cache that is broken, missing or not to be
written changes nothing but the time."""

from __future__ import annotations

import dataclasses
import json
import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import child_env

from runner.core import compiled


def _make_classes() -> tuple[type, type]:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        label: str = "origin"
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass(order=True)
    class Box:
        size: float
        items: list[int] = dataclasses.field(default_factory=list)

    return Point, Box


def _behaviour(point_cls: Any, box_cls: Any) -> dict[str, Any]:
    point = point_cls(1, tags=("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2
    box = box_cls(2.5)
    box.items.append(1)
    return {
        "repr": repr(point),
        "eq": point == point_cls(1, tags=("a",)) and point != point_cls(2),
        "hash": hash(point) == hash(point_cls(1, tags=("a",))),
        "order": box_cls(1.0) < box,
        "box": repr(box),
        "fresh list": box_cls(1.0).items,
        # Compiled in the dataclasses module's context: this module's `from __future__ import
        # annotations` must not turn the generated __init__'s annotations into strings.
        "annotations": {k: repr(v) for k, v in point_cls.__init__.__annotations__.items()},
    }


def _with(monkeypatch: pytest.MonkeyPatch, cache: compiled.CompiledTexts) -> None:
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)


def test_classes_made_through_the_cache_behave_as_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _behaviour(*_make_classes())
    first = compiled.CompiledTexts(tmp_path / "methods.marshal")
    _with(monkeypatch, first)
    assert _behaviour(*_make_classes()) == plain
    assert first.new and len(first.codes) >= 6
    first.save()

    again = compiled.CompiledTexts(tmp_path / "methods.marshal")  # the next process
    _with(monkeypatch, again)
    assert _behaviour(*_make_classes()) == plain
    assert not again.new and again.used  # every method came from the file: nothing compiled


def test_typings_forward_references_come_from_the_cache_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typing

    expected = typing.get_type_hints(_Annotated, localns={"Point": int})
    cache = compiled.CompiledTexts(tmp_path / "methods.marshal")
    monkeypatch.setattr(typing, "compile", cache.compile, raising=False)
    assert typing.get_type_hints(_Annotated, localns={"Point": int}) == expected
    assert "eval\0dict[str, Point] | None" in cache.used
    with pytest.raises(SyntaxError):  # a bad annotation is still told as typing tells it
        typing.ForwardRef("list[")


class _Annotated:
    table: dict[str, Point] | None  # noqa: F821  # a string (this module's future import), Point given


@pytest.mark.parametrize(
    "content", [b"", b"not marshal at all", marshal.dumps([1, 2]), marshal.dumps({1: b"x"})]
)
def test_a_broken_cache_is_an_empty_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path = tmp_path / "methods.marshal"
    path.write_bytes(content)
    cache = compiled.CompiledTexts(path)
    assert cache.codes == {}
    _with(monkeypatch, cache)
    assert _behaviour(*_make_classes())["eq"]


def test_a_cached_code_that_does_not_load_is_compiled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = compiled.CompiledTexts(tmp_path / "methods.marshal")
    _with(monkeypatch, cache)
    _make_classes()
    cache.codes = dict.fromkeys(cache.codes, b"\x00garbage")
    cache.new = False
    assert _behaviour(*_make_classes())["eq"] and cache.new


def test_an_entry_that_is_not_code_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = compiled.CompiledTexts(tmp_path / "methods.marshal")
    _with(monkeypatch, cache)
    _make_classes()
    cache.codes = dict.fromkeys(cache.codes, marshal.dumps(7))  # marshal reads it: an int, not code
    cache.new = False
    assert _behaviour(*_make_classes())["eq"] and cache.new


@pytest.mark.parametrize("writable", ["file", "folder"])
def test_a_cache_others_can_write_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writable: str
) -> None:
    """Its code would run as the user: a planted or shared file (a world-writable XDG_CACHE_HOME)
    is ignored, and nothing is written into a folder others can write to."""
    folder = tmp_path / "shared"
    folder.mkdir()
    cache = compiled.CompiledTexts(folder / "methods.marshal")
    _with(monkeypatch, cache)
    _make_classes()
    cache.save()
    assert compiled.CompiledTexts(folder / "methods.marshal").codes  # the user's own: read
    (folder / "methods.marshal" if writable == "file" else folder).chmod(
        0o666 if writable == "file" else 0o777
    )
    assert compiled.CompiledTexts(folder / "methods.marshal").codes == {}
    if writable == "folder":
        (folder / "methods.marshal").unlink()
        cache.new = True
        cache.save()
        assert list(folder.iterdir()) == []


def test_where_the_cache_is(tmp_path: Path) -> None:
    path = compiled.cache_path({"XDG_CACHE_HOME": str(tmp_path)})
    assert path is not None and path.parent == tmp_path / "testsession"
    assert f"-opt{sys.flags.optimize}.marshal" in path.name  # -O compiles differently: a file of its own
    relative = compiled.cache_path({"XDG_CACHE_HOME": "cache"})  # ignored, as the XDG spec says
    assert (
        relative is not None and relative.is_absolute() and relative.parent.parent == Path.home() / ".cache"
    )


def test_nothing_is_written_under_dont_write_bytecode_or_without_a_writable_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = compiled.CompiledTexts(tmp_path / "methods.marshal")
    _with(monkeypatch, cache)
    _make_classes()
    cache.save()
    assert not (tmp_path / "methods.marshal").exists()

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    cache.path = blocked / "methods.marshal"  # its folder is a file: cannot be made
    cache.save()  # no error: the next run compiles again
    assert list(tmp_path.iterdir()) == [blocked]

    cache.path = tmp_path / "methods.marshal"
    cache.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "methods.marshal"]  # no temporary left


def test_the_file_keeps_only_this_runs_texts_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "methods.marshal"
    path.write_bytes(marshal.dumps({f"# old text {i}": b"" for i in range(compiled.MAX_ENTRIES)}))
    cache = compiled.CompiledTexts(path)
    _with(monkeypatch, cache)
    _make_classes()
    cache.save()
    kept = marshal.loads(path.read_bytes())
    assert set(kept) == cache.used and not any(text.startswith("# old") for text in kept)


def test_the_command_fills_the_cache_and_a_second_run_reads_it(tmp_path: Path, web: Any) -> None:
    """`testsession` with a cache folder of its own: the first run writes the file, the second compiles
    nothing new, and both give the same results; `--version` and `--help` write nothing."""
    env = child_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    status_200 = [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}]
    checks = [{"name": "Health", "checkType": "API",
               "request": {"method": "GET", "url": web.url("/json"), "assertions": status_200}}]  # fmt: skip
    (tmp_path / "checks.yml").write_text(json.dumps(checks), encoding="utf-8")
    for light in ("--version", "--help"):  # they make no dataclass: not even `dataclasses` is imported
        done = subprocess.run([sys.executable, "-m", "runner", light], env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0 and not (tmp_path / "cache").exists()
    seen = []
    for run in (1, 2):
        out = tmp_path / f"run{run}"
        done = subprocess.run(
            [sys.executable, "-m", "runner", "run", "--checks", "checks.yml", "--no-rca",
             "--json", str(out / "r.json"), "--junit", "", "--markdown", ""],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (cache,) = (tmp_path / "cache" / "testsession").glob("dataclass-methods.*.marshal")
        data = json.loads((out / "r.json").read_text(encoding="utf-8"))
        seen.append(([(r["name"], r["status"]) for s in data["sessions"] for r in s["results"]],
                     cache.stat().st_mtime_ns, len(marshal.loads(cache.read_bytes()))))  # fmt: skip
    (results, written, texts), (again, unchanged, same) = seen
    assert results == again == [("Health", "PASSED")]
    assert texts > 100 and same == texts and unchanged == written  # nothing new: not written again
