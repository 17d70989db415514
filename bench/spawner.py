"""Runs child processes for the benchmarks and reports each one's wall time and peak memory.

Why a separate small process: on Linux a child's ru_maxrss includes the memory of the process it was
forked (or vforked) from, up to its exec. Forked from the benchmark process (tens of MiB, an emulator
inside), `python -c pass` would seem to need that much. Forked from this process, started with
`python -S` and importing only what it needs (~10 MiB), a child's peak is its own.

The memory of the process tree: ru_maxrss is the peak of the largest single process (the child, or
a child of it that it waited for), not of the child and its children together: a run with a worker
process (runner/job/workers.py) holds both at once. So while the child runs, every SAMPLE_SECONDS
(10 ms) this process reads the resident set of the child and of every process under it
(/proc/PID/statm: resident pages, VmRSS; who is under it: the parent pids of /proc/*/stat, looked up
at the start and every SCAN_EVERY samples, 50 ms, since a full scan costs ~1.5 ms) and keeps the
largest sum, with each process's part at that moment (resident and file-backed/shared pages). The sum
counts a page shared by two processes (the interpreter's binary and libraries, pages a fork shares)
once in each: an upper bound of what the tree holds. A peak shorter than a sample can be missed.
Sampling costs this process ~3 % of a core while a child runs.

Protocol: one JSON request per stdin line {"argv", "env", "cwd", "timeout"}, one JSON answer per
stdout line {"started", "exited", "maxrss_kib", "cpu", "code", "stdout", "stderr", "tree_kib",
"tree_parts_kib", "tree_samples"} (cpu: the child's user + system seconds, its waited-for children
included; tree_kib: the largest sampled sum of the tree's VmRSS, 0 when never sampled; tree_parts_kib:
[pid, resident KiB, file-backed and shared KiB] of each process at that moment, the child first). Times
are time.monotonic(), the system-wide CLOCK_MONOTONIC on Linux, so the caller can compare them with its own.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

SAMPLE_SECONDS = 0.01  # between two samples of the tree's resident memory
SCAN_EVERY = 5  # samples between two looks for processes that joined the tree
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


class Tree:
    """The peak of the summed resident memory of a process and every process under it, sampled."""

    def __init__(self, root):
        self.root = root
        self.pids = [root]
        self.samples = 0
        self.peak_kib = 0
        self.parts = []
        self.next_at = time.monotonic() + SAMPLE_SECONDS

    def _scan(self):
        children = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    text = stat.read()
            except OSError:
                continue  # it ended
            ppid = int(text[text.rindex(b")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
        found, todo = [self.root], [self.root]
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in found:
                    found.append(child)
                    todo.append(child)
        self.pids = found

    def sample(self):
        self.next_at = time.monotonic() + SAMPLE_SECONDS
        if self.samples % SCAN_EVERY == 0:
            self._scan()
        self.samples += 1
        parts = []
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/statm", "rb") as statm:
                    fields = statm.read().split()
            except OSError:
                continue  # it ended
            parts.append([pid, int(fields[1]) * PAGE_KIB, int(fields[2]) * PAGE_KIB])
        total = sum(part[1] for part in parts)
        if total > self.peak_kib:
            self.peak_kib, self.parts = total, parts


def run(request):
    timeout = float(request.get("timeout") or 120)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            request["argv"],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=request.get("env"),
            cwd=request.get("cwd"),
        )
        # A pidfd becomes readable at the child's exit, so the exit is seen at once, with a timeout.
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            pidfd = None
        tree = Tree(proc.pid)
        try:
            while True:
                remaining = started + timeout - time.monotonic()
                if remaining <= 0:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                if pidfd is not None:
                    select.select([pidfd], [], [], min(remaining, SAMPLE_SECONDS))
                else:
                    time.sleep(0.001)
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() >= tree.next_at:
                    tree.sample()
        finally:
            if pidfd is not None:
                os.close(pidfd)
        exited = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        return {
            "started": started,
            "exited": exited,
            "maxrss_kib": usage.ru_maxrss,
            "cpu": usage.ru_utime + usage.ru_stime,
            "code": proc.returncode,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "tree_kib": tree.peak_kib,
            "tree_parts_kib": tree.parts,
            "tree_samples": tree.samples,
        }


def main():
    for line in sys.stdin:
        try:
            answer = run(json.loads(line))
        except Exception as exc:  # the caller shows it; the spawner keeps serving
            answer = {"failure": repr(exc)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
