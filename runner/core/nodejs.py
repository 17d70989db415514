"""Node.js as a bounded child: found on PATH, run in its own process group with a clean environment.

A small interface on purpose (`find_node`, `run_node`): the browser runner's Node helper (issue 29)
can take its place without touching the callers. Rules (docs/checkly-project.md):
- Only what Node, npm and a browser need from this process's environment (PATH, HOME, locale, proxy
  settings, temp dirs) plus the variables the caller names: a project's script must not read the CI
  job's tokens.
- Every run has a deadline; past it, or when `stop` is set, the whole process group is killed
  (SIGTERM, then SIGKILL after a grace), so no Node process or child of it outlives the run.
- Output is read up to a cap; more is cut, never buffered without bound.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# What a Node child keeps of this process's environment (names, and prefixes ending with `_`).
KEPT_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_", "TZ", "TMPDIR", "TEMP", "TMP", "http_proxy", "https_proxy",
                    "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE",
                    "USER")  # fmt: skip
OUTPUT_CAP_BYTES = 64 * 1024 * 1024
KILL_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class NodeVersion:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def at_least(self, major: int, minor: int = 0) -> bool:
        return (self.major, self.minor) >= (major, minor)


@dataclass(frozen=True)
class Node:
    executable: str
    version: NodeVersion


@dataclass(frozen=True)
class NodeRun:
    returncode: int | None  # None: killed at its deadline or stop
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stopped: bool = False
    truncated: bool = False


def parse_version(text: str) -> NodeVersion | None:
    """`v20.20.2` -> NodeVersion(20, 20, 2); None when it is not one."""
    parts = text.strip().lstrip("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return NodeVersion(int(parts[0]), int(parts[1]), int(parts[2]))


def find_node(env: Mapping[str, str] | None = None) -> Node | None:
    """The `node` on PATH and its version; None when there is none or it does not answer."""
    environ = os.environ if env is None else env
    executable = shutil.which("node", path=environ.get("PATH"))
    if executable is None:
        return None
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, timeout=10, check=False,
                              env=clean_environment({}), stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = parse_version(done.stdout.decode("ascii", "replace"))
    return Node(executable, version) if version else None


def clean_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment reduced to KEPT_ENVIRONMENT, then `extra` on top."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if any(key == name or (name.endswith("_") and key.startswith(name)) for name in KEPT_ENVIRONMENT)
    }
    kept.update(extra)
    return kept


def run_node(
    args: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes = b"",
    stop: threading.Event | None = None,
    output_cap: int = OUTPUT_CAP_BYTES,
) -> NodeRun:
    """Runs `args` (a node executable first, or npx) in its own process group with `env` only (build
    it with clean_environment), up to `timeout` seconds or until `stop`; then the group is killed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(  # noqa: S603 - the arguments are ours, never a shell
            list(args), cwd=str(cwd), env=dict(env), stdin=subprocess.PIPE, stdout=out, stderr=err,
            start_new_session=True,
        )  # fmt: skip
        try:
            if proc.stdin is not None:
                try:
                    proc.stdin.write(stdin)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            deadline = time.monotonic() + timeout
            timed_out = stopped = False
            while proc.poll() is None:
                if stop is not None and stop.is_set():
                    stopped = True
                    break
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                if _over_cap(out, err, output_cap):
                    break
                time.sleep(0.02)
        finally:
            _kill_group(proc)
        truncated = _over_cap(out, err, output_cap)
        code = None if (timed_out or stopped) else proc.returncode
        return NodeRun(code, _read(out, output_cap), _read(err, output_cap), timed_out, stopped, truncated)


def _over_cap(out: object, err: object, cap: int) -> bool:
    return sum(os.fstat(f.fileno()).st_size for f in (out, err)) > cap  # type: ignore[attr-defined]


def _read(handle: object, cap: int) -> bytes:
    handle.seek(0)  # type: ignore[attr-defined]
    data: bytes = handle.read(cap)  # type: ignore[attr-defined]
    return data


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Ends the child's whole process group (its own children too), politely first."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # The leader is gone; its children may not be: end the group for good.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue
