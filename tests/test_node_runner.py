"""runner/checks/node.py with a real Node: a clean environment, bounds, and nothing of ours left behind."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from runner.checks.node import NodeMissing, child_environment, find_node, run_child

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="LOUD SKIP: Node.js is not installed (apt-get install nodejs npm)"
)

# Starts a grandchild in a session of its own (as Playwright starts a browser: detached), prints its
# pid, then waits forever: only the token can find that grandchild.
SPAWNER = """
const { spawn } = require('child_process');
const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
console.log(c.pid);
setInterval(() => {}, 1000);
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_finds_node_18_or_newer_and_says_what_to_install_when_there_is_none(tmp_path: Path) -> None:
    assert find_node().version >= (18, 0, 0)
    with pytest.raises(NodeMissing, match="apt-get install nodejs"):
        find_node(path=str(tmp_path))


def test_the_child_sees_only_what_node_needs_and_the_checks_variables(tmp_path: Path) -> None:
    base = {"PATH": os.environ["PATH"], "HOME": "/root", "LC_ALL": "C.UTF-8", "https_proxy": "http://p:3128",
            "GITHUB_TOKEN": "ghp_not_for_scripts", "CI_JOB_TOKEN": "glcbt-x"}  # fmt: skip
    env = child_environment(
        {"SHOP_URL": "http://x", "PATH": "/evil", "NODE_OPTIONS": "--require /evil"}, base=base
    )
    result = run_child(["node", "-e", "console.log(JSON.stringify(process.env))"], cwd=tmp_path, env=env,
                       deadline=time.monotonic() + 20)  # fmt: skip
    import json

    seen = json.loads(result.stdout)
    assert (
        seen["SHOP_URL"] == "http://x"
        and seen["https_proxy"] == "http://p:3128"
        and seen["LC_ALL"] == "C.UTF-8"
    )
    assert seen["PATH"] == os.environ["PATH"] and "NODE_OPTIONS" not in seen
    assert "GITHUB_TOKEN" not in seen and "CI_JOB_TOKEN" not in seen
    assert result.returncode == 0 and not result.timed_out


@pytest.mark.parametrize("how", ["deadline", "stop"])
def test_deadline_and_stop_end_the_child_and_a_detached_grandchild(tmp_path: Path, how: str) -> None:
    stop = threading.Event()
    deadline = time.monotonic() + (1.5 if how == "deadline" else 60)
    if how == "stop":
        threading.Timer(1.5, stop.set).start()
    started = time.monotonic()
    result = run_child(["node", "-e", SPAWNER], cwd=tmp_path, env=child_environment(), deadline=deadline,
                       stop=stop, grace=1.0)  # fmt: skip
    assert time.monotonic() - started < 15  # 1.5 s and the 1 s grace, not the spawner's forever
    assert (result.timed_out, result.cancelled) == ((True, False) if how == "deadline" else (False, True))
    assert result.returncode is None
    grandchild = int(result.stdout.split()[0])
    assert not _alive(grandchild)


def test_a_detached_grandchild_is_ended_when_the_child_exits_by_itself(tmp_path: Path) -> None:
    script = SPAWNER.rsplit("setInterval", 1)[0] + "setTimeout(() => process.exit(3), 300);"
    result = run_child(
        ["node", "-e", script], cwd=tmp_path, env=child_environment(), deadline=time.monotonic() + 30
    )
    assert result.returncode == 3
    assert not _alive(int(result.stdout.split()[0]))
