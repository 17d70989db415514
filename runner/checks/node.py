"""Node.js children of a check run: found, given a clean environment, bounded, and ended with everything
they started.

Used by BROWSER and MULTI_STEP checks (Playwright) and by API checks' setup and teardown scripts. The
whole API:

    tools = find_node()                       # NodeTools(node, npm, npx, version); NodeMissing if none >= 18
    env = child_environment(variables)        # a fresh environment: what Node needs + the check's variables
    result = run_child([str(tools.node), "script.js"], cwd=folder, env=env,
                       deadline=time.monotonic() + 30, stop=stop_event)
    result.returncode, result.stdout, result.stderr, result.timed_out, result.cancelled

Rules (docs/checks.md, "Node children"):
- The environment is built from scratch: PATH, HOME, the locale, the time zone, the temp folder, the
  proxy settings and the CA settings Node and npm read are taken from ours (KEPT); nothing else of the
  runner's environment (a CI job's tokens) reaches the script. The check's variables come on top
  (`variables`, already merged strongest first by the caller) as `process.env`, except that they do not
  replace PATH, HOME, NODE_OPTIONS or NODE_PATH (which would change what runs, not what is checked).
- `run_child` and `ChildResult` are runner/checks/child.py's (re-exported here): the one child-process
  runner of the engine (process group, token sweep, bounded output, deadline and stop).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.checks.child import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_OUTPUT_CAP,
    POLL_SECONDS,
    TOKEN_VARIABLE,
    ChildResult,
    end_all,
    run_child,
)

__all__ = [
    "DEFAULT_GRACE_SECONDS", "DEFAULT_OUTPUT_CAP", "KEPT", "MIN_NODE", "POLL_SECONDS", "PROTECTED",
    "TOKEN_VARIABLE", "ChildResult", "NodeMissing", "NodeTools", "child_environment", "end_all",
    "find_node", "run_child",
]  # fmt: skip

MIN_NODE = (18, 0, 0)

# Taken from our environment: what Node, npm and a browser need to run, find a proxy and trust a CA.
KEPT = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SHELL",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "FONTCONFIG_PATH",
    "npm_config_registry", "NPM_CONFIG_REGISTRY", "npm_config_cache", "NPM_CONFIG_CACHE",
    "npm_config_userconfig", "NPM_CONFIG_USERCONFIG",
})  # fmt: skip
KEPT_PREFIXES = ("LC_",)
# A check variable of one of these names is not passed: it would change what runs.
PROTECTED = frozenset({"PATH", "HOME", "NODE_OPTIONS", "NODE_PATH", TOKEN_VARIABLE})


class NodeMissing(Exception):
    """No usable Node.js: the message says what was found and what to install."""


@dataclass(frozen=True)
class NodeTools:
    node: Path
    npm: Path | None
    npx: Path | None
    version: tuple[int, int, int]


def find_node(path: str | None = None) -> NodeTools:
    """Node >= 18 and its npm/npx on `path` (default: our PATH); NodeMissing says what to install."""
    node = shutil.which("node", path=path) or shutil.which("nodejs", path=path)
    if node is None:
        raise NodeMissing(
            "Node.js 18 or newer is needed and none is on PATH: install it (apt-get install nodejs npm)"
        )
    version = _version(node)
    if version is None or version < MIN_NODE:
        shown = ".".join(map(str, version)) if version else "an unknown version"
        raise NodeMissing(f"Node.js 18 or newer is needed; {node} is {shown}: install a newer one")
    npm, npx = shutil.which("npm", path=path), shutil.which("npx", path=path)
    return NodeTools(Path(node), Path(npm) if npm else None, Path(npx) if npx else None, version)


_VERSIONS: dict[str, tuple[int, int, int] | None] = {}


def _version(node: str) -> tuple[int, int, int] | None:
    if node not in _VERSIONS:
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=False)
            match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.stdout.strip())
            _VERSIONS[node] = (int(match[1]), int(match[2]), int(match[3])) if match else None
        except (OSError, subprocess.TimeoutExpired):
            _VERSIONS[node] = None
    return _VERSIONS[node]


def child_environment(
    variables: Mapping[str, str] = {},
    *,
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] = {},
) -> dict[str, str]:
    """A fresh environment: KEPT of `base` (default os.environ), then `variables`, then `extra` (ours)."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("HOME", tempfile.gettempdir())
    env.setdefault("LANG", "C.UTF-8")
    for key, value in variables.items():
        if key not in PROTECTED and key and "=" not in key and "\0" not in key + value:
            env[key] = value
    env.update(extra)
    return env
