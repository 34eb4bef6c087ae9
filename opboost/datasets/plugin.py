"""Built-in data sets, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.hookspecs import hookimpl


@hookimpl
def opboost_register_datasets():
    from opboost.datasets.bundled import Diabetes, Digits, SyntheticMulticlass, Wine

    return [Digits, Wine, Diabetes, SyntheticMulticlass]
