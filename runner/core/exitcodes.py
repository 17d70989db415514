"""The exit-code contract. The one place that defines what a pipeline can gate on."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes of every `testsession` command.

    0 OK                every check passed (degraded checks pass unless gate.failOnDegraded)
    1 CHECKS_FAILED     a check failed the gate (the rule: see 'gate' below)
    2 USAGE             you must act: bad arguments, spec or body, an id you named that does not exist
                        or a name that is taken; nothing was triggered (or a check named in
                        target.checkId never ran); also a passing gate whose report could not be
                        written at the end of the run
    3 TIMEOUT           the deadline passed before the session finished; the session was cancelled
    4 SERVICE           the service or the way to it must be fixed: auth, permission, network, server
                        errors, or an answer not understood (never read as a pass or a no-match);
                        also an internal error of the tool (a bug: reported with its traceback)
    5 NO_MATCH          the service said no check matched the target (403 ERR_NO_MATCHING_CHECKS);
                        0 when gate.failOnNoMatchingChecks is false
    6 BUILD_NOT_STARTED the build did not start: `build:` (--build-command) exited, or its URL did not
                        answer within its timeout; nothing was triggered
    130 INTERRUPTED     SIGINT: the session was cancelled and partial reports written; also a command
                        ended by a closed output (broken pipe) before any verdict; `run` goes on
                        to the gate's code and reports when its reader goes away
    143 TERMINATED      SIGTERM: the session was cancelled and partial reports written
    """

    OK = 0
    CHECKS_FAILED = 1
    USAGE = 2
    TIMEOUT = 3
    SERVICE = 4
    NO_MATCH = 5
    BUILD_NOT_STARTED = 6
    INTERRUPTED = 130
    TERMINATED = 143


# Several sessions in one run: the run exits with the most severe of their codes, in this order.
SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.TERMINATED,
    ExitCode.INTERRUPTED,
    ExitCode.USAGE,
    ExitCode.BUILD_NOT_STARTED,
    ExitCode.SERVICE,
    ExitCode.TIMEOUT,
    ExitCode.CHECKS_FAILED,
    ExitCode.NO_MATCH,
    ExitCode.OK,
)


def most_severe(codes: list[ExitCode]) -> ExitCode:
    if not codes:
        return ExitCode.OK
    return min(codes, key=SEVERITY.index)


def describe() -> str:
    """The table printed by `--help` and copied into the README."""
    lines = []
    for raw in (ExitCode.__doc__ or "").strip().splitlines()[1:]:
        line = raw.strip()
        if line:
            # A line indented further goes on the meaning of the code above: it stays under it.
            going_on = len(raw) - len(raw.lstrip()) > 4
            lines.append("  " + " " * 20 * going_on + line)
    return "exit codes:\n" + "\n".join(lines)
