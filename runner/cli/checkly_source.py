"""`testsession run --checks checkly.config.ts`: a Checkly project run by the embedded emulator.

A minimal wiring until `--checks FILE` (issue 28) lands: the project's checks (runner/checkly) become
an in-memory world of one account, run for real like a world's checks, and a spec of one session
targets them (every activated check, or --tag / --check-id). Variables: --env and --secret-env reach
the checks' {{VARIABLES}}, their scripts' process.env, and the project's own parse (process.env in
checkly.config.ts).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from runner.checkly.convert import ID_NAMESPACE

if TYPE_CHECKING:
    from runner.checkly import ProjectChecks
    from runner.emulator.core.world import World
    from runner.spec import Overrides, RunSpec

# Until issue 28 gives local runs their own location: the first the project's checks name.
LOCATION = "eu-west-1"
DEMO_KEY = "tsk_demo_checkly_project_local"  # a demo key: real checks run only on loopback
_WORLD_CHECK_KEYS = (
    "id", "name", "checkType", "tags", "activated", "locations", "frequency", "request",
    "degradedResponseTime", "maxResponseTime", "shouldFail", "environmentVariables", "script",
    "localSetupScript", "localTearDownScript", "setupSnippetId", "tearDownSnippetId", "setupScriptPath",
    "tearDownScriptPath", "sharedFiles", "projectDir",
)  # fmt: skip


def project_run(path: str, overrides: Overrides) -> tuple[World, RunSpec, ProjectChecks]:
    from runner.checkly import load_project
    from runner.emulator.core.world import World
    from runner.spec import RunSpec, apply_overrides

    variables = dict(overrides.env or []) | dict(overrides.secret_env or [])
    project = load_project(path, variables)
    checks = [_world_check(c) for c in project.checks]
    world = World.model_validate({
        "settings": {"speed": 1, "analysisDelaySeconds": 0, "executor": {"concurrency": 4}},
        "accounts": [{
            "id": str(uuid.uuid5(ID_NAMESPACE, f"account/{project.logical_id}")),
            "name": project.name,
            "keys": [{"key": DEMO_KEY, "role": "read-write"}],
            "checks": checks,
        }],
    })  # fmt: skip
    target: dict[str, Any] = {}
    if overrides.tags is None and overrides.check_ids is None:
        target = {"checkId": [c["id"] for c in checks if c.get("activated", True) is not False]}
    named = [loc for c in checks for loc in c.get("locations") or []]
    session: dict[str, Any] = {
        "name": project.name,
        "runLocation": overrides.location or (named or [LOCATION])[0],
    }
    if target:
        session["target"] = target
    spec = RunSpec.model_validate({"sessions": [session], "rca": {"timeoutSeconds": 30}})
    return world, apply_overrides(spec, overrides), project


def _world_check(check: dict[str, Any]) -> dict[str, Any]:
    data = {k: check[k] for k in _WORLD_CHECK_KEYS if check.get(k) is not None}
    if data.get("checkType") not in ("API", "URL", "TCP", "DNS") and "request" in data:
        data.pop("request")  # other types' requests are not read here (issue 29 runs them)
    data["frequency"] = int(data.get("frequency") or 10)
    data.setdefault("locations", [])
    data["environmentVariables"] = [
        {"key": v["key"], "value": v.get("value"), "secret": bool(v.get("secret"))}
        for v in data.get("environmentVariables") or []
        if isinstance(v, dict) and v.get("key")
    ]
    return data
