"""A Playwright check suite's `testCommand`, read without a shell (docs/checks.md, "Playwright check suites").

Production runs the command in a shell on its own runner; here it runs on the user's machine, so only
the one form production documents is accepted: `npx playwright test [options] [filters]` (or
`playwright test ...`), split like a shell splits words (shlex) and run as an argument list (no shell:
no `&&`, `;`, `|`, redirections or `VAR=value` prefixes). The options that would take the run away from
testsession (its reporter reads the result, its output folder keeps the evidence, nobody watches a UI)
are refused; `--config`/`-c` names the config the run wraps. Anything else fails closed at load, one
line naming the field and what is allowed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

DEFAULT_TEST_COMMAND = "npx playwright test"
ALLOWED = "`npx playwright test [options] [test filters]` (or `playwright test ...`)"
# Options that would take the result or the evidence from testsession, or wait for a person.
REFUSED_OPTIONS: dict[str, str] = {
    "--reporter": "testsession's reporter reads the result",
    "--output": "the evidence goes to testsession's reports folder",
    "--ui": "nobody watches a UI in a gate",
    "--ui-host": "nobody watches a UI in a gate",
    "--ui-port": "nobody watches a UI in a gate",
    "--debug": "nobody steps through a debugger in a gate",
    "--headed": "the browser runs headless here",
    "--list": "it lists tests without running them",
    "--help": "it runs nothing",
    "-h": "it runs nothing",
    "--update-snapshots": "a gate does not rewrite the project's snapshots",
    "-u": "a gate does not rewrite the project's snapshots",
}
_SHELL = frozenset(";&|<>()")


class TestCommandError(ValueError):
    """What is wrong with a testCommand, as one sentence (the field is named by the caller)."""

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class TestCommand:
    """`playwright test` with `args` (the user's options and filters, --config left out) and `config`:
    the config file the command names (None: Playwright's own lookup in the working directory)."""

    __test__ = False  # not a pytest test class

    args: tuple[str, ...]
    config: str | None = None


def parse_test_command(text: str | None) -> TestCommand:
    """The command's options and config; TestCommandError saying what is allowed."""
    text = DEFAULT_TEST_COMMAND if text is None or not text.strip() else text
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError as exc:  # an unclosed quote
        raise TestCommandError(f"cannot be split into words ({exc}); expected {ALLOWED}") from None
    shell = next((w for w in words if w and set(w) <= _SHELL), None)
    if shell is not None:
        raise TestCommandError(f"shell syntax ({shell}) does not run here (no shell); expected {ALLOWED}")
    rest = words[1:] if words[:1] == ["npx"] else words
    if rest[:2] != ["playwright", "test"]:
        raise TestCommandError(f"expected {ALLOWED}, got `{shlex.join(words[:3])}`")
    args: list[str] = []
    config: str | None = None
    options = iter(rest[2:])
    for word in options:
        name = word.split("=", 1)[0]
        if name in REFUSED_OPTIONS:
            raise TestCommandError(f"{name} is not run here ({REFUSED_OPTIONS[name]}); expected {ALLOWED}")
        if name in ("--config", "-c"):
            value = word.split("=", 1)[1] if "=" in word else next(options, "")
            if not value:
                raise TestCommandError(f"{name} names no config file; expected {ALLOWED}")
            config = value
            continue
        args.append(word)
    return TestCommand(tuple(args), config)
