"""Helpers shared by test modules (import as `from helpers import ...`; pytest puts tests/ on sys.path).

Importable without pytest too (bench/fault_table.py runs tests/fault_cells.py): no conftest here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
# Variables of CI systems (and the Action's inputs): a run started by a test must not publish into the
# CI job that runs the tests, nor take another path than on a laptop.
CI_PREFIXES = ("GITHUB_", "GITLAB", "CI_", "CIRCLE", "BUILDKITE", "JENKINS", "BITBUCKET", "RUNNER_", "INPUT_")


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a `testsession` child process: this one's, as a developer's shell hands it
    on, without CI variables and credentials (TESTSESSION_*), plus `extra`. Nothing is added that a
    user's runner lacks: no PYTHONPATH (the package is installed), no PYTHONUNBUFFERED, no NO_COLOR."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith((*CI_PREFIXES, "TESTSESSION_")) and name != "CI"
    }
    env.update(extra)
    return env


# Property tests (hypothesis, schemathesis) take their example counts through examples(): the suite's
# own, small enough for the whole suite to stay well under 90 s on 2 cores, or DEEP_FACTOR times as
# many under the `deep` profile (registered in conftest) for a long run:
#   HYPOTHESIS_PROFILE=deep python -m pytest tests/test_fuzz_spec.py tests/test_fuzz_reports.py ...
DEEP_FACTOR = 10


def examples(suite: int) -> int:
    """max_examples of a property test: `suite` in the suite's run, DEEP_FACTOR x that under `deep`."""
    from hypothesis import settings

    return suite * DEEP_FACTOR if settings.get_current_profile_name() == "deep" else suite


def emulator_stats(emu: Any, requests: int = 0) -> dict[str, Any]:
    """The emulator's stats once it has counted `requests` requests: it counts each one after its
    answer is sent (or dropped), so a client may be done before the count is. Bounded: 3 s."""
    deadline = time.monotonic() + 3
    while True:
        stats: dict[str, Any] = emu.backend.stats()
        if stats["requestsTotal"] >= requests or time.monotonic() > deadline:
            return stats
        time.sleep(0.01)


def sessions_created(emu: Any, requests: int = 0) -> int:
    """Test sessions the emulator started (after `requests` requests were counted)."""
    return int(emulator_stats(emu, requests)["sessionsTotal"])


class CliRun(NamedTuple):
    code: int
    data: dict[str, Any]  # results.json, {} when none was written

    @property
    def outcome(self) -> Any:
        from runner.job.outcome import Outcome

        return Outcome.model_validate(self.data)


REPORT_FILES = {"json": "results.json", "junit": "junit.xml", "markdown": "summary.md"}


def cli_run(
    out: Path, *argv: str, rca: bool = True, reports: tuple[str, ...] = ("json", "junit", "markdown")
) -> CliRun:
    """`testsession ARGV` in this process, its reports under `out` (results.json, junit.xml,
    summary.md; a kind not in `reports` is not written): the exit code and results.json."""
    from runner.cli.main import main

    flags = [] if rca else ["--no-rca"]
    for kind, name in REPORT_FILES.items():
        flags += [f"--{kind}", str(out / name) if kind in reports else ""]
    code = main([*argv, *flags])
    results = out / REPORT_FILES["json"]
    return CliRun(code, json.loads(results.read_text(encoding="utf-8")) if results.exists() else {})


class Ran(NamedTuple):
    """What a command left, as subprocess.run(..., capture_output=True, text=True) gives it."""

    returncode: int
    stdout: str
    stderr: str


def run_here(argv: list[str], env: dict[str, str], cwd: Path, entry: Callable[..., int] | None = None) -> Ran:
    """`testsession ARGV` (or `entry()`, e.g. the Action's main) in this process, as a child would run:
    exactly `env` as its environment, `cwd` its working directory, stdout and stderr captured (no
    terminal, as in a pipe). For tests whose claim is the command's output, files and exit code, not
    the process itself (signals, closed pipes, an interpreter's start): a child costs ~0.6 s of CPU to
    import the package again, this ~0.1 s. Everything is restored afterwards."""
    from runner.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry() if entry is not None else main(argv)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Ran(code, out.getvalue(), err.getvalue())


def fast_world(tmp_path: Path, speed: float = 40) -> Path:
    """examples/emulator-world.yml (the default world) at `speed`: its sessions end in a fraction of a
    second; nothing else is changed. Written to tmp_path/world.yml for `--world`."""
    world = yaml.safe_load((EXAMPLES / "emulator-world.yml").read_text(encoding="utf-8"))
    world["settings"]["speed"] = speed
    path = tmp_path / "world.yml"
    path.write_text(yaml.safe_dump(world), encoding="utf-8")
    return path


# The JUnit schema is not part of the repository (../shared/junit/junit-10.xsd beside the checkout).
# On a clone without it, only the XSD check is left out: every other assertion of a test still runs.
JUNIT_XSD = REPO_ROOT.parent / "shared" / "junit" / "junit-10.xsd"


@lru_cache(maxsize=1)
def _junit_schema() -> Any:
    if not JUNIT_XSD.exists():
        return None
    import xmlschema

    return xmlschema.XMLSchema(str(JUNIT_XSD))


def junit_xsd_errors(xml: str | Path) -> list[str]:
    """Why the JUnit XML (text, or a file) breaks junit-10.xsd; [] when it does not, or when the XSD
    is absent. Parses it either way, so XML that is not well-formed fails here too."""
    ET.parse(xml) if isinstance(xml, Path) else ET.fromstring(xml.encode("utf-8"))
    schema = _junit_schema()
    if schema is None:
        return []
    return [str(e.reason) for e in schema.iter_errors(str(xml) if isinstance(xml, Path) else xml)]


def valid_junit(xml: str) -> ET.Element:
    """The parsed JUnit XML, asserted valid by junit-10.xsd (when present)."""
    assert junit_xsd_errors(xml) == []
    return ET.fromstring(xml.encode("utf-8"))
