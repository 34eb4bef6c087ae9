"""The facades export every public name: ``opboost.api`` every name in the ``__all__`` of
every SDK module (the same object), and ``opboost`` every public name of the modules a user
of the Booster meets."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import opboost
import opboost.api

SDK_MODULES = sorted(m.name for m in pkgutil.walk_packages(opboost.api.__path__, "opboost.api."))


@pytest.mark.parametrize("name", SDK_MODULES)
def test_the_sdk_exports_every_public_name(name):
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if n not in opboost.api.__all__]
    assert missing == []
    assert [n for n in module.__all__ if getattr(opboost.api, n) is not getattr(module, n)] == []


def test_each_sdk_name_means_one_thing():
    """A name in two modules' ``__all__`` is one object (re-exported), never two."""
    seen: dict[str, object] = {}
    clashes = []
    for name in SDK_MODULES:
        module = importlib.import_module(name)
        for n in module.__all__:
            value = getattr(module, n)
            if seen.setdefault(n, value) is not value:
                clashes.append(f"{name}.{n}")
    assert clashes == []
