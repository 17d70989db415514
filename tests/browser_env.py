"""What the browser tests need (Node, Playwright, Chromium), found once; a loud skip reason when missing.

.ci/run installs Debian's chromium and @playwright/test (into testsession's own cache, the way a check
would); when it cannot, it says so and these tests are skipped with the reason below.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.checks.protocols.browser.setup import SetupError, find_browser, find_playwright

REPO = Path(__file__).resolve().parent.parent
SHOP = REPO / "examples" / "local-app" / "shop.py"
PASSWORD = "correct-horse-battery"


@functools.cache
def missing() -> str | None:
    try:
        playwright = find_playwright(Path("/nonexistent"), None, progress=lambda _: None,
                                     deadline=time.monotonic() + 300, stop=None)  # fmt: skip
        find_browser(playwright)
    except SetupError as exc:
        return f"LOUD SKIP: browser checks cannot run on this machine: {exc}"
    return None


def needs_browser() -> list[pytest.MarkDecorator]:
    """Skipped (saying why) without Node, Playwright or Chromium; marked `browser`: one at a time
    beside other tests (conftest)."""
    reason = missing()
    return [pytest.mark.skipif(reason is not None, reason=reason or ""), pytest.mark.browser]


class Shop:
    """examples/local-app/shop.py on free ports, good or broken."""

    def __init__(self, broken: bool = False) -> None:
        from checks_servers import free_port

        for _ in range(5):  # a free port can be taken by another process before the shop binds it
            self.port = free_port()
            flags = ["--broken"] if broken else []
            self.process = subprocess.Popen(
                [sys.executable, str(SHOP), *flags, "--port", str(self.port), "--tcp-port", str(free_port()),
                 "--dns-port", str(free_port()), "--password", PASSWORD],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            assert self.process.stdout is not None
            if self.process.stdout.readline():  # printed once every server listens
                break
            self.process.wait(5)
        else:
            raise RuntimeError("examples/local-app/shop.py did not start")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(5)


def processes_with(marker: str) -> list[tuple[int, str]]:
    """(pid, name) of every live process whose environment carries `marker` (Node, Chromium ...)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in Path(f"/proc/{entry.name}/environ").read_bytes():
                continue
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[0] != "Z":
            found.append((int(entry.name), stat.split("(", 1)[1].rsplit(")", 1)[0]))
    return found


def a_browser_of(marker: str) -> bool:
    return any("chrom" in name for _, name in processes_with(marker))


def sigterm_when(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> tuple[float, str, str]:
    """Waits (at most 120 s) until `ready()`, the run still going, then sends SIGTERM and waits for the
    run's end: (seconds from the signal to the end, stdout, stderr)."""
    deadline = time.monotonic() + 120
    # Ready on two polls in a row, and judged by those polls only: a browser's short-lived helper
    # process (seen once, gone at a third look) failed the old re-check after the loop.
    streak = 0
    while streak < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        streak = streak + 1 if ready() else 0
        if streak < 2:
            time.sleep(0.1)
    assert streak == 2, what
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return time.monotonic() - signalled, out, err


# A browser check that writes the pid of the Playwright process that runs it (its worker's parent) to
# $PIDS/$CHECK_NAME, then signs in to the shop; HEADING is replaced by the heading it expects.
PID_SCRIPT = """const { test, expect } = require('@playwright/test')
const fs = require('fs')

test('signs in', async ({ page }) => {
  fs.writeFileSync(`${process.env.PIDS}/${process.env.CHECK_NAME}`, String(process.ppid))
  await page.goto(`${process.env.SHOP_URL}/login`)
  await page.getByLabel('Username').fill('shopper')
  await page.getByLabel('Password').fill(process.env.SHOP_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(HEADING, { timeout: 3000 })
})
"""
