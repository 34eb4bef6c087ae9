"""Lazy package attributes: a package lists its public names and where they live, and each is
imported on first access (so ``import opboost.algorithms.online`` loads neither river nor
lightgbm)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, table: Mapping[str, str | tuple[str, str | None]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package`` whose ``namespace`` (its
    ``globals()``) gets each name of ``table`` on first access. ``table`` maps a name to the
    module holding it (same attribute name), or to ``(module, attribute)``; attribute None
    means the module itself. Assign the pair to the package's ``__getattr__, __dir__``."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, attr = (where, name) if isinstance(where, str) else where
        module = importlib.import_module(module_name)
        value = module if attr is None else getattr(module, attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
