"""A synthesized Checkly project's check resources as production-shaped check definitions.

What the service does with a project's resources, applied here (production's docs: platform/groups.mdx,
constructs/check-group-v2.mdx, detect/synthetic-monitoring/api-checks/setup-and-teardown.mdx):
- `groupId: {ref}` -> the group's settings: its `environmentVariables` under the check's own (check
  variables trump group variables), its `tags` added to the check's, its `locations` when the check
  has none, `activated: false` deactivating its checks, and for API checks its `apiCheckDefaults`:
  `url` as the `{{GROUP_BASE_URL}}` variable, headers and query parameters injected unless the check
  has one of the same name (the check's wins), basic auth when the check has none, and its
  assertions appended to the check's. A ref to a group the project lacks is a problem (exit 2).
- A stable id: uuid5 of the project's and the check's logicalId, so `--state`, known failures,
  baselines and `--rerun-failed` follow a check across runs and machines.
- Scripts: an API check's setup and teardown scripts come with their path in the project and the
  shared files they import (`setupScriptDependencies`: indexes into the project's sharedFiles), a
  browser check's `script` with its `scriptPath` and `dependencies` the same way; all of them get
  `projectDir` (ours), where the project's node_modules resolve.
Group-level setup and teardown scripts (deprecated in the constructs) are not run: such a group's
checks are refused, never run without them.

Left out, each named in the console with why (`ProjectChecks.left_out`): a heartbeat monitor (passive:
`checkly test` leaves it out too) and a deactivated check (`activated: false`, its own or its
group's; a spec's `target.allowDeactivated` runs it). A Playwright check suite whose
`playwrightVersion` (production installs that one) is not the project's installed @playwright/test
is named too: the installed one runs. Its `codeBundlePath` (the parse's scratch, removed) is dropped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.checkly.synth import Resource, SharedFile, Synthesis
from runner.checks.protocols.browser.setup import project_playwright
from runner.core.text import for_line

# Our namespace for check ids: uuid5(NAMESPACE_URL, this address) once, fixed forever.
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/testsession-runner/checkly-project")
GROUP_SCRIPT_FIELDS = ("localSetupScript", "localTearDownScript", "setupSnippetId", "tearDownSnippetId")


@dataclass(frozen=True)
class ProjectChecks:
    """A project as a source of checks: what a checks file gives (definitions and variables)."""

    name: str
    logical_id: str
    checks: tuple[dict[str, Any], ...]  # production's shape (GET /v1/checks/{id}), plus our few keys
    variables: tuple[dict[str, Any], ...]  # account variables: a project has none
    warnings: tuple[str, ...]
    problems: tuple[str, ...]  # one line each; any is exit 2
    left_out: tuple[str, ...] = ()  # one line each: a check the run leaves out, and why


def check_id(project_logical_id: str, check_logical_id: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"{project_logical_id}/{check_logical_id}"))


def convert(synthesis: Synthesis) -> ProjectChecks:
    payload = synthesis.payload
    groups = {r.logicalId: r.payload for r in payload.resources if r.type == "check-group"}
    shared = payload.sharedFiles
    checks: list[dict[str, Any]] = []
    problems: list[str] = []
    left_out: list[str] = []
    where = f"--checks {synthesis.config}"
    warnings = [f"{where}: checkly says: {w}" for w in synthesis.warnings]
    for resource in payload.resources:
        if resource.type != "check":
            continue  # alert channels, dashboards, maintenance windows: nothing to run
        check, problem = _check(resource, groups, shared, payload.project.logicalId, synthesis.directory)
        name = for_line(str(check.get("name", "")), 200)
        named = f"{where}: check {for_line(resource.logicalId, 200)} ({name!r})"
        if problem:
            problems.append(f"{where}: check {resource.logicalId}: {problem}")
        if check.get("checkType") == "HEARTBEAT":
            left_out.append(f"{named}: left out: a heartbeat monitor is passive (production waits for "
                            "your job's ping); `checkly test` leaves it out too")  # fmt: skip
            continue
        if check.get("activated") is False:
            whose = "its group's" if _group_deactivated(resource, groups) else "its own"
            left_out.append(f"{named}: left out: deactivated (activated: false, {whose}); a spec's "
                            "target.allowDeactivated runs it")  # fmt: skip
        version = _playwright_mismatch(check, synthesis.directory)
        if version:
            warnings.append(f"{named}: {version}")
        checks.append(check)
    return ProjectChecks(
        name=payload.project.name or payload.project.logicalId,
        logical_id=payload.project.logicalId,
        checks=tuple(checks),
        variables=(),
        warnings=tuple(warnings),
        problems=tuple(problems),
        left_out=tuple(left_out),
    )


def _group_deactivated(resource: Resource, groups: dict[str, dict[str, Any]]) -> bool:
    ref = resource.payload.get("groupId")
    group = groups.get(str(ref.get("ref", ""))) if isinstance(ref, dict) else None
    own = resource.payload.get("activated")
    return group is not None and group.get("activated") is False and own is not False


def _playwright_mismatch(check: dict[str, Any], directory: Path) -> str | None:
    """A suite's playwrightVersion (what production installs) against the project's installed one."""
    wanted = check.get("playwrightVersion")
    if check.get("checkType") != "PLAYWRIGHT" or not isinstance(wanted, str) or not wanted:
        return None
    folder = directory / str(check.get("workingDir") or ".")
    installed = project_playwright(folder)
    if installed is None or installed.version == wanted:
        return None  # none installed: the run says what to install
    return (
        f"playwrightVersion {for_line(wanted, 40)} (production installs it), but the project has "
        f"@playwright/test {for_line(installed.version, 40)} installed: that one runs "
        f"(npm install -D @playwright/test@{for_line(wanted, 40)} to run the same)"
    )


def _check(
    resource: Resource,
    groups: dict[str, dict[str, Any]],
    shared: list[SharedFile],
    project: str,
    directory: Path,
) -> tuple[dict[str, Any], str | None]:
    check = dict(resource.payload)
    check["id"] = check_id(project, resource.logicalId)
    check["logicalId"] = resource.logicalId
    check["projectDir"] = str(directory)
    check.pop("codeBundlePath", None)  # the parse's scratch, removed after it: the project runs where it is
    problem = None
    ref = check.get("groupId")
    if isinstance(ref, dict):
        name = str(ref.get("ref", ""))
        group = groups.get(name)
        if group is None:
            problem = f"groupId refers to group {name!r}, which the project does not define"
            check["groupId"] = None
        else:
            check["groupId"] = None  # production's is a number; the group's settings are applied here
            problem = _apply_group(check, group)
    for kind in ("setupScript", "tearDownScript"):
        deps = check.pop(f"{kind}Dependencies", None)
        if deps:
            check.setdefault("sharedFiles", []).extend(_files(deps, shared))
    deps = check.get("dependencies")
    if isinstance(deps, list) and deps:
        check["dependencies"] = _files(deps, shared)
        check.setdefault("sharedFiles", []).extend(check["dependencies"])  # a browser script's imports
    if "sharedFiles" in check:
        check["sharedFiles"] = list({f["path"]: f for f in check["sharedFiles"]}.values())
    return check, problem


def _files(refs: list[Any], shared: list[SharedFile]) -> list[dict[str, str]]:
    """Shared file references (indexes, or {path, content} from another checkly) as {path, content}."""
    out = []
    for ref in refs:
        if isinstance(ref, int) and 0 <= ref < len(shared):
            out.append({"path": shared[ref].path, "content": shared[ref].content})
        elif (
            isinstance(ref, dict) and isinstance(ref.get("path"), str) and isinstance(ref.get("content"), str)
        ):
            out.append({"path": ref["path"], "content": ref["content"]})
    return out


def _apply_group(check: dict[str, Any], group: dict[str, Any]) -> str | None:
    if group.get("activated") is False:
        check["activated"] = False
    tags = [*(check.get("tags") or []), *(group.get("tags") or [])]
    check["tags"] = list(dict.fromkeys(str(t) for t in tags))
    if not check.get("locations") and group.get("locations"):
        check["locations"] = list(group["locations"])
    own = list(check.get("environmentVariables") or [])
    names = {v.get("key") for v in own if isinstance(v, dict)}
    inherited = [
        v
        for v in group.get("environmentVariables") or []
        if isinstance(v, dict) and v.get("key") not in names
    ]
    defaults = group.get("apiCheckDefaults") or {}
    if check.get("checkType") == "API" and isinstance(defaults, dict):
        base = defaults.get("url")
        request = _request_defaults(dict(check.get("request") or {}), defaults)
        if base and "GROUP_BASE_URL" not in names:
            inherited.append({"key": "GROUP_BASE_URL", "value": str(base)})
            # Written in place, so the {{VARIABLES}} of the base URL are filled in like the check's.
            if isinstance(request.get("url"), str):
                request["url"] = request["url"].replace("{{GROUP_BASE_URL}}", str(base))
        check["request"] = request
    # The check's own first: the first of a key wins (check variables trump group variables).
    check["environmentVariables"] = own + inherited
    scripts = [f for f in GROUP_SCRIPT_FIELDS if group.get(f) not in (None, "")]
    if scripts:
        return (
            f"its group {group.get('name', '')!r} has {', '.join(scripts)}, which a run here does not "
            "apply: move the script to the check (setupScript) or leave the group's out"
        )
    return None


def _request_defaults(request: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    for field in ("headers", "queryParameters"):
        own = [p for p in request.get(field) or [] if isinstance(p, dict)]
        names = (
            {str(p.get("key", "")).lower() for p in own}
            if field == "headers"
            else {p.get("key") for p in own}
        )
        extra = []
        for pair in defaults.get(field) or []:
            if not isinstance(pair, dict):
                continue
            key = str(pair.get("key", ""))
            if (key.lower() if field == "headers" else key) not in names:
                extra.append(pair)
        if own or extra:
            request[field] = own + extra
    auth = defaults.get("basicAuth")
    mine = request.get("basicAuth")
    has_own = isinstance(mine, dict) and (mine.get("username") or mine.get("password"))
    if isinstance(auth, dict) and (auth.get("username") or auth.get("password")) and not has_own:
        request["basicAuth"] = auth
    assertions = [a for a in defaults.get("assertions") or [] if isinstance(a, dict)]
    if assertions:
        request["assertions"] = [*(request.get("assertions") or []), *assertions]
    return request
