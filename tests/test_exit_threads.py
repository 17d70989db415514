"""A run ends with the interpreter's normal exit (cli/main.py entry: no os._exit), which waits for every
thread that is not a daemon: so when main() returns, no thread the run started may still be one."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from checks_servers import HttpServer, start_http
from helpers import run_here


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = start_http()
    try:
        yield server
    finally:
        server.stop()


def test_a_checks_run_leaves_no_thread_that_would_hold_the_exit(web: HttpServer, tmp_path: Path) -> None:
    checks = [
        {"id": f"c{i}", "name": f"check {i}", "checkType": "API", "request": {"method": "GET", "url": url}}
        for i, url in enumerate([web.url("/json"), "http://127.0.0.1:9/refused"])
    ]  # one passes, one fails (its error group analysed)
    (tmp_path / "checks.json").write_text(json.dumps(checks), encoding="utf-8")
    before = set(threading.enumerate())
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    ran = run_here(["run", "--checks", "checks.json", "--json", "r.json"], env, tmp_path)
    assert ran.returncode == 1, ran.stderr
    results = json.loads((tmp_path / "r.json").read_text())["sessions"][0]["results"]
    assert [r["verdict"] for r in results] == ["passed", "error"]
    holding = [t.name for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    assert holding == []
