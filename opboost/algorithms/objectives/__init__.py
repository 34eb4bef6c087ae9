"""Boosting objectives: risks, gradients, base-learning problems and closed-form steps."""

from opboost.algorithms.objectives.bopl import BOPL
from opboost.algorithms.objectives.bopl_s import BOPLS
from opboost.algorithms.objectives.variance import SNIPSObjective, VariancePenalised
from opboost.api.objective import REDUCTIONS, Objective, RoundState, softmax

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
