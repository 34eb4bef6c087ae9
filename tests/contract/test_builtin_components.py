"""Every built-in component passes the opboost.testing contract checks."""

from __future__ import annotations

from opboost.api.component import KINDS
from opboost.core.registry import get_registry
from opboost.testing import parametrize_with_checks


def builtin_classes() -> list[type]:
    """All component classes that the built-in plugins register."""
    registry = get_registry()
    return [
        registry.get(kind, name)
        for kind in KINDS
        for name in registry.names(kind)
        if registry.provider(kind, name).builtin
    ]


@parametrize_with_checks(builtin_classes())
def test_builtin_component(component_class, check):
    """The component passes the check."""
    check(component_class)
