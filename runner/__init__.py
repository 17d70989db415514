"""testsession-runner: run monitoring checks as a test session and gate a deploy on the verdict."""

__version__ = "0.1.0"
TOOL_NAME = "testsession-runner"
