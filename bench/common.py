"""What every benchmark shares: child processes timed with their peak memory, medians, table rows."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024

# CI variables the runner reads (metadata, step summaries): a benchmark run inside CI must not
# publish to the real pipeline or take a different path than on a laptop.
CI_PREFIXES = ("GITHUB_", "GITLAB_", "CI_", "CIRCLE", "JENKINS", "BUILDKITE", "BITBUCKET", "SYSTEM_")
CI_NAMES = frozenset({"CI", "TF_BUILD", "BUILD_ID", "BUILD_NUMBER"})


@dataclass
class Row:
    figure: str
    measured: str
    target: str = "-"
    ok: bool | None = None  # None: no target, shown for context
    note: str = ""

    @property
    def verdict(self) -> str:
        return {True: "ok", False: "MISS", None: ""}[self.ok]


@dataclass
class Child:
    wall: float  # seconds from spawn to the reaped exit
    maxrss_kib: int  # the child's peak resident set (Linux: KiB)
    code: int
    stdout: str
    stderr: str
    exited_at: float  # time.monotonic() right after the exit was reaped
    cpu: float = 0.0  # user + system seconds of the child (and the children it waited for)
    # The child and every process under it (a run's worker processes), their VmRSS summed, sampled
    # every 10 ms (spawner.py): the largest sum, KiB; a page two processes share counts in each (an
    # upper bound). maxrss_kib is the largest single process, not the tree.
    tree_kib: int = 0
    tree_parts_kib: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, rss, shared) at it


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


_compiled = False


def compiled_package() -> None:
    """The package's bytecode, written once, as pip writes it when it installs a wheel: a checkout run
    where PYTHONDONTWRITEBYTECODE is set (some CI images and shells set it) would otherwise compile
    every module of the package on every start (a one-check run: ~40% more CPU), which no user's
    install does."""
    global _compiled
    if not _compiled:
        import compileall

        compileall.compile_dir(str(REPO / "runner"), quiet=1)
        _compiled = True


def console_script(name: str = "testsession") -> str:
    """The installed entry point of this interpreter, not a version-manager shim in front of it
    (a pyenv shim is a bash script that costs ~50 ms before Python even starts); the package's
    bytecode is written first (compiled_package)."""
    compiled_package()
    candidate = Path(sysconfig.get_path("scripts")) / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"bench: the {name} command is not installed (pip install -e .)")
    return found


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CI_NAMES and not k.startswith(CI_PREFIXES) and not k.startswith("TESTSESSION_")
    }
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.update(extra or {})
    return env


class Spawner:
    """The small process of spawner.py that starts our children (see there why)."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-S", str(Path(__file__).with_name("spawner.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 120,
    ) -> Child:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request = {"argv": list(argv), "env": env, "cwd": str(cwd) if cwd else None, "timeout": timeout}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = json.loads(self._proc.stdout.readline() or '{"failure": "the spawner is gone"}')
        if "failure" in answer:
            raise RuntimeError(f"bench: could not run {argv[0]}: {answer['failure']}")
        return Child(
            wall=answer["exited"] - answer["started"],
            maxrss_kib=answer["maxrss_kib"],
            code=answer["code"],
            stdout=answer["stdout"],
            stderr=answer["stderr"],
            exited_at=answer["exited"],
            cpu=answer.get("cpu", 0.0),
            tree_kib=answer.get("tree_kib", 0),
            tree_parts_kib=[(pid, rss, shared) for pid, rss, shared in answer.get("tree_parts_kib", [])],
        )

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait(10)


_spawner: Spawner | None = None


def run_child(
    argv: Sequence[str],
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120,
) -> Child:
    """Runs argv to its end: wall time, peak memory of this child (the largest single process, and its
    tree's sampled sum: Child.tree_kib), output."""
    global _spawner
    if _spawner is None:
        _spawner = Spawner()
    return _spawner.run(argv, env, cwd, timeout)


def close_spawner() -> None:
    global _spawner
    if _spawner is not None:
        _spawner.close()
        _spawner = None


def python() -> str:
    return sys.executable


class RequestTimes:
    """The moment (time.monotonic()) and route of every /v1 request an in-process emulator answers.

    Wraps the backend's counter, which the emulator calls when an answer starts (a long poll: at
    its end). Used for peak request rates and for when the runner read a session."""

    def __init__(self, emulator: object) -> None:
        self.stamps: list[tuple[float, str, int]] = []
        backend = emulator.backend  # type: ignore[attr-defined]
        counted = backend.record_request

        def record(route: str, status: int) -> None:
            self.stamps.append((time.monotonic(), route, status))
            counted(route, status)

        backend.record_request = record

    def of(self, route: str, status: int | None = None) -> list[float]:
        return [t for t, r, s in self.stamps if r == route and (status is None or s == status)]

    def peak(self, window: float) -> int:
        """The most requests answered within any `window` seconds."""
        times = sorted(t for t, _r, _s in self.stamps)
        most, first = 0, 0
        for last, moment in enumerate(times):
            while times[first] <= moment - window:
                first += 1
            most = max(most, last - first + 1)
        return most
