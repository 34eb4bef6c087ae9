"""Hook implementations of the ``vw`` opboost plugin (vowpalwabbit is imported lazily)."""

from __future__ import annotations

from opboost.api import hookimpl


@hookimpl
def opboost_register_online_learners():
    """Return ``[VWCBExplore]`` (online learner ``vw_cb_explore``)."""
    from opboost_vw.explore import VWCBExplore

    return [VWCBExplore]


@hookimpl
def opboost_register_policy_learners():
    """Return ``[VWOfflinePolicy]`` (policy learner ``vw_cb_adf``)."""
    from opboost_vw.offline import VWOfflinePolicy

    return [VWOfflinePolicy]
