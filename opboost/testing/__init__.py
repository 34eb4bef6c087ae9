"""Reusable checks every opboost component must pass, for built-ins and third-party plugins.

In a plugin's test suite, one line per component::

    from opboost.testing import parametrize_with_checks
    from opboost_fancy.plugin import SwitchIPS

    @parametrize_with_checks([SwitchIPS])
    def test_component(component_class, check):
        check(component_class)

A class can declare checks it cannot pass with a reason, on the class itself:
``_unit_test_skips = {"check_name": "why"}``; never in a central ignore list.

``opboost.testing.pytest_plugin`` is loaded by pytest through opboost's ``pytest11``
entry point and adds the ``opboost_registry`` fixture (a freshly built registry).
"""

from opboost.testing.checks import all_checks, parametrize_with_checks

__all__ = ["all_checks", "parametrize_with_checks"]
