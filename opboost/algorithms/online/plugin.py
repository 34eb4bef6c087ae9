"""Built-in contextual-bandit online learners, registered through the public hook."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_online_learners():
    from opboost.algorithms.online.banditron import Banditron
    from opboost.algorithms.online.chen_bandit_boost import ChenBanditBoost
    from opboost.algorithms.online.conservative_ova import ConservativeOVA
    from opboost.algorithms.online.linear_bandits import EpsilonGreedyLinear, LinUCB

    return [ChenBanditBoost, Banditron, ConservativeOVA, LinUCB, EpsilonGreedyLinear]
