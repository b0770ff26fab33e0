"""Lazy re-exports (PEP 562) for the packages' `__init__`, written once for liger/, records/ and reporting/.

A package lists `{name: submodule}`; a name is imported from its submodule on first use and then kept
in the package's namespace, so importing a light submodule (`liger.catalogue`, `records.units`,
`detection.changepoints`) never loads what the package re-exports from heavy ones (pandas, numpy, the
pydantic schema).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level `__getattr__` and `__dir__` for `exports` ({name: submodule})."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
