"""The learners composed from others, registered through the same hook a third-party plugin
uses: ``policy_choice`` (a label-free choice among boosters and baselines)."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_policy_learners():
    from opboost.compose.choice import PolicyChoice

    return [PolicyChoice]
