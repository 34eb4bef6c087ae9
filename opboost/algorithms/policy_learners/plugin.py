"""Built-in policy learners, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_policy_learners():
    from opboost.algorithms.policy_learners.reward_regression import RewardRegression
    from opboost.algorithms.policy_learners.slate_boost import SlateBooster

    return [RewardRegression, SlateBooster]
