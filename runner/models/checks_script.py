"""The definitions of the checks that run a script or a project with Playwright: BROWSER, MULTI_STEP
(their `script`) and PLAYWRIGHT (a check suite). Read through check_definitions.py, which imports
this module when a check of one of these types is first read."""

# No `from __future__ import annotations`: real annotations, as models/base.py says why.
import math
from typing import Any, Literal

from pydantic import Field, field_validator

from runner.models.checks_common import (
    RUNTIME_IDS,
    SUITE_BROWSERS,
    CheckDefinition,
    Problem,
    _no_should_fail,
    _null_is,
)
from runner.models.test_command import DEFAULT_TEST_COMMAND, TestCommandError, parse_test_command


class ScriptCheckDefinition(CheckDefinition):
    """A BROWSER or MULTI_STEP check: its Playwright Test `script` and the runtime it was written for."""

    script: str | None = None
    runtimeId: str | None = None
    scriptPath: str | None = None  # the script's path in its Checkly project: its imports are relative to it

    def field_problems(self) -> list[Problem]:
        out: list[Problem] = (
            []
            if (self.script or "").strip()
            else [(("script",), "required field is missing (the Playwright Test code)")]
        )
        if self.runtimeId is not None and self.runtimeId not in RUNTIME_IDS:
            out.append((("runtimeId",), f"expected one of {', '.join(RUNTIME_IDS)} or null"))
        return out + _playwright_config_problems(self.playwrightConfig)

    def response_limits_ms(self) -> tuple[float, float]:
        """None: production's browser checks have no response limits, only the type's run limit (the
        world's maxRunSeconds, 240 s as production's); a world's `never` leaves the run unbounded."""
        return math.inf, math.inf


class BrowserCheckDefinition(ScriptCheckDefinition):
    checkType: Literal["BROWSER"] = "BROWSER"


class MultiStepCheckDefinition(ScriptCheckDefinition):
    checkType: Literal["MULTI_STEP"] = "MULTI_STEP"


# What production's browser checks take of a `playwrightConfig` (browser-checks/playwright-support.mdx,
# "Supported configuration options"); the rest production does not read, and neither do we.
PLAYWRIGHT_CONFIG_KEYS = ("timeout", "use", "expect")
PLAYWRIGHT_USE_KEYS = (
    "baseURL", "colorScheme", "geolocation", "locale", "permissions", "timezoneId", "viewport",
    "deviceScaleFactor", "hasTouch", "isMobile", "javaScriptEnabled", "extraHTTPHeaders", "httpCredentials",
    "ignoreHTTPSErrors", "offline", "actionTimeout", "navigationTimeout", "testIdAttribute",
    "connectOptions", "contextOptions", "bypassCSP", "proxy",
)  # fmt: skip


def _playwright_config_problems(config: dict[str, Any] | None) -> list[Problem]:
    if config is None:
        return []
    out: list[Problem] = []
    timeout = config.get("timeout")
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if timeout is not None and not (number and timeout >= 0):
        out.append((("playwrightConfig", "timeout"), "expected a number of milliseconds, 0 or more"))
    for key in ("use", "expect"):
        if config.get(key) is not None and not isinstance(config[key], dict):
            out.append((("playwrightConfig", key), "expected an object"))
    return out


class PlaywrightCheckDefinition(CheckDefinition):
    """ChecksV1PlaywrightCheck: a Playwright check suite, the user's Playwright project run by its
    testCommand in workingDir (defaults from the OpenAPI). Production installs the project's
    dependencies with installCommand and runs Playwright there; here the project is the user's own
    folder, never installed into (protocols/playwright)."""

    checkType: Literal["PLAYWRIGHT"] = "PLAYWRIGHT"
    testCommand: str = DEFAULT_TEST_COMMAND
    workingDir: str | None = None
    installCommand: str = ""
    browsers: list[str] = Field(default_factory=lambda: ["chromium"])
    playwrightVersion: str | None = None

    _command = field_validator("testCommand", mode="before")(_null_is(DEFAULT_TEST_COMMAND))
    _install = field_validator("installCommand", mode="before")(_null_is(""))
    _browsers = field_validator("browsers", mode="before")(_null_is(["chromium"]))

    def field_problems(self) -> list[Problem]:
        out = _no_should_fail(self)  # not in ChecksV1PlaywrightCheck at all
        try:
            parse_test_command(self.testCommand)
        except TestCommandError as exc:
            out.append((("testCommand",), str(exc)))
        # Firefox and WebKit are known: whether their builds are installed is the run's to say
        # (protocols/playwright: the check fails closed naming the install command, the rest runs).
        if not self.browsers or any(b not in SUITE_BROWSERS for b in self.browsers):
            out.append((("browsers",), f"expected a list of {', '.join(SUITE_BROWSERS)}"))
        return out

    def response_limits_ms(self) -> tuple[float, float]:
        """None: a suite has no response limits, only the type's run limit (the world's
        maxRunSeconds, 1800 s as production's 30 minutes)."""
        return math.inf, math.inf

    def retries_apply(self) -> bool:
        """configuration.mdx: "Checkly retry strategies do not apply to Playwright Check Suites"
        (Playwright's own `retries` do)."""
        return False
