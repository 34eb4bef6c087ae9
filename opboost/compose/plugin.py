"""The learners composed from others, registered through the same hook a third-party plugin
uses: ``policy_choice`` (a label-free choice among boosters and baselines) and
``dr_reduction`` (regressors on the doubly robust estimator's pseudo-rewards)."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_policy_learners():
    from opboost.compose.choice import PolicyChoice
    from opboost.compose.dr_reduction import DRReduction

    return [PolicyChoice, DRReduction]
