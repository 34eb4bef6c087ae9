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


#: Packages that kept the names their old module had, each from the module that defines it.
COMPAT_PACKAGES = ("opboost.compose.config", "opboost.compose.study")


@pytest.mark.parametrize("package", COMPAT_PACKAGES)
def test_a_compat_package_gives_each_name_from_its_one_home(package):
    """One name, one home: each old name of the package is in the ``__all__`` of exactly one
    module of opboost.compose, the module it is loaded from (no module re-exports another's)."""
    compose = importlib.import_module("opboost.compose")
    modules = [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(compose.__path__, "opboost.compose.")
        if m.name not in COMPAT_PACKAGES
    ]
    pkg = importlib.import_module(package)
    homes = {n: [m for m in modules if n in getattr(m, "__all__", ())] for n in pkg.__all__}
    assert {n: [m.__name__ for m in ms] for n, ms in homes.items() if len(ms) != 1} == {}
    assert [n for n, (home,) in homes.items() if getattr(pkg, n) is not getattr(home, n)] == []
