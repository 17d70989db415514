"""A package's names loaded on first use (PEP 562): importing one module of a package does not load
the others (libcurl for the engine, the ~100 resource models, the client's operation table)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, home: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: `home` maps a name to the module of `package` that defines it."""

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
