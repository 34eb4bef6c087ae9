"""Lazy package attributes: a package lists its public names and where they live, and each is
imported on first access (so ``import opboost.algorithms.online`` loads neither river nor lightgbm).
And moved modules: an old import path that still imports the module now living elsewhere."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["MovedModules", "lazy_attributes"]


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


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Old import paths of moved modules, kept working: ``moved`` maps an old dotted path
    (a module, or a package with everything under it) to where it lives now. Importing an old
    path gives the very module object of the new one (the same classes, loaded once); the
    longest old path that matches wins. :meth:`install` puts the finder first on
    ``sys.meta_path``, so a package's old path never loads its files a second time."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = sorted(moved.items(), key=lambda item: -len(item[0]))
        self.specs: dict[str, Any] = {}

    def target(self, name: str) -> str | None:
        """Where the module imported as ``name`` lives now, or None if it did not move."""
        for old, new in self.moved:
            if name == old or name.startswith(old + "."):
                return new + name[len(old) :]
        return None

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if self.target(name) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(self.target(spec.name))
        self.specs[spec.name] = module.__spec__  # the import system overwrites it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        for name, spec in list(self.specs.items()):
            if spec is not None and sys.modules.get(name) is module:
                module.__spec__ = spec  # the module keeps its own name and location
                del self.specs[name]

    def install(self) -> None:
        """Put this finder first on ``sys.meta_path`` (once)."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
