"""Nothing outlives a run, however it ends (issue 40, docs/reliability.md): a SIGKILLed run's children
(Node, Chromium, the build, a grandchild that called setsid) are ended by its watchdog within seconds,
its TMPDIR scratch is removed, the next run removes what a killed run left, and in CI a build URL that
already answers (a killed run's build) is exit 2 unless reuse is allowed."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_env import PASSWORD, REPO, a_browser_of, needs_browser, processes_with
from checks_servers import free_port
from conftest import never_ending_world
from helpers import child_env, fast_world, run_here

from runner.core.redact import Redactor
from runner.job.build import Build, BuildPlan, probe

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find processes left")
PY = shlex.quote(sys.executable)
GONE_WITHIN = 5.0  # seconds from the run's end to its last child's


def gone(marker: str, within: float = GONE_WITHIN) -> tuple[float, list[tuple[int, str]]]:
    """(seconds until no live process carries `marker`, what is left after `within`)."""
    start = time.monotonic()
    while (left := processes_with(marker)) and time.monotonic() - start < within:
        time.sleep(0.02)
    return time.monotonic() - start, left


def wait_until(ready: Any, proc: subprocess.Popen[str], what: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not ready():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def files_in(folder: Path) -> list[str]:
    """What is in `folder`, also while a watchdog removes it (a folder gone meanwhile is skipped)."""
    found = []
    for root, dirs, files in os.walk(folder):
        found += [os.path.relpath(os.path.join(root, name), folder) for name in dirs + files]
    return sorted(found)


HARNESS = textwrap.dedent("""
    import sys, time
    from runner.checks.child import run_child
    run_child(["sh", "-c", "setsid sleep 59.1 & sleep 59.2 & touch $TMPDIR/scratch; wait"],
              deadline=time.monotonic() + 60)
""")


def test_sigkill_of_the_run_ends_what_its_child_started_even_after_setsid_and_removes_its_tmpdir(
    tmp_path: Path,
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    marker = f"OUTLIVE_MARKER_{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", HARNESS], env=child_env(TMPDIR=str(tmp), MARK=marker),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:

        def ready() -> bool:
            return [n for _, n in processes_with(marker)].count("sleep") == 2 and any(tmp.rglob("scratch"))

        wait_until(ready, proc, "the child's two sleeps and its scratch file", within=20)
        proc.kill()
        proc.wait(5)
        took, left = gone(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert left == [], left
    assert took < GONE_WITHIN
    deadline = time.monotonic() + GONE_WITHIN
    while files_in(tmp) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert files_in(tmp) == []


def test_a_build_grandchild_that_calls_setsid_is_stopped_with_the_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = f"OUTLIVE_MARKER_{uuid.uuid4().hex}"
    monkeypatch.setenv("OUTLIVE_MARK", marker)  # the build has this process's environment
    port = free_port()
    command = f"setsid sleep 58.3 & exec {PY} -m http.server {port} --bind 127.0.0.1"
    build = Build(BuildPlan(url=f"http://127.0.0.1:{port}/", command=command, timeout_seconds=20),
                  lambda _: None, Redactor(), grace_seconds=2.0)  # fmt: skip
    try:
        build.start()
        assert "sleep" in {n for _, n in processes_with(marker)}  # in a session of its own
    finally:
        build.stop()
    _, left = gone(marker, within=1.0)
    assert left == [], left


@pytest.fixture
def up() -> Iterator[int]:
    """A build already up (as a killed run's build would be): an HTTP server answering 200."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_in_ci_a_build_url_that_already_answers_is_exit_2_unless_reuse_is_allowed(
    tmp_path: Path, up: int
) -> None:
    world = str(fast_world(tmp_path))
    url = f"http://127.0.0.1:{up}/"
    argv = ["run", "--location", "eu-west-1", "--emulator", "--world", world, "--tag", "no-such-tag",
            "--build-command", "touch started.txt", "--build-url", url]  # fmt: skip
    ran = run_here(argv, child_env(CI="true"), tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == (
        f"testsession: error: build: {url} already answers (200) before `touch started.txt` was started, "
        "and reuse is off (the default in CI, CI=true, as Playwright's reuseExistingServer): it may be a "
        "build that a killed run left. Stop what answers there, or allow reuse (build.reuseExisting: "
        "true, --build-reuse; the Action's build-reuse input, GitLab's TESTSESSION_BUILD_REUSE) to check it "
        "as it is"
    )
    assert not (tmp_path / "started.txt").exists()
    assert (tmp_path / "testsession-reports" / "junit.xml").is_file()  # the reports asked for
    allowed = run_here([*argv, "--build-reuse"], child_env(CI="true"), tmp_path)
    assert allowed.returncode == 5, allowed.stdout + allowed.stderr  # went on: no check has the tag
    assert "already answers (200): `touch started.txt` not started" in allowed.stdout
    spec = tmp_path / "spec.yml"
    build = {"command": "touch started.txt", "url": url, "reuseExisting": True}
    spec.write_text(yaml.safe_dump({"runLocation": "eu-west-1", "target": {"matchTags": [["no-such-tag"]]},
                                    "build": build}))  # fmt: skip
    by_spec = run_here(["run", str(spec), "--emulator", "--world", world], child_env(CI="true"), tmp_path)
    assert by_spec.returncode == 5, by_spec.stdout + by_spec.stderr
    outside_ci = run_here(argv, child_env(), tmp_path)
    assert outside_ci.returncode == 5, outside_ci.stdout + outside_ci.stderr
    assert not (tmp_path / "started.txt").exists()


def test_sigkill_of_a_run_stops_its_build_and_frees_its_port(tmp_path: Path) -> None:
    port = free_port()
    world = tmp_path / "world.yml"
    world.write_text(yaml.safe_dump(never_ending_world()), encoding="utf-8")
    marker = f"OUTLIVE_MARKER_{uuid.uuid4().hex}"
    argv = [sys.executable, "-m", "runner", "run", "--location", "eu-west-1", "--emulator",
            "--world", str(world), "--build-command", f"{PY} -m http.server {port} --bind 127.0.0.1",
            "--build-url", f"http://127.0.0.1:{port}/"]  # fmt: skip
    proc = subprocess.Popen(argv, env=child_env(MARK=marker), cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the session runs (its checks never end): the build is up
            if "Test session" in line:
                break
        assert any("http.server" in " ".join(_cmdline(pid)) for pid, _ in processes_with(marker))
        proc.kill()
        proc.wait(5)
        took, left = gone(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert left == [], left
    assert took < GONE_WITHIN
    status, _ = probe(f"http://127.0.0.1:{port}/", 1.0)  # a next run in CI starts its own build
    assert status is None


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def b36(n: int) -> str:
    return (b36(n // 36) if n >= 36 else "") + "0123456789abcdefghijklmnopqrstuvwxyz"[n % 36]


def test_the_next_run_removes_what_a_killed_run_left_and_keeps_a_live_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "tmp"
    browser = tmp_path / "testsession-reports" / "browser"
    pid = b36(os.getpid())
    me = f"{pid}.{b36(int(Path('/proc/self/stat').read_bytes().rsplit(b')', 1)[1].split()[19]))}"
    dead = f"{pid}.1"  # this pid with another start time: a process that no longer runs
    left = [
        tmp / f"tsr-{dead}",
        tmp / f"tsr-{dead}-ab_c12x",
        browser / f".run-{dead}-0123456789ab",
        browser / ".run-0123456789ab",
    ]  # the last: the form of the version before the owner tag
    kept = [tmp / f"tsr-{me}", tmp / f"tsr-{me}-zz9_", browser / f".run-{me}-abcdefabcdef",
            browser / "check-x-1", tmp / "tsr-notours"]  # fmt: skip
    for folder in left + kept:
        (folder / "c1-check").mkdir(parents=True)
        (folder / "c1-check" / "trace.zip").write_bytes(b"x" * 1000)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    ran = run_here(["run", "--location", "eu-west-1", "--emulator", "--world", str(fast_world(tmp_path)),
                    "--tag", "no-such-tag"], child_env(), tmp_path)  # fmt: skip
    assert ran.returncode == 5, ran.stdout + ran.stderr
    assert [f for f in left if f.exists()] == []
    assert [f for f in kept if not f.exists()] == []


# --- a browser check (Node, Playwright's worker, Chromium) ----------------------------------------------

# Skipped, saying why, without Node, Playwright or Chromium; one at a time beside other tests.
BROWSER = needs_browser()


def browser_run(tmp_path: Path, marker: str) -> subprocess.Popen[str]:
    """`testsession run` of the example's browser checks, with the shop as its build (`build:`), the
    marker in the build's environment and in the checks' (a session variable: the browser has it)."""
    data: dict[str, Any] = yaml.safe_load((REPO / "examples" / "local-checks-spec.yml").read_text())
    port = free_port()
    shop = shlex.quote(str(REPO / "examples" / "local-app" / "shop.py"))
    url = f"http://127.0.0.1:{port}"
    data["target"] = {"matchTags": [["browser-local"]]}
    data.pop("retryStrategy", None)
    data["environmentVariables"] = [{"key": "SHOP_URL", "value": url}, {"key": "MARKER", "value": marker}]
    ports = f"--port {port} --tcp-port {free_port()} --dns-port {free_port()}"
    data["build"] = {"command": f"{PY} {shop} {ports} --password {PASSWORD}", "url": url}
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(data))
    (tmp_path / "tmp").mkdir()
    world = REPO / "examples" / "local-checks.yml"
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "run", "spec.yml", "--emulator", "--world", str(world)],
        cwd=tmp_path, env=child_env(SHOP_PASSWORD=PASSWORD, TMPDIR=str(tmp_path / "tmp"), MARK=marker),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def browser_scratch(tmp_path: Path) -> list[str]:
    """What is left in the run's TMPDIR and beside the reports' browser files (`.run-*`)."""
    fragments = tmp_path / "testsession-reports" / "browser"
    return files_in(tmp_path / "tmp") + [p.name for p in fragments.glob(".run-*")]


# SIGKILL (the watchdog ends them); SIGTERM's run ends its own browsers: test_browser_batch.py's
# test_sigterm_during_a_shared_run_ends_it_within_5_s_and_leaves_no_browser.
@pytest.mark.parametrize("sig", [signal.SIGKILL], ids=["SIGKILL"])
@BROWSER[0]
@BROWSER[1]
def test_a_browser_run_ended_by_a_signal_leaves_no_process_and_no_scratch(tmp_path: Path, sig: int) -> None:
    marker = f"OUTLIVE_MARKER_{uuid.uuid4().hex}"
    proc = browser_run(tmp_path, marker)
    try:
        wait_until(lambda: a_browser_of(marker), proc, "a browser", within=120)
        names = {n for _, n in processes_with(marker)}
        assert "node" in names and any("chrom" in n for n in names), names
        proc.send_signal(sig)
        proc.communicate(timeout=30)
        took, left = gone(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert left == [], left
    assert took < GONE_WITHIN
    deadline = time.monotonic() + GONE_WITHIN
    while browser_scratch(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert browser_scratch(tmp_path) == []
    print(f"{signal.Signals(sig).name}: the last process of the run gone {took:.2f} s after the run's end")


def test_a_link_planted_at_the_run_folders_name_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.core import supervise

    victim = tmp_path / "victim"
    victim.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(supervise, "_RUN", None)  # this process's run as if new: its folder not made yet
    (tmp_path / f"tsr-{supervise.owner_tag()}").symlink_to(victim)
    folder = supervise.run_folder()
    assert folder.parent == tmp_path and folder.name.startswith(f"tsr-{supervise.owner_tag()}-")
    assert not folder.is_symlink() and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert list(victim.iterdir()) == []
    shutil.rmtree(folder)
    (tmp_path / folder.name).symlink_to(victim)  # removed during the run and replaced by a link
    again = supervise.run_folder()
    assert again != folder and not again.is_symlink() and list(victim.iterdir()) == []
