"""The opboost pytest plugin, for plugin authors' test suites.

Installed with opboost through the ``pytest11`` entry point, so every pytest session in an
environment with opboost has it (``pytest -p no:opboost`` turns it off). It provides:

``opboost_registry`` (fixture)
    A freshly built :class:`opboost.core.registry.Registry` -- built-ins plus every installed,
    unblocked entry-point plugin, honouring the ``OPBOOST_*`` environment variables -- and
    forgotten again after the test, so installs, blocks and monkeypatched entry points made
    by the test (or before it) are seen and do not leak.
``parametrize_with_checks`` (re-exported)
    The contract checks of :mod:`opboost.testing`, one test per (component, check)::

        from opboost.testing import parametrize_with_checks
        from opboost_fancy.plugin import SwitchIPS

        @parametrize_with_checks([SwitchIPS])
        def test_component(component_class, check):
            check(component_class)

Importing this module is cheap: opboost's components load on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from opboost.core.registry import Registry

__all__ = ["opboost_registry", "parametrize_with_checks"]  # noqa: F822 - lazy, see __getattr__


def __getattr__(name: str) -> Any:
    if name == "parametrize_with_checks":
        from opboost.testing.checks import parametrize_with_checks

        return parametrize_with_checks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@pytest.fixture
def opboost_registry() -> Iterator[Registry]:
    """A freshly built plugin registry (built-ins + installed plugins), reset afterwards."""
    from opboost.core.registry import get_registry, reset_registry

    reset_registry()
    try:
        yield get_registry()
    finally:
        reset_registry()
