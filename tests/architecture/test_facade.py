"""The facades. ``opboost.api`` exports the plugin contract and nothing else: at most 90 names
in three groups (the interfaces a plugin implements, the data it receives, the helpers it may
call), each the object its defining module under ``opboost.api`` exports, none from the
LightGBM toolkit (``opboost.lgbm``), and every component kind's base class among the
interfaces; the rest of the SDK (the kit: data, numerics, serving, files, exceptions, ...) is
imported by its module path. ``opboost`` exports every public name of the modules a user of
the Booster meets."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import opboost
import opboost.api
from opboost.api.component import Component

SDK_MODULES = sorted(m.name for m in pkgutil.walk_packages(opboost.api.__path__, "opboost.api."))
#: The contract's groups: name -> (group, the module under opboost.api that defines it).
CONTRACT = {
    name: (group, module)
    for group, names in opboost.api._GROUPS.items()
    for name, module in names.items()
}


def test_the_contract_is_at_most_90_names_in_three_groups():
    assert list(opboost.api._GROUPS) == ["interfaces", "data", "helpers"]
    assert sum(len(names) for names in opboost.api._GROUPS.values()) == len(CONTRACT)
    assert sorted(CONTRACT) == opboost.api.__all__
    assert len(opboost.api.__all__) <= 90
    assert [n for n in opboost.api.__all__ if not hasattr(opboost.api, n)] == []


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_each_contract_name_is_its_modules_public_name(name):
    _, home = CONTRACT[name]
    module = importlib.import_module(f"opboost.api.{home}")
    assert name in module.__all__
    assert getattr(opboost.api, name) is getattr(module, name)


def test_no_contract_name_comes_from_the_lightgbm_toolkit():
    defined_in = {n: getattr(getattr(opboost.api, n), "__module__", "") for n in CONTRACT}
    assert [n for n, m in defined_in.items() if m and m.startswith("opboost.lgbm")] == []
    assert [n for n, (_, home) in CONTRACT.items() if "lgbm" in home] == []


def test_every_component_kinds_base_class_is_an_interface():
    """A class of an SDK module deriving from Component (a kind's base class) is on the
    contract, among the interfaces."""
    bases = {
        n
        for name in SDK_MODULES
        for n in importlib.import_module(name).__all__
        if inspect.isclass(cls := getattr(importlib.import_module(name), n))
        and issubclass(cls, Component)
    }
    assert len(bases) >= 10
    assert {n: CONTRACT.get(n, ("missing",))[0] for n in bases} == dict.fromkeys(
        bases, "interfaces"
    )


def test_the_kit_is_not_all_reexported():
    """Below the contract, e.g. the softmax's log-normaliser and the file writes, by path."""
    from opboost.api.files.atomic import write_atomic
    from opboost.api.numerics.softmax import softmax, softmax_and_log_norm

    assert opboost.api.softmax is softmax
    assert "softmax_and_log_norm" not in opboost.api.__all__ and callable(softmax_and_log_norm)
    assert "write_atomic" not in opboost.api.__all__ and callable(write_atomic)
    with pytest.raises(AttributeError, match="write_atomic"):
        _ = opboost.api.write_atomic


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


GUIDE = Path(__file__).parents[2] / "docs" / "plugins.md"
#: The guide's headings of the contract's groups, in order.
GUIDE_GROUPS = {
    "interfaces": "**The interfaces a plugin implements**",
    "data": "**The data it receives (and hands back)**",
    "helpers": "**The helpers it may call**",
}


def _guide_section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_plugin_guide_lists_the_contract_grouped():
    """docs/plugins.md's "The contract" names each group's names, and no other."""
    contract = _guide_section(GUIDE.read_text(encoding="utf-8"), "## The contract")
    starts = [contract.index(heading) for heading in GUIDE_GROUPS.values()]
    assert starts == sorted(starts)
    parts = [contract[a:b] for a, b in zip(starts, [*starts[1:], len(contract)], strict=True)]
    listed = {
        group: set(re.findall(r"`(\w+)`", part))
        for group, part in zip(GUIDE_GROUPS, parts, strict=True)
    }
    assert listed == {group: set(names) for group, names in opboost.api._GROUPS.items()}


def _guide_sdk_uses(text: str) -> list[str]:
    """What the guide uses of the SDK off the contract: a module path under ``opboost.api``
    (``opboost.api.numerics.softmax``) or a name outside ``opboost.api.__all__``, in its prose
    or its code."""
    uses = [
        m.group(1)
        for m in re.finditer(r"\bopboost\.api((?:\.\w+)+)", text)
        if m.group(1)[1:] not in opboost.api.__all__ and m.group(1) != ".__all__"
    ]
    for names in re.findall(r"from opboost\.api import (\([^)]*\)|[\w ,]+)", text):
        uses += [n for n in re.findall(r"\w+", names) if n not in opboost.api.__all__]
    return uses


def test_the_plugin_guide_uses_only_the_contracts_names():
    """Except where it says that the rest of the SDK is no part of the contract."""
    text = GUIDE.read_text(encoding="utf-8")
    assert _guide_sdk_uses(text) == [".numerics"]  # "... such as `opboost.api.numerics`"
    assert _guide_sdk_uses(
        "from opboost.api import Estimator, one_hot\nuse `opboost.api.constraints.Interval`\n"
    ) == [".constraints.Interval", "one_hot"]


def test_each_class_of_the_contract_has_an_example():
    """Each class of ``opboost.api.__all__`` is used in a Python block of the API reference
    (docs/api/*.md, whose blocks the docs test runs)."""
    pages = sorted((Path(__file__).parents[2] / "docs" / "api").glob("*.md"))
    code = "\n".join(
        block
        for page in pages
        for block in re.findall(r"^```python\n(.*?)^```", page.read_text("utf-8"), re.S | re.M)
    )
    classes = [n for n in opboost.api.__all__ if inspect.isclass(getattr(opboost.api, n))]
    assert len(classes) >= 40
    assert [n for n in classes if not re.search(rf"\b{n}\b", code)] == []
