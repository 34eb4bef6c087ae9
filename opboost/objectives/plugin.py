"""Built-in objectives, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from opboost.api.hookspecs import hookimpl


@hookimpl
def opboost_register_objectives():
    from opboost.objectives.bopl import BOPL
    from opboost.objectives.bopl_s import BOPLS
    from opboost.objectives.variance import SNIPSObjective, VariancePenalised

    return [BOPL, BOPLS, SNIPSObjective, VariancePenalised]
