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


#: The modules a user of the Booster meets, each of whose public names ``opboost`` exports.
USER_MODULES = (
    "opboost.api.exceptions",
    "opboost.core.booster",
    "opboost.core.callbacks",
    "opboost.core.metrics",
    "opboost.core.policy_loading",
    "opboost.core.registry",
)


@pytest.mark.parametrize("name", USER_MODULES)
def test_opboost_exports_every_public_name_of_the_user_modules(name):
    module = importlib.import_module(name)
    assert [n for n in module.__all__ if getattr(opboost, n, None) is not getattr(module, n)] == []
    assert set(module.__all__) <= set(opboost.__all__)


def test_opboost_names_resolve():
    assert [n for n in opboost.__all__ if not hasattr(opboost, n)] == []
