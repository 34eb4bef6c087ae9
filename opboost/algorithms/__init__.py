"""The built-in algorithms, one package per family, each a plugin like a third party's:

``objectives`` (losses on the scores F: BOPL, BOPL-S, SNIPS, POEM), ``estimators`` (training
coefficients and value estimates: IPS, truncated IPS, SNIPS, DM, DR), ``learners`` (base
learners: LightGBM and scikit-learn trees, the reward-model starts), ``online`` (online
boosting with bandit or loss feedback) and ``policy_learners`` (whole-policy learners: the
reward regression). They import the SDK (:mod:`opboost.api`), the LightGBM ones the LightGBM
toolkit (:mod:`opboost.lgbm`) too, and nothing of each other; the core finds them by name
through the registry, and they register through the same entry points as a third-party
plugin.
"""

from __future__ import annotations

__all__: list[str] = []
