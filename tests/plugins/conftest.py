"""Fixtures for plugin-system tests: fake entry-point distributions and a clean registry."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from collections.abc import Callable, Iterator

import pytest

from opboost.core.registry import reset_registry


class FakeDistribution:
    """The slice of ``importlib.metadata.Distribution`` the registry reads."""

    def __init__(self, name: str, version: str, entry_points: list):
        self.metadata = {"Name": name}
        self.version = version
        self.entry_points = entry_points


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh registry before and after the test, with no plugin env variables set."""
    for var in (
        "OPBOOST_DISABLE_PLUGIN_AUTOLOAD",
        "OPBOOST_DISABLED_PLUGINS",
        "OPBOOST_TRACE_PLUGINS",
    ):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield
    reset_registry()


@pytest.fixture
def fake_plugins(monkeypatch: pytest.MonkeyPatch, clean_registry: None) -> Callable[..., None]:
    """Install fake plugins: ``add(entry_name, module, dist="opboost-fake", version="1.0")``.

    ``module`` is a module object (registered in sys.modules) or a dotted import path that
    may fail to import. Only these fake distributions and opboost itself (the built-in
    plugins) are visible to the registry.
    """
    dists: list = [importlib.metadata.distribution("opboost")]  # the built-ins stay
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: list(dists))

    def add(
        entry_name: str,
        module: types.ModuleType | str,
        dist: str = "opboost-fake",
        version: str = "1.0",
    ) -> None:
        if isinstance(module, types.ModuleType):
            monkeypatch.setitem(sys.modules, module.__name__, module)
            value = module.__name__
        else:
            value = module
        ep = importlib.metadata.EntryPoint(name=entry_name, value=value, group="opboost")
        dists.append(FakeDistribution(dist, version, [ep]))
        reset_registry()

    return add
