"""One protocol per check type (base.py says what a protocol is and how to add one).

`REGISTRY` maps a checkType to the module under this package that defines its `PROTOCOL`; the
module is imported only when a check of that type runs (libcurl, dnspython: only when needed).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.checks.protocols.base import CheckProtocol

# checkType -> module: one line per protocol.
REGISTRY: dict[str, str] = {
    "API": "http",
    "URL": "http",
    "TCP": "tcp",
    "DNS": "dns",
    "BROWSER": "browser",
    "MULTI_STEP": "browser",
    "ICMP": "icmp",
    "TRACEROUTE": "traceroute",
    "GRPC": "grpc_monitor",
    "SSL": "ssl_monitor",
    "PLAYWRIGHT": "playwright",
}

# Types whose protocol queues its own attempts under a limit of its own (browser runs: at most
# TESTSESSION_BROWSER_CONCURRENCY browsers, checks that are ready together share one Playwright run,
# browser/batch.py): an executor runs them without holding one of its workers while they wait, or the
# checks queued behind its limit could not join a run (and API checks would wait behind browsers).
SELF_QUEUED: frozenset[str] = frozenset({"BROWSER", "MULTI_STEP"})


@functools.cache
def protocol_for(check_type: str) -> CheckProtocol[Any] | None:
    """The protocol that runs checks of `check_type`; None when no protocol does."""
    module = REGISTRY.get(check_type)
    if module is None:
        return None
    protocol: CheckProtocol[Any] = importlib.import_module(f"{__name__}.{module}").PROTOCOL
    return protocol
