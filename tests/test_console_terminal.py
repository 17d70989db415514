"""The live line on a real pseudo-terminal that is resized while the run waits.

A terminal made narrower wraps the live line it shows over several rows (reflow); the next redraw
clears all of them and fits the new width, so no piece of an old line is left on the screen. A
terminal made wider gets the whole line again.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
from collections.abc import Iterator
from typing import TextIO

import pytest

from runner.ci.console import Console
from runner.job.events import Progress, ResultFinished, Tick, Where
from runner.job.outcome import ResultOutcome
from runner.job.policy import Gate

WHERE = Where("deploy", "eu-west-1")


def set_columns(fd: int, columns: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))


def read_screen(fd: int) -> str:
    """Everything written to the terminal so far."""
    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8")


@pytest.fixture
def terminal() -> Iterator[tuple[int, TextIO]]:
    main, child = pty.openpty()
    stream = os.fdopen(child, "w", encoding="utf-8")
    try:
        yield main, stream
    finally:
        stream.close()
        os.close(main)


def result(name: str, verdict: str) -> ResultOutcome:
    status = "RUNNING" if verdict == "running" else "FAILED"
    return ResultOutcome(id=name, name=name, status=status, verdict=verdict, runLocation="eu-west-1")  # type: ignore[arg-type]


def test_the_live_line_is_redrawn_to_the_new_width_after_a_resize(terminal: tuple[int, TextIO]) -> None:
    main, stream = terminal
    set_columns(main, 120)
    console = Console(stream=stream, environ={"TERM": "xterm", "NO_COLOR": "1"}, gate=Gate())
    assert console.interactive
    running = tuple(result(f"Check number {n}", "running") for n in range(1, 9))
    console.notify(Progress(WHERE, 3.0, running, total=8, done=0))
    console.notify(Tick(3.0))
    names = ", ".join(f"Check number {n}" for n in range(1, 5))
    wide = f"… 3 s · 0/8 done · running: {names} and 4 more"
    assert read_screen(main).endswith("\r\x1b[K" + wide)

    # Narrower: the 103 characters shown now wrap over 3 rows of 40; all three are cleared.
    set_columns(main, 40)
    console.notify(Tick(4.0))
    narrow = read_screen(main)
    assert narrow.startswith("\r\x1b[2A\x1b[J")
    shown = narrow.removeprefix("\r\x1b[2A\x1b[J")
    assert len(shown) == 39 and shown.startswith("… 4 s · 0/8 done · running: Check") and shown.endswith("…")

    # A result line above it: the line (now one row) cleared, the line printed, the live line refitted,
    # counting the finished check as done in that same redraw.
    console.notify(ResultFinished(WHERE, result("Check number 1", "failed")))
    screen = read_screen(main)
    assert screen.startswith("\r\x1b[K  FAILED")
    before, _, after = screen.partition("\r\n")
    assert "Check number 1" in before and after == shown.replace("0/8 done", "1/8 done")

    # Wider again: the whole line, on one row.
    set_columns(main, 200)
    console.notify(Tick(5.0))
    one_done = wide.replace("3 s", "5 s").replace("0/8 done", "1/8 done")
    one_done = one_done.replace("Check number 1, ", "")
    one_done = one_done.replace("4 and 4 more", "4, Check number 5 and 3 more")
    assert read_screen(main) == "\r\x1b[K" + one_done


def test_a_secret_is_masked_before_the_live_line_is_cut(terminal: tuple[int, TextIO]) -> None:
    main, stream = terminal
    set_columns(main, 50)  # the unmasked line would be cut inside the secret, leaving a piece of it
    console = Console(stream=stream, environ={"TERM": "xterm", "NO_COLOR": "1"}, gate=Gate())
    console.redact.add("hunter2-very-secret-token")
    console.notify(Progress(WHERE, 1.0, (result("login as hunter2-very-secret-token", "running"),), 1, 0))
    console.notify(Tick(1.0))
    screen = read_screen(main)
    assert "hunter2" not in screen
    assert screen.endswith("\r\x1b[K… 1 s · 0/1 done · running: login as ***")


def test_a_session_failed_by_quarantined_checks_says_the_gate_passes_them() -> None:
    """`finished: FAILED` beside `verdict: PASSED` read as a contradiction: the session's line says
    which failures the gate passes (the policy's decision), and which still fail it."""
    import io
    from datetime import date

    from runner.job.events import SessionFinished
    from runner.job.outcome import QuarantineOutcome

    held = QuarantineOutcome(owner="@team", until=date(2026, 12, 15))
    stream = io.StringIO()
    console = Console(stream=stream, environ={"CI": "true"}, gate=Gate())
    for name in ("a", "b"):
        console.notify(ResultFinished(WHERE, result(name, "failed").model_copy(update={"quarantined": held})))
    console.notify(SessionFinished(WHERE, "FAILED", 3.0))
    other = Where("smoke", "us-east-1")
    console.notify(ResultFinished(other, result("c", "failed").model_copy(update={"quarantined": held})))
    console.notify(ResultFinished(other, result("d", "error")))
    console.notify(SessionFinished(other, "FAILED", 3.0))
    third = Where("api", "us-east-1")
    console.notify(ResultFinished(third, result("e", "failed")))
    console.notify(SessionFinished(third, "FAILED", 3.0))
    lines = [line for line in stream.getvalue().splitlines() if "finished:" in line]
    assert lines[0].endswith("finished: FAILED (2 quarantined checks; the gate passes them) after 3.0 s")
    assert lines[1].endswith(
        "finished: FAILED (1 quarantined check, the gate passes it; 1 other check fails it) after 3.0 s"
    )
    assert lines[2].endswith("finished: FAILED after 3.0 s")
