"""Boosting objectives: risks, gradients, base-learning problems and closed-form steps."""

from opboost.api.objective import REDUCTIONS, Objective, RoundState, softmax
from opboost.objectives.bopl import BOPL
from opboost.objectives.bopl_s import BOPLS
from opboost.objectives.variance import SNIPSObjective, VariancePenalised

__all__ = [
    "BOPL",
    "BOPLS",
    "REDUCTIONS",
    "Objective",
    "RoundState",
    "SNIPSObjective",
    "VariancePenalised",
    "softmax",
]
