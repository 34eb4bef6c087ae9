"""Built-in contextual-bandit online learners, registered through the public hook."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_online_learners():
    from opboost.online.banditron import Banditron
    from opboost.online.chen_bandit_boost import ChenBanditBoost
    from opboost.online.conservative_ova import ConservativeOVA
    from opboost.online.linear_bandits import EpsilonGreedyLinear, LinUCB

    return [ChenBanditBoost, Banditron, ConservativeOVA, LinUCB, EpsilonGreedyLinear]
