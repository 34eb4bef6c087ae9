"""Hook implementations of the ``xgboost`` opboost plugin.

xgboost is imported inside the hook, so building the registry only pays for it when the
plugin is loaded (and ``OPBOOST_DISABLED_PLUGINS=xgboost`` skips it entirely).
"""

from __future__ import annotations

from opboost.api import hookimpl


@hookimpl
def opboost_register_base_learners():
    """Return ``[XGBoostTree]`` (base learner ``xgboost_tree``)."""
    from opboost_xgboost.tree import XGBoostTree

    return [XGBoostTree]
