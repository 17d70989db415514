"""Runs child processes for the benchmarks and reports each one's wall time and peak memory.

Why a separate small process: on Linux a child's ru_maxrss includes the memory of the process it was
forked (or vforked) from, up to its exec. Forked from the benchmark process (tens of MiB, an emulator
inside), `python -c pass` would seem to need that much. Forked from this process, started with
`python -S` and importing only what it needs (~10 MiB), a child's peak is its own.

Protocol: one JSON request per stdin line {"argv", "env", "cwd", "timeout"}, one JSON answer per
stdout line {"started", "exited", "maxrss_kib", "cpu", "code", "stdout", "stderr"} (cpu: the child's
user + system seconds, its waited-for children included). Times are
time.monotonic(), the system-wide CLOCK_MONOTONIC on Linux, so the caller can compare them with its own.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time


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
        try:
            while True:
                remaining = started + timeout - time.monotonic()
                if remaining <= 0:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                if pidfd is not None:
                    select.select([pidfd], [], [], remaining)
                else:
                    time.sleep(0.001)
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
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
