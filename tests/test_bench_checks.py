"""A smoke test of the real-checks benchmark's harness (bench/checks_vs_newman.py), with 5 checks.

The benchmark itself is not part of the suite; this shows that what it measures is real: the world it
writes loads, `testsession run --emulator --world` runs every check against the benchmark's server
(which counts what it answered, by client), and the reports say they passed. newman is left out (it
needs npm); its collection is checked for the shape newman reads.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def harness() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import checks_vs_newman
        import common

        yield checks_vs_newman
    finally:
        common.close_spawner()
        sys.path.remove(str(BENCH))


def test_five_checks_run_for_real_against_the_bench_server(harness: ModuleType, tmp_path: Path) -> None:
    server = harness.Server()
    try:
        (tmp_path / "spec.yml").write_text(harness.spec_text(), encoding="utf-8")
        (tmp_path / "world-5.yml").write_text(harness.world_text(5, server.url), encoding="utf-8")
        run = harness.run_ours(tmp_path, 5, server)  # raises unless 5 x 200 answered and 5 passed
    finally:
        server.close()
    assert run.server["count"] == 5
    (agent,) = run.server["agents"]
    assert agent.startswith("testsession-runner/")
    assert run.wall > 0 and run.maxrss_kib > 0 and run.cpu > 0
    assert run.server["server_us"]["median"] > 0
    assert "<testsuite" in (tmp_path / "ours" / "junit.xml").read_text(encoding="utf-8")


def test_the_newman_collection_holds_the_same_requests(harness: ModuleType) -> None:
    base = "http://127.0.0.1:1"
    collection = harness.collection(5, base)
    assert collection["info"]["schema"].endswith("/v2.1.0/collection.json")
    assert collection["variable"] == [{"key": "API_URL", "value": base}]
    urls = [item["request"]["url"] for item in collection["item"]]
    assert urls == ["{{API_URL}}" + harness.path_of(i) for i in range(5)]
    world = harness.world_text(5, base)
    assert all(f'url: "{{{{API_URL}}}}{harness.path_of(i)}"' in world for i in range(5))
    for item in collection["item"]:
        (event,) = item["event"]
        assert event["listen"] == "test" and "to.have.status(200)" in event["script"]["exec"][0]


def test_the_peak_memory_is_the_process_trees_sum(harness: ModuleType) -> None:
    """A run with a worker process holds both at once: the bench's peak is their sum, not the largest
    process's (ru_maxrss), which would hide the worker."""
    import common

    # The child holds 40 MiB; the process it starts holds 60 MiB at the same time, for 0.5 s.
    grandchild = "b = bytearray(60 << 20); import time; time.sleep(0.5)"
    script = (
        "import subprocess, sys; a = bytearray(40 << 20); "
        f"subprocess.run([sys.executable, '-c', {grandchild!r}], check=True)"
    )
    child = common.run_child([sys.executable, "-c", script])
    assert child.code == 0
    largest = child.maxrss_kib / 1024
    tree = child.tree_kib / 1024
    assert 60 <= largest < 90  # the grandchild's peak alone
    assert tree >= 100 and tree > largest + 35  # both at once
    assert (
        len(child.tree_parts_kib) == 2
        and sum(rss for _pid, rss, _shared in child.tree_parts_kib) == child.tree_kib
    )
