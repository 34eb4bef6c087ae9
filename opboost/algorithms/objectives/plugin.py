"""Built-in objectives, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_objectives():
    from opboost.algorithms.objectives.bopl import BOPL
    from opboost.algorithms.objectives.bopl_s import BOPLS
    from opboost.algorithms.objectives.variance import SNIPSObjective, VariancePenalised

    return [BOPL, BOPLS, SNIPSObjective, VariancePenalised]
