"""`build:` / --build-command and --build-url with real processes: the command is started in its own
process group, awaited until its URL answers, and no process of it is left after the run, whatever
the run's end (exit 0, 1, 4, SIGTERM while the build is awaited or while the checks run). A URL that
already answers starts nothing; a build that never answers is exit 6 naming the URL and its last
lines, secrets masked."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from checks_servers import free_port
from conftest import never_ending_world
from helpers import child_env, fast_world, run_here

from runner.core.errors import SpecError
from runner.spec import parse_spec

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
PY = shlex.quote(sys.executable)


def processes_with(marker: str) -> list[str]:
    """Command lines of the live processes holding `marker` (zombies have none): what `pgrep -af`
    shows. This test process is left out."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = (Path("/proc") / name / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{name}: {cmdline}")
    return found


def gone(marker: str, within: float = 3.0) -> list[str]:
    """[] once no process holds `marker` (a process that got SIGKILL may take a moment to go)."""
    deadline = time.monotonic() + within
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find processes left")


def shop_command(port: int, tcp: int, dns: int, broken: bool) -> str:
    flags = " --broken" if broken else ""
    script = shlex.quote(str(EXAMPLES / "local-app" / "shop.py"))
    return f"{PY} {script}{flags} --port {port} --tcp-port {tcp} --dns-port {dns}"


@pytest.mark.parametrize(("broken", "code"), [(False, 0), (True, 1)], ids=["good-build", "broken-build"])
def test_the_build_is_started_awaited_checked_and_stopped(tmp_path: Path, broken: bool, code: int) -> None:
    port, tcp, dns = free_port(), free_port(), free_port()
    env = child_env(SHOP_URL=f"http://127.0.0.1:{port}", SHOP_TCP_PORT=str(tcp), SHOP_DNS_PORT=str(dns))
    argv = [
        "run", str(EXAMPLES / "local-checks-spec.yml"),
        "--emulator", "--world", str(EXAMPLES / "local-checks.yml"),
        "--build-command", shop_command(port, tcp, dns, broken),
        "--build-url", f"http://127.0.0.1:{port}/health", "--no-rca", "-v",
    ]  # fmt: skip
    ran = run_here(argv, env, tmp_path)
    assert ran.returncode == code, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    started = next(i for i, line in enumerate(lines) if line.startswith("build: starting `"))
    ready = next(
        i
        for i, line in enumerate(lines)
        if line.startswith(f"build: http://127.0.0.1:{port}/health answered 200")
    )
    first_check = next(i for i, line in enumerate(lines) if "Shop health" in line)
    assert started < ready < first_check  # started, then awaited, then checked
    assert any(line.startswith("[build] shop (") for line in lines[started:ready])  # its output, prefixed
    assert "build: stopped `" in ran.stderr  # -v: said after the verdict
    assert gone(f"--port {port} ") == []


def test_a_build_that_never_answers_is_exit_6_naming_the_url_and_its_last_lines(tmp_path: Path) -> None:
    port, secret = free_port(), "shop-token-4f9a1c"
    command = "echo booting the shop; echo token is $SHOP_TOKEN; sleep 31.517"
    env = child_env(SHOP_TOKEN=secret)
    argv = [
        "run", "--location", "eu-west-1", "--emulator", "--secret-env", "SHOP_TOKEN",
        "--build-command", command,
        "--build-url", f"http://127.0.0.1:{port}/health", "--build-timeout", "1.5",
    ]  # fmt: skip
    started = time.monotonic()
    ran = run_here(argv, env, tmp_path)
    assert ran.returncode == 6, ran.stdout + ran.stderr
    assert time.monotonic() - started < 10
    assert ran.stderr.strip().splitlines()[-1] == (
        f"testsession: error: build: http://127.0.0.1:{port}/health did not answer within 1.5 s "
        "(connection refused) (the command is still running; it is stopped now); its last 2 lines of "
        "output: booting the shop | token is ***"
    )
    assert "[build] booting the shop" in ran.stdout
    results = (tmp_path / "testsession-reports" / "results.json").read_text()
    assert json.loads(results)["exitCode"] == 6 and f"127.0.0.1:{port}/health" in results
    for text in (ran.stdout, ran.stderr, results):
        assert secret not in text
    assert gone("31.517") == []


def test_a_build_command_that_fails_ends_the_wait_at_once(tmp_path: Path) -> None:
    port = free_port()
    command = (
        "echo key=${TESTSESSION_API_KEY:-unset} token=${GITHUB_TOKEN:-unset}; "
        "echo 'Error: listen EADDRINUSE' >&2; exit 3"
    )
    argv = ["run", "--location", "eu-west-1", "--emulator", "--build-command", command,
            "--build-url", f"http://127.0.0.1:{port}/", "--build-timeout", "30"]  # fmt: skip
    env = child_env(TESTSESSION_API_KEY="tsk_not_for_the_build_1234", GITHUB_TOKEN="ghs_not_for_the_build")
    started = time.monotonic()
    ran = run_here(argv, env, tmp_path)
    assert ran.returncode == 6, ran.stdout + ran.stderr
    assert time.monotonic() - started < 10  # not the 30 s of the timeout
    assert ran.stderr.strip().splitlines()[-1] == (
        f"testsession: error: build: `{command}` exited with code 3 before http://127.0.0.1:{port}/ "
        "answered; its last 2 lines of output: key=unset token=unset | Error: listen EADDRINUSE"
    )  # testsession's own credentials are not the build's


@pytest.fixture
def up() -> Iterator[int]:
    """A build already up: an HTTP server answering 200 on a free port."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_that_already_answers_starts_nothing(tmp_path: Path, up: int) -> None:
    world = str(fast_world(tmp_path))
    argv = ["run", "--location", "eu-west-1", "--emulator", "--world", world, "--tag", "no-such-tag",
            "--build-command", "touch started.txt", "--build-url", f"http://127.0.0.1:{up}/"]  # fmt: skip
    ran = run_here(argv, child_env(), tmp_path)
    assert ran.returncode == 5, ran.stdout + ran.stderr  # the run went on: no check matched the tag
    assert ran.stdout.splitlines()[0] == (
        f"build: http://127.0.0.1:{up}/ already answers (200): `touch started.txt` not started"
    )
    assert not (tmp_path / "started.txt").exists()


def test_the_spec_key_loads_and_flags_override_it(tmp_path: Path) -> None:
    text = "runLocation: local\nbuild:\n  command: npm start\n  url: http://127.0.0.1:3000/health\n"
    spec = parse_spec(text, "t.yml", {})
    assert spec.build is not None
    assert (spec.build.command, spec.build.url, spec.build.timeoutSeconds) == (
        "npm start",
        "http://127.0.0.1:3000/health",
        60,
    )
    bad = "runLocation: local\nbuild:\n  command: npm start\n  url: localhost:3000\n  timeout: 5\n"
    with pytest.raises(SpecError) as caught:
        parse_spec(bad, "t.yml", {})
    problems = caught.value.problems
    assert len(problems) == 2 and problems[0].startswith("t.yml:4: build.url: ")
    assert problems[1].startswith("t.yml:5: build.timeout: unknown field 'timeout'")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--build-command", "npm start"],
            "--build-command needs --build-url URL (or build.url in the spec)",
        ),
        (["--build-url", "http://127.0.0.1:1/", "--detach"], "--detach with a build"),
        (["--build-url", "http://127.0.0.1:1/", "--build-timeout", "0"], "--build-timeout: must be a number"),
    ],
)
def test_build_flags_that_cannot_work_are_usage_errors(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    ran = run_here(["run", "--location", "eu-west-1", "--emulator", *flags], child_env(), tmp_path)
    assert ran.returncode == 2
    assert message in ran.stderr


PHASE_LIMIT = 30.0  # a cold interpreter on a loaded machine included
EXIT_LIMIT = 10.0  # the signal to the exit: the build's 5 s grace plus slack


def run_process(tmp_path: Path, argv: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=child_env(), cwd=tmp_path,
    )  # fmt: skip
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def wait_for(proc: subprocess.Popen[str], lines: list[str], text: str) -> None:
    deadline = time.monotonic() + PHASE_LIMIT
    while not any(text in line for line in lines):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"no line with {text!r}: {lines}")
        time.sleep(0.05)


@pytest.mark.parametrize("phase", ["awaiting-the-build", "running-the-checks"])
def test_sigterm_leaves_no_process_of_the_build(tmp_path: Path, phase: str) -> None:
    port = free_port()
    world = tmp_path / "world.yml"
    world.write_text(yaml.safe_dump(never_ending_world()), encoding="utf-8")
    if phase == "awaiting-the-build":  # never answers; the sleep is a grandchild in the group
        command, marker, reached = (
            "echo waiting for the db; sleep 37.391",
            "37.391",
            "[build] waiting for the db",
        )
    else:  # answers at once; the checks never end
        command, marker, reached = (
            f"{PY} -m http.server {port} --bind 127.0.0.1",
            f"http.server {port}",
            "Test session",
        )
    argv = ["run", "--location", "eu-west-1", "--emulator", "--world", str(world), "--build-command", command,
            "--build-url", f"http://127.0.0.1:{port}/", "--build-timeout", "60"]  # fmt: skip
    proc, lines = run_process(tmp_path, argv)
    try:
        wait_for(proc, lines, reached)
        assert processes_with(marker)  # the build is running
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(EXIT_LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()  # only the run this test started
            proc.wait(5)
    assert code == 143, lines
    assert gone(marker) == []


def test_a_build_that_goes_down_during_the_run_is_named_with_its_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.job.build import Build

    port = free_port()
    serve_once = (  # answers the readiness probe, then ends
        "import http.server, sys; "
        f"s = http.server.HTTPServer(('127.0.0.1', {port}), http.server.SimpleHTTPRequestHandler); "
        "s.handle_request(); print('out of memory', flush=True); sys.exit(7)"
    )
    # The run's end waits (up to 10 s) for the build to end first: the claim is what the run says of a
    # build gone before it, not the race between the two. A world of 2 real seconds lost that race to a
    # starved child under load (the build's end noticed only after the run's).
    stop = Build.stop

    def stop_once_the_build_ended(self: Build) -> None:
        if self.process is not None:
            self.process.wait(timeout=10)
        stop(self)

    monkeypatch.setattr(Build, "stop", stop_once_the_build_ended)
    world = str(fast_world(tmp_path))
    command = f"{PY} -c {shlex.quote(serve_once)}"
    argv = ["run", "--location", "eu-west-1", "--emulator", "--world", world, "--tag", "smoke", "--no-rca",
            "--build-command", command, "--build-url", f"http://127.0.0.1:{port}/"]  # fmt: skip
    ran = run_here(argv, child_env(), tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [line] = [line for line in ran.stdout.splitlines() if "before the run did" in line]
    assert "ended with code 7 before the run did; its last 2 lines of output: " in line
    assert line.endswith("| out of memory")


def test_the_output_shown_is_bounded_and_the_error_quotes_the_last_lines() -> None:
    from runner.core.errors import BuildNotReady
    from runner.core.redact import Redactor
    from runner.job.build import MAX_SHOWN, TAIL_LINES, Build, BuildPlan

    said: list[str] = []
    long_line = "x" * 1000
    command = f"echo {long_line}; seq 1 500; sleep 33.719"
    build = Build(
        BuildPlan(url=f"http://127.0.0.1:{free_port()}/", command=command, timeout_seconds=1.5),
        said.append,
        Redactor(),
    )
    try:
        with pytest.raises(BuildNotReady) as caught:
            build.start()
    finally:
        build.stop()
    shown = [line for line in said if line.startswith("[build] ")]
    assert len(shown) == MAX_SHOWN and len(shown[0]) <= 310  # a long line is cut
    assert said[-2] == f"build: {501 - MAX_SHOWN} more lines of its output while awaited not shown"
    assert str(caught.value).endswith(" | ".join(str(n) for n in range(501 - TAIL_LINES, 501)))
    assert gone("33.719") == []


def test_what_the_build_printed_before_it_answered_is_shown_before_the_line_that_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a loaded runner the URL can answer before the reader thread has queued the build's first
    line (a clean-clone CI run lost the shop's banner so): here the reader takes 0.6 s for a line,
    longer than a probe's interval."""
    import runner.job.build as build_module
    from runner.core.redact import Redactor

    slow = build_module.for_line

    def for_line(text: str, limit: int) -> str:
        time.sleep(0.6)
        return slow(text, limit)

    monkeypatch.setattr(build_module, "for_line", for_line)
    monkeypatch.setattr(build_module, "CATCH_UP_SECONDS", 3.0, raising=False)
    port = free_port()
    serve = (
        "import http.server as h; "
        f"h.ThreadingHTTPServer(('127.0.0.1', {port}), h.SimpleHTTPRequestHandler).serve_forever()"
    )
    command = f"echo banner of the build; exec {shlex.quote(sys.executable)} -c {shlex.quote(serve)}"
    said: list[str] = []
    build = build_module.Build(
        build_module.BuildPlan(url=f"http://127.0.0.1:{port}/", command=command, timeout_seconds=20),
        said.append,
        Redactor(),
    )
    try:
        build.start()
    finally:
        build.stop()
    answered = next(i for i, line in enumerate(said) if " answered 200 " in line)
    assert "[build] banner of the build" in said[:answered], said
