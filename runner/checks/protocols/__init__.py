"""One protocol per check type (base.py says what a protocol is and how to add one).

`REGISTRY` maps a checkType to the module under this package that defines its `PROTOCOL`, as the
one table of check kinds declares it (models/check_definitions.py CHECK_KINDS); the module is
imported only when a check of that type runs (libcurl, dnspython: only when needed).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from runner.models.check_definitions import CHECK_KINDS

if TYPE_CHECKING:
    from runner.checks.protocols.base import CheckProtocol

# checkType -> module, as the table of check kinds says (models/check_definitions.py CHECK_KINDS).
REGISTRY: dict[str, str] = {name: kind.protocol for name, kind in CHECK_KINDS.items() if kind.protocol}

# Types whose protocol queues its own attempts under a limit of its own (browser runs: at most
# TESTSESSION_BROWSER_CONCURRENCY browsers, checks that are ready together share one Playwright run,
# browser/batch.py): an executor runs them without holding one of its workers while they wait, or the
# checks queued behind its limit could not join a run (and API checks would wait behind browsers).
SELF_QUEUED: frozenset[str] = frozenset(name for name, kind in CHECK_KINDS.items() if kind.self_queued)


@functools.cache
def protocol_for(check_type: str) -> CheckProtocol[Any] | None:
    """The protocol that runs checks of `check_type`; None when no protocol does."""
    module = REGISTRY.get(check_type)
    if module is None:
        return None
    protocol: CheckProtocol[Any] = importlib.import_module(f"{__name__}.{module}").PROTOCOL
    return protocol
