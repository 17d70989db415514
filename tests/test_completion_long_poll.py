"""The completion long poll of a session whose checks run for real: every finished attempt wakes it,
and it must not build the whole session (every result) on each wake. Found by bench/checks_vs_newman.py:
with 1,000 checks the renders took a third of the run's CPU and held the lock the workers report under."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import requests
from checks_servers import HttpServer
from conftest import auth_headers

from runner.emulator import Emulator

KEY = "tsk_long_poll_0123456789"
ACCOUNT = "acc-long-poll"
CHECKS = 60


def test_the_long_poll_builds_the_session_once_it_can_be_final(
    world_factory: Callable[..., Emulator], web: HttpServer
) -> None:
    checks = [
        {
            "id": f"c{i}",
            "name": f"check {i}",
            "tags": ["poll"],
            "request": {
                "method": "GET",
                "url": web.url("/slow?ms=20"),
                "assertions": [{"source": "STATUS_CODE", "comparison": "EQUALS", "target": "200"}],
            },
        }
        for i in range(CHECKS)
    ]
    world: dict[str, Any] = {
        "settings": {"executor": {"concurrency": 4}},
        "accounts": [{"id": ACCOUNT, "keys": [{"key": KEY}], "checks": checks}],
    }
    emu = world_factory(world)
    backend = emu.backend
    renders = 0
    lock = threading.Lock()
    render = backend.get_session

    def counted(account_id: str, session_id: str) -> Any:
        nonlocal renders
        with lock:
            renders += 1
        return render(account_id, session_id)

    backend.get_session = counted  # type: ignore[method-assign]
    headers = auth_headers(emu, KEY, ACCOUNT)
    trigger = requests.post(
        f"{emu.url}/v1/test-sessions/trigger", json={"name": "poll", "runLocation": "eu-west-1"},
        headers=headers, timeout=15,
    )  # fmt: skip
    assert trigger.status_code == 201, trigger.text
    session_id = trigger.json()["testSessionId"]
    with lock:
        renders = 0  # the trigger's own rendering is not the long poll's
    done = requests.get(
        f"{emu.url}/v1/test-sessions/{session_id}/completion", params={"maxWaitSeconds": 30},
        headers=headers, timeout=40,
    )  # fmt: skip
    assert done.status_code == 200, done.text
    session = done.json()
    finals = [r for r in session["results"] if r["resultType"] == "FINAL"]
    assert session["status"] == "PASSED" and len(finals) == CHECKS
    assert all(r["status"] == "PASSED" for r in finals)
    # 60 attempts, ~15 batches of 4 finishing 20 ms apart, each batch a wake: one rendering, the last.
    assert renders <= 2, f"the session was built {renders} times during one long poll"
