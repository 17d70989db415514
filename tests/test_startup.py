"""Start-up imports only what the command needs (the timing itself: bench/startup.py).

`testsession --version` answers before argparse and any command module loads; a named command builds
only its own module's parser; nothing on the way imports dataclasses (inspect, ast, dis), shutil or
difflib, which cost a third of the start-up before (typing, ~3 ms, is allowed: `TYPE_CHECKING`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from checks_servers import HttpServer
from helpers import child_env

from runner import __version__

# Slow standard modules a start must not pull in by itself (argparse only where a parser is needed).
SLOW = {"dataclasses", "inspect", "difflib", "shutil", "pydantic", "yaml", "requests", "git"}
PROBE = """
import json, sys
before = set(sys.modules)
from runner.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # argparse's --help
    code = exc.code
sys.stdout.flush()
models = {}  # runner's pydantic model classes that were created: name -> whether their validator was built
if "pydantic" in sys.modules:
    from pydantic import BaseModel
    classes, seen = [BaseModel], set()
    while classes:
        for sub in classes.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                classes.append(sub)
    models = {f"{c.__module__}.{c.__qualname__}": bool(c.__pydantic_complete__) for c in seen
              if c.__module__.startswith("runner.")}
print(json.dumps({"code": code, "new": sorted(set(sys.modules) - before), "models": models}), file=sys.stderr)
"""


def imported(*argv: str, cwd: Path | None = None) -> tuple[str, set[str]]:
    """(stdout, modules imported by `testsession ARGV`) in a fresh interpreter."""
    out, report = probe(*argv, cwd=cwd)
    return out, set(report["new"])


def probe(*argv: str, cwd: Path | None = None) -> tuple[str, dict[str, Any]]:
    """(stdout, PROBE's report) of `testsession ARGV` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=child_env(),
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return done.stdout, report


def test_version_loads_no_parser_and_no_command() -> None:
    out, modules = imported("--version")
    assert out == f"testsession {__version__}\n"
    assert {m for m in modules if m.startswith("runner")} == {
        "runner", "runner.cli", "runner.cli.main", "runner.core", "runner.core.exitcodes",
    }  # fmt: skip
    assert "argparse" not in modules
    assert not modules & SLOW


@pytest.mark.parametrize(
    ("argv", "module"),
    [(("run", "--help"), "runner.cli.run_command"), (("schema", "--help"), "runner.cli.spec_commands")],
)
def test_a_command_loads_the_modules_up_to_its_own(argv: tuple[str, ...], module: str) -> None:
    out, modules = imported(*argv)
    assert f"usage: testsession {argv[0]}" in out
    commands = {m for m in modules if m.startswith("runner.cli.") and m.endswith(("_command", "_commands"))}
    from runner.cli.main import COMMAND_MODULES

    assert commands == set(COMMAND_MODULES[: COMMAND_MODULES.index(module) + 1])
    assert "runner.cli.api_commands" not in modules  # the 31 parsers of the API commands: not built
    assert not modules & (SLOW - {"typing", "shutil", "dataclasses", "inspect"})


def test_the_full_help_still_lists_every_command() -> None:
    from runner.cli.main import build_parser

    listed = build_parser().format_help()
    for command in ("run", "wait", "validate", "schema", "report", "comment", "sessions", "emulator"):
        assert f"    {command} " in listed
    assert "exit codes:" in listed


# What a run of a checks file never needs: the service's client and its operation table, the API's
# resources (the check list, dashboards, incidents: ~15 model classes and a list's validator), the
# remote session worker, the emulator, and the libraries of the service and the emulator.
NOT_FOR_A_LOCAL_RUN = {
    "runner.client.http",
    "runner.client.transport",
    "runner.models.resources",
    "runner.models.operations",
    "runner.job.remote",
    "runner.emulator",
    "git",
    "requests",
    "fastapi",
    "uvicorn",
    "starlette",
}


def test_a_one_check_run_of_a_checks_file_loads_only_the_local_path(web: HttpServer, tmp_path: Path) -> None:
    """`run --checks FILE` with one API check and the three reports: the engine, the job and the
    reports, nothing of the service's side (imports only where used)."""
    check = {"name": "Health", "checkType": "API", "request": {"method": "GET", "url": web.url("/json")}}
    (tmp_path / "checks.yml").write_text(yaml.safe_dump([check]), encoding="utf-8")
    reports = ("--junit", "junit.xml", "--markdown", "summary.md", "--json", "results.json")
    _out, modules = imported("run", "--checks", "checks.yml", *reports, cwd=tmp_path)
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["verdict"] == "passed"
    assert "runner.checks.protocols.http" in modules  # the check ran here, by the engine
    assert not {m for m in modules if m.startswith(tuple(NOT_FOR_A_LOCAL_RUN))}


# The models a one-check run of a checks file builds a validator for: the spec's (RunSpec alone: its
# sections' defaults are validated by its own validator), the checks file's, and the outcome that
# results.json stores. Not the trigger body (TriggerRequest and the models in it: a local run never
# sends one), nor the service's models of a session (the engine's session, the default Target of a
# session without one and the commit are values it made: constructed or copied, not validated),
# nothing of the other check types, the service's resources or analyses (the API check's definition is
# read by its fast path, checks_common.plain_api_request).
BUILT_BY_A_LOCAL_RUN = {
    "runner.spec.model.RunSpec",
    *(f"runner.checks.declared.{name}" for name in ("Strict", "Rule", "WorldVariable", "WorldCheck")),
    "runner.checks.checksfile.CheckSet",
    *(f"runner.job.outcome.{name}" for name in (
        "ResultOutcome", "SessionOutcome", "CommitInfo", "Outcome", "Counts",
    )),
}  # fmt: skip
# What only a child process needs (git for commit metadata, the watchdog of a run's children): a run
# outside a repository that starts no child does not import it.
NOT_FOR_A_CHILDLESS_RUN = {"subprocess"}


def test_a_one_check_run_creates_only_its_check_types_models(web: HttpServer, tmp_path: Path) -> None:
    """Creating a model class costs even when its validator is built later: a run of API checks
    creates none of the other check types' definitions (models/checks_network, checks_script) and
    builds only the validators its path uses."""
    check = {"name": "Health", "checkType": "API", "request": {"method": "GET", "url": web.url("/json")}}
    (tmp_path / "checks.yml").write_text(yaml.safe_dump([check]), encoding="utf-8")
    _out, report = probe("run", "--checks", "checks.yml", "--json", "results.json", cwd=tmp_path)
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["verdict"] == "passed"
    made = set(report["models"])
    assert "runner.models.checks_common.ApiRequest" in made
    other_types = ("runner.models.checks_network.", "runner.models.checks_script.")
    assert not {m for m in made if m.startswith(other_types)}
    assert "runner.models.resources.CreateAnalysisRequest" not in made
    built = {name for name, done in report["models"].items() if done}
    assert built <= BUILT_BY_A_LOCAL_RUN, built - BUILT_BY_A_LOCAL_RUN


def test_a_one_check_run_with_a_spec_builds_no_trigger_body(web: HttpServer, tmp_path: Path) -> None:
    """The benchmark's form (`run SPEC --checks FILE` and the three reports): the spec's sections and
    the trigger body are values made from what the spec's own validator checked, so none of their
    models builds a validator; nothing starts a child process (no repository, no browser check)."""
    check = {
        "name": "Health",
        "checkType": "API",
        "tags": ["a"],
        "request": {"method": "GET", "url": web.url("/json")},
    }
    spec = {
        "name": "one",
        "runLocation": "eu-west-1",
        "target": {"matchTags": [["a"]]},
        "wait": {"timeoutSeconds": 60},
    }
    (tmp_path / "spec.yml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    (tmp_path / "checks.yml").write_text(yaml.safe_dump([check]), encoding="utf-8")
    reports = ("--junit", "junit.xml", "--markdown", "summary.md", "--json", "results.json")
    _out, report = probe("run", "spec.yml", "--checks", "checks.yml", *reports, cwd=tmp_path)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["verdict"] == "passed"
    assert results["sessions"][0]["name"] == "one"
    built = {name for name, done in report["models"].items() if done}
    assert built <= BUILT_BY_A_LOCAL_RUN, built
    assert not {m for m in built if m.startswith("runner.spec.model.") and m != "runner.spec.model.RunSpec"}
    assert "runner.models.sessions.TriggerRequest" not in built
    assert not set(report["new"]) & NOT_FOR_A_CHILDLESS_RUN
