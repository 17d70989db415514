"""The build under test, started and waited for before the checks, stopped after: Playwright's
`webServer`, for `build: {command, url, timeoutSeconds}` (spec) and `--build-command/--build-url`.

Decisions (docs/spec.md, "The build"):
- The URL already answers before anything is started: the build is up (an earlier step, a developer's
  terminal); the command is not started and nothing is stopped at the end (Playwright's
  `reuseExistingServer: true`). A second build started on a taken port would only fail to bind.
  Unless the plan says not to reuse (`reuse_existing` False: by default in CI, CI=true, as
  Playwright's `reuseExistingServer: !process.env.CI`): then an answering URL with a command to start
  is BuildPortTaken (exit 2): in CI what answers is most likely a build a killed run left, and
  checking it would judge the wrong build.
- "Answers" is an HTTP status from 200 to 403, as Playwright reads it: 404 and 5xx mean what stands
  behind the URL is not ready. No redirect is followed, no proxy used, no certificate checked: the
  probe only asks whether the build is up; the checks judge the rest.
- The command runs under `sh -c` in a process group of its own (`start_new_session`): at the end
  the whole group gets SIGTERM, then SIGKILL after GRACE_SECONDS, on every way out (gate passed or
  failed, error, signal), so no server it spawned outlives the run; so does every process carrying the
  build's token (BUILD_TOKEN_VARIABLE in its environment): a grandchild that called setsid has left
  the group, not the environment. When the run itself is killed, the run's watchdog
  (core/supervise.py) ends the group and the token's processes.
- A command that ends with code 0 before the URL answers (`docker compose up -d`) is waited for
  still; what it left running is not ours to stop. Any other code ends the wait at once (exit 6).
- Its output is read line by line (each cut at MAX_LINE_BYTES), sanitised and masked: shown with
  `[build] ` while the build is awaited (at most MAX_SHOWN lines), the last TAIL_LINES kept for
  the error of a build that never answers.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import IO
from urllib.parse import urlsplit

from runner.core import supervise
from runner.core.errors import BuildNotReady, BuildPortTaken
from runner.core.redact import Redactor
from runner.core.text import for_line

GRACE_SECONDS = 5.0  # from SIGTERM to SIGKILL of the build's process group
PROBE_SECONDS = 2.0  # one probe of the URL at most
POLL_SECONDS = 0.25  # between probes
PROGRESS_SECONDS = 5.0  # a "still waiting" line this often
MAX_LINE_BYTES = 4096  # one line of the build's output read at most (the rest of it is the next)
LINE_CHARS = 300  # a line shown or kept
MAX_SHOWN = 100  # lines of the build's output shown in the log
TAIL_LINES = 10  # lines kept for the error
PREFIX = "[build] "
CATCH_UP_SECONDS = 0.5  # at most, for the reader to take what the build printed before it answered
BUILD_TOKEN_VARIABLE = "TESTSESSION_BUILD_TOKEN"  # finds what the build started, in a session or not


@dataclass(frozen=True)
class BuildPlan:
    """What to start (None: only wait) and where it answers once it is up."""

    url: str
    command: str | None = None
    timeout_seconds: float = 60.0
    # Variables of this process the command does not get: testsession's own credentials (the API key,
    # the comment's token). The rest of the environment is the build's, secrets it needs included.
    hidden_env: tuple[str, ...] = ()
    # A URL that already answers is taken as the build (no command started). False: an error (exit 2)
    # when there is a command to start; the caller decides (not in CI, or the user's reuseExisting).
    reuse_existing: bool = True


def probe(url: str, timeout: float) -> tuple[int | None, str]:
    """(status, "") when the URL answered; (None, why) when nothing or an error answered."""
    import http.client  # only for a run with a build
    import ssl

    parts = urlsplit(url)
    host = parts.hostname or ""
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        port = parts.port
    except ValueError:
        return None, "bad port"
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"User-Agent": "testsession-build-probe"})
        return connection.getresponse().status, ""
    except ConnectionRefusedError:
        return None, "connection refused"
    except TimeoutError:
        return None, "no answer in time"
    except (OSError, http.client.HTTPException) as exc:
        return None, for_line(f"{type(exc).__name__}: {exc}", 120)
    finally:
        connection.close()


def answered(status: int | None) -> bool:
    return status is not None and 200 <= status < 404


class Build:
    """One build: start() waits until it answers (BuildNotReady otherwise), stop() ends what it
    started. stop() is safe to call at any moment, and more than once."""

    def __init__(
        self,
        plan: BuildPlan,
        say: Callable[[str], None],
        redact: Redactor,
        *,
        detail: Callable[[str], None] | None = None,
        grace_seconds: float = GRACE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan = plan
        self.say = say
        self.detail = detail or say  # the lines after the verdict: the verbose log (-v)
        self.redact = redact
        self.grace_seconds = grace_seconds
        self.clock = clock
        self.process: subprocess.Popen[bytes] | None = None
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._unshown: deque[str] = deque(maxlen=MAX_SHOWN)  # read, not yet printed
        self._read_while_waiting = 0  # lines read before the URL answered (written by the reader)
        self._shown = 0
        self._reader: threading.Thread | None = None
        self._busy = False  # the reader has a line it has not queued yet (written by the reader)
        self._ready = False  # once the URL answered, the build's output goes to the tail only
        self._up_when_ready = False  # the command still ran when the URL answered (not `up -d`)
        self._token = uuid.uuid4().hex  # in the build's environment: BUILD_TOKEN_VARIABLE

    # --- start and wait -----------------------------------------------------------------------

    def start(self) -> None:
        plan = self.plan
        url = for_line(plan.url, 300)
        status, _ = probe(plan.url, PROBE_SECONDS)
        if answered(status):
            if plan.command and not plan.reuse_existing:
                raise BuildPortTaken(
                    f"build: {url} already answers ({status}) before `{self._command()}` was started, "
                    "and reuse is off (the default in CI, CI=true, as Playwright's reuseExistingServer): "
                    "it may be a build that a killed run left. Stop what answers there, or allow reuse "
                    "(build.reuseExisting: true, --build-reuse; the Action's build-reuse input, GitLab's "
                    "TESTSESSION_BUILD_REUSE) to check it as it is"
                )
            skipped = f": `{self._command()}` not started" if plan.command else ""
            self.say(f"build: {url} already answers ({status}){skipped}")
            return
        started = self.clock()
        if plan.command:
            limit = f"{plan.timeout_seconds:g} s"
            self.say(f"build: starting `{self._command()}`; waiting up to {limit} for {url}")
            self._spawn(plan.command)
        else:
            self.say(f"build: waiting up to {plan.timeout_seconds:g} s for {url}")
        deadline = started + plan.timeout_seconds
        next_progress = started + PROGRESS_SECONDS
        while True:
            self._show_output()
            remaining = deadline - self.clock()
            status, why = probe(plan.url, max(0.05, min(PROBE_SECONDS, remaining)))
            now = self.clock()
            if answered(status):
                self._catch_up()
                self._show_output()
                self._ready = True  # its output from here on would mix with the checks' lines
                self._up_when_ready = self.process is not None and self.process.poll() is None
                self.say(f"build: {url} answered {status} after {now - started:.1f} s")
                return
            if status is not None:
                why = f"answered {status}"
            code = self.process.poll() if self.process else None
            if code is not None and code != 0:
                self._finish_reading()
                raise BuildNotReady(
                    f"build: `{self._command()}` exited with code {code} before {url} answered"
                    f"{self._last_lines()}"
                )
            if now >= deadline:
                self._show_output()
                running = code is None and plan.command
                still = " (the command is still running; it is stopped now)" if running else ""
                raise BuildNotReady(
                    f"build: {url} did not answer within {plan.timeout_seconds:g} s ({why}){still}"
                    f"{self._last_lines()}"
                )
            if now >= next_progress:
                waited = f"{now - started:.0f} s of {plan.timeout_seconds:g} s"
                self.say(f"build: waiting for {url}: {waited} ({why})")
                next_progress = now + PROGRESS_SECONDS
            time.sleep(max(0.0, min(POLL_SECONDS, deadline - self.clock())))

    def _command(self) -> str:
        return self.redact(for_line(self.plan.command or "", 200))

    def _spawn(self, command: str) -> None:
        # POSIX: a new session, so the group id is the child's pid and every process it starts
        # shares it. Windows (the Action's windows runners): a new process group, ended with taskkill /T.
        posix = os.name == "posix"
        env = {k: v for k, v in os.environ.items() if k not in self.plan.hidden_env}
        env = supervise.child_env({**env, BUILD_TOKEN_VARIABLE: self._token})  # no TMPDIR: its own
        self.process = subprocess.Popen(  # the user's own build command, a shell line
            command if not posix else ["/bin/sh", "-c", command],
            shell=not posix,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=posix,
            creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            env=env,
        )
        if posix:
            supervise.watch_group(self.process.pid)
        stream = self.process.stdout
        assert stream is not None
        self._reader = threading.Thread(target=self._read, args=(stream,), name="build-output", daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        """On its own thread: lines into the tail and the lines to show (the main thread prints)."""
        with suppress(OSError, ValueError):
            while True:
                raw = stream.readline(MAX_LINE_BYTES)
                self._busy = True
                try:
                    if not raw:
                        return
                    line = self.redact(for_line(raw.decode("utf-8", "replace"), LINE_CHARS))
                    if line:
                        self.tail.append(line)
                        if not self._ready:
                            self._read_while_waiting += 1
                            self._unshown.append(line)
                finally:
                    self._busy = False

    def _catch_up(self) -> None:
        """The URL answered: what the build printed before that is shown before the line that says so.
        On a loaded runner the answer can come before the reader thread's turn, and a line it read
        after `_ready` would go to the tail only. Waits while the pipe holds output not yet read or
        the reader holds a line not yet queued, at most CATCH_UP_SECONDS (POSIX: select on the pipe)."""
        stream = self.process.stdout if self.process is not None else None
        if stream is None or os.name != "posix":
            return
        until = self.clock() + CATCH_UP_SECONDS
        while self.clock() < until:
            if self._reader is None or not self._reader.is_alive():  # it has read to the end
                return
            try:
                unread = bool(select.select([stream.fileno()], [], [], 0)[0])
            except (OSError, ValueError):  # closed meanwhile: the reader has had all of it
                return
            if not unread and not self._busy:
                return
            time.sleep(0.002)

    def _show_output(self) -> None:
        while self._unshown and self._shown < MAX_SHOWN:
            self._shown += 1
            self.say(PREFIX + self._unshown.popleft())

    def _finish_reading(self) -> None:
        """The command has ended: what it printed last is read (bounded) before it is quoted."""
        if self._reader is not None:
            self._reader.join(timeout=1.0)
        self._show_output()

    def _last_lines(self) -> str:
        if not self.plan.command:
            return ""
        if not self.tail:
            return "; the command printed nothing"
        last = "line" if len(self.tail) == 1 else f"{len(self.tail)} lines"
        return f"; its last {last} of output: " + " | ".join(self.tail)

    # --- stop ---------------------------------------------------------------------------------

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if os.name != "posix":
                _stop_windows(process, self.grace_seconds)
                return
            ended = process.poll()
            if ended is not None and self._up_when_ready:  # the build went down while the checks ran
                self._finish_reading()
                self.say(
                    f"build: `{self._command()}` ended with code {ended} before the run did"
                    f"{self._last_lines()}"
                )
            group = process.pid  # the session's (and group's) id: start_new_session
            marker = f"{BUILD_TOKEN_VARIABLE}={self._token}"
            if _signal_group(group, signal.SIGTERM) | _signal_pids(supervise.holders(marker), signal.SIGTERM):
                end = self.clock() + self.grace_seconds
                while self.clock() < end and (_group_alive(process, group) or supervise.holders(marker)):
                    time.sleep(0.05)
        finally:
            # Also when a second signal cut the grace short: nothing of the build outlives the run.
            if os.name == "posix":
                _signal_group(process.pid, signal.SIGKILL)
                _signal_pids(supervise.holders(f"{BUILD_TOKEN_VARIABLE}={self._token}"), signal.SIGKILL)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1.0)
            if os.name == "posix" and process.poll() is not None:
                supervise.unwatch_group(process.pid)
            self._finish_reading()
            hidden = self._read_while_waiting - self._shown
            if hidden > 0:
                self.detail(f"build: {hidden} more lines of its output while awaited not shown")
            self.detail(f"build: stopped `{self._command()}` (its whole process group)")


def _signal_group(group: int, sig: signal.Signals) -> bool:
    """False when no process of the group is left."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # the id was reused by a process not ours: ours are gone
        return False
    return True


def _signal_pids(pids: list[int], sig: signal.Signals) -> bool:
    """False when there was none to signal."""
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return bool(pids)


def _group_alive(process: subprocess.Popen[bytes], group: int) -> bool:
    process.poll()  # reaps the leader: a zombie would still count as a member
    members = _live_members(group)
    if members is not None:
        return members > 0
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _live_members(group: int) -> int | None:
    """Processes of the group that are not zombies, from /proc (None where there is none: macOS).
    A member whose parent died is reparented and reaped by init in its own time (in a container,
    seconds later): a zombie holds nothing, and waiting for it would only delay the run's end."""
    proc = "/proc"
    if not os.path.isdir(proc):
        return None
    count = 0
    with suppress(OSError):
        for name in os.listdir(proc):
            if not name.isdigit():
                continue
            try:
                with open(f"{proc}/{name}/stat", "rb") as handle:
                    stat = handle.read(1024)
            except OSError:
                continue
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so from the last ")".
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(group).encode() and fields[0] != b"Z":
                count += 1
    return count


def _stop_windows(process: subprocess.Popen[bytes], grace: float) -> None:  # pragma: no cover - Windows
    if process.poll() is None:
        with suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["taskkill", "/T", "/F", "/PID", str(process.pid)],
                capture_output=True,
                timeout=grace,
                check=False,
            )


@contextmanager
def running_build(
    plan: BuildPlan | None, say: Callable[[str], None], detail: Callable[[str], None], redact: Redactor
) -> Iterator[None]:
    """The build up for the block's life: started (or found up) on entry, stopped on every way out.
    `say`: the progress lines; `detail`: the lines after the verdict (its stop), for -v."""
    if plan is None:
        yield
        return
    build = Build(plan, say, redact, detail=detail)
    try:
        build.start()
        yield
    finally:
        build.stop()
