"""Node.js children of a check run: found, given a clean environment, bounded, and ended with everything
they started.

Used by BROWSER and MULTI_STEP checks (Playwright) and by API checks' setup and teardown scripts. The
whole API:

    tools = find_node()                       # NodeTools(node, npm, npx, version); NodeMissing if none >= 18
    env = child_environment(variables)        # a fresh environment: what Node needs + the check's variables
    result = run_child([str(tools.node), "script.js"], cwd=folder, env=env,
                       deadline=time.monotonic() + 30, stop=stop_event)
    result.returncode, result.stdout, result.stderr, result.timed_out, result.cancelled

Rules (docs/checks.md, "Node children"):
- The environment is built from scratch: PATH, HOME, the locale, the time zone, the temp folder, the
  proxy settings and the CA settings Node and npm read are taken from ours (KEPT); nothing else of the
  runner's environment (a CI job's tokens) reaches the script. The check's variables come on top
  (`variables`, already merged strongest first by the caller) as `process.env`, except that they do not
  replace PATH, HOME, NODE_OPTIONS or NODE_PATH (which would change what runs, not what is checked).
- A child runs in its own process group and session (start_new_session). It carries a token
  (TESTSESSION_CHILD_TOKEN) that everything it starts inherits: a browser that Playwright starts
  detached (its own session) still carries it. When the child ends, is cancelled (`stop`), passes its
  deadline or the runner is told to stop, its group is sent SIGTERM, then after `grace` seconds SIGKILL,
  and so is every process that still carries the token (found in /proc): nothing we started outlives
  the call, whichever way it ends.
- Output is kept in temporary files and read back bounded (`output_cap` bytes of each, the end kept).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MIN_NODE = (18, 0, 0)
TOKEN_VARIABLE = "TESTSESSION_CHILD_TOKEN"
DEFAULT_GRACE_SECONDS = 2.0
DEFAULT_OUTPUT_CAP = 1 << 20
POLL_SECONDS = 0.05

# Taken from our environment: what Node, npm and a browser need to run, find a proxy and trust a CA.
KEPT = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SHELL",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "FONTCONFIG_PATH",
    "npm_config_registry", "NPM_CONFIG_REGISTRY", "npm_config_cache", "NPM_CONFIG_CACHE",
    "npm_config_userconfig", "NPM_CONFIG_USERCONFIG",
})  # fmt: skip
KEPT_PREFIXES = ("LC_",)
# A check variable of one of these names is not passed: it would change what runs.
PROTECTED = frozenset({"PATH", "HOME", "NODE_OPTIONS", "NODE_PATH", TOKEN_VARIABLE})


class NodeMissing(Exception):
    """No usable Node.js: the message says what was found and what to install."""


@dataclass(frozen=True)
class NodeTools:
    node: Path
    npm: Path | None
    npx: Path | None
    version: tuple[int, int, int]


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None when it was ended by us
    stdout: str  # the last output_cap bytes, decoded leniently
    stderr: str
    timed_out: bool  # ended at the deadline
    cancelled: bool  # ended by `stop`
    duration_s: float


def find_node(path: str | None = None) -> NodeTools:
    """Node >= 18 and its npm/npx on `path` (default: our PATH); NodeMissing says what to install."""
    node = shutil.which("node", path=path) or shutil.which("nodejs", path=path)
    if node is None:
        raise NodeMissing(
            "Node.js 18 or newer is needed and none is on PATH: install it (apt-get install nodejs npm)"
        )
    version = _version(node)
    if version is None or version < MIN_NODE:
        shown = ".".join(map(str, version)) if version else "an unknown version"
        raise NodeMissing(f"Node.js 18 or newer is needed; {node} is {shown}: install a newer one")
    npm, npx = shutil.which("npm", path=path), shutil.which("npx", path=path)
    return NodeTools(Path(node), Path(npm) if npm else None, Path(npx) if npx else None, version)


_VERSIONS: dict[str, tuple[int, int, int] | None] = {}


def _version(node: str) -> tuple[int, int, int] | None:
    if node not in _VERSIONS:
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=False)
            match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.stdout.strip())
            _VERSIONS[node] = (int(match[1]), int(match[2]), int(match[3])) if match else None
        except (OSError, subprocess.TimeoutExpired):
            _VERSIONS[node] = None
    return _VERSIONS[node]


def child_environment(
    variables: Mapping[str, str] = {},
    *,
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] = {},
) -> dict[str, str]:
    """A fresh environment: KEPT of `base` (default os.environ), then `variables`, then `extra` (ours)."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("HOME", tempfile.gettempdir())
    env.setdefault("LANG", "C.UTF-8")
    for key, value in variables.items():
        if key not in PROTECTED and key and "=" not in key and "\0" not in key + value:
            env[key] = value
    env.update(extra)
    return env


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    deadline: float,
    stop: threading.Event | None = None,
    grace: float = DEFAULT_GRACE_SECONDS,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> ChildResult:
    """Runs `argv` until it exits, `deadline` (monotonic) passes or `stop` is set; nothing of it is left.

    Raises OSError only when the program cannot be started at all."""
    token = uuid.uuid4().hex
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env={**env, TOKEN_VARIABLE: token}, stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True,
        )  # fmt: skip
        timed_out = cancelled = False
        try:
            while proc.poll() is None:
                if stop is not None and stop.is_set():
                    cancelled = True
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=min(POLL_SECONDS, left))
        finally:
            # Every exit (an exception, KeyboardInterrupt) ends the group and what carries the token.
            end_all(proc, token, grace=grace if (timed_out or cancelled or proc.poll() is None) else 0.2)
        code = None if (timed_out or cancelled) else proc.returncode
        return ChildResult(code, _tail(out, output_cap), _tail(err, output_cap), timed_out, cancelled,
                           time.monotonic() - start)  # fmt: skip


def end_all(proc: subprocess.Popen[bytes], token: str, *, grace: float) -> None:
    """SIGTERM to the child's group and to every process carrying `token`, SIGKILL after `grace`."""
    _signal_all(proc.pid, token, signal.SIGTERM)
    until = time.monotonic() + grace
    while time.monotonic() < until:
        if proc.poll() is not None and not _holders(token):
            break
        time.sleep(POLL_SECONDS)
    _signal_all(proc.pid, token, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _signal_all(pgid: int, token: str, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in _holders(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _holders(token: str) -> list[int]:
    """The processes whose environment carries `token` (ours and what they started), zombies left out."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if needle not in f.read():
                    continue
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != b"Z":
            found.append(int(entry.name))
    return found


def _tail(handle: IO[bytes], cap: int) -> str:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - cap))
    return handle.read(cap).decode("utf-8", "replace")
