"""Variance-aware objectives: self-normalised IPS and sample-variance penalised IPS.

Both are smooth functions of the logged-action probabilities pi_i = pi(a_i | x_i) whose
gradient has the BOPL form -(1/n) c'_i pi_i g_i with *effective* coefficients c'_i that depend
on the current policy (g_i = e_{a_i} - pi(x_i)). Each round therefore freezes c' and reuses
BOPL's reductions and smoothness bound (xi_i = pi_i, sigma_i = 1/2):

``snips`` (Swaminathan & Joachims 2015b; BanditNet, Joachims et al. 2018)
    R(F) = -A / S with A = (1/n) sum_i c_i pi_i and S = (1/n) sum_i w_i pi_i, w_i the
    importance weight 1/p_i (clipped at ``max_weight``; c_i = w_i r_i for IPS). Its gradient
    is -(1/(n S)) (c_i - V w_i) pi_i g_i with V = A / S, i.e. BOPL's gradient for the rewards
    translated by -V and rescaled by 1/S: the BanditNet equivalence, with the translation
    chosen by the data (the current SNIPS value) every round. c'_i = (c_i - V w_i) / S.

``poem`` (counterfactual risk minimisation, Swaminathan & Joachims 2015a)
    R(F) = -mean(u) + lambda sqrt(Var(u) / n), u_i = c_i pi_i, Var with n - 1 degrees of
    freedom. Its gradient is -(1/n) c'_i pi_i g_i with
    c'_i = c_i (1 - lambda sqrt(n) (u_i - mean(u)) / ((n - 1) sqrt(Var(u)))).
    Rows whose u_i is above the mean get less weight: the penalty pulls the policy towards
    low-variance importance-weighted rewards. lambda = 0 is BOPL.

Step: the closed-form minimiser of the frozen-coefficient smoothness bound,
alpha_0 = sum c'_i pi_i g_i^T f_i / (sum |c'_i| ||f_i||^2 / 2 + 2 n l2), is exact for BOPL but
only a local model here (V, S and Var change with F), so it is followed by a backtracking line
search on the exact (penalised) risk: alpha_0, alpha_0 / 2, ... until
R(F + alpha f) + l2 alpha^2 <= R(F); 0 when no halving within ``max_halvings`` decreases it.
The risk therefore never increases from round to round.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from numbers import Real
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Interval
from opboost.api.data.logged import LoggedBandit
from opboost.api.numerics.arrays import dot
from opboost.api.objective import (
    Objective,
    RoundState,
    check_inputs,
    policy_terms,
    softmax_and_log_norm,
)

__all__ = ["SNIPSObjective", "VariancePenalised"]

#: Halvings of the closed-form step tried by the backtracking line search.
MAX_HALVINGS = 30


@dataclass(frozen=True, eq=False)
class EffectiveState(RoundState):
    """A ``RoundState`` whose ``coef`` are the effective coefficients c' (n,).

    ``raw_coef`` c (n,) from the estimator, ``weights`` w (n,) importance weights, ``risk``
    the exact risk at ``scores``.
    """

    raw_coef: np.ndarray
    weights: np.ndarray
    risk: float


class _EffectiveCoefObjective(Objective):
    """BOPL's structure on per-round effective coefficients, with a backtracking step."""

    def xi_sigma(self, coef: np.ndarray, pi_logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return pi_logged, np.full_like(pi_logged, 0.5)

    def _weights(self, data: LoggedBandit) -> np.ndarray:
        """Importance weights 1/p_i (n,); subclasses may clip them."""
        return 1.0 / np.asarray(data.propensities, dtype=np.float64)

    @abstractmethod
    def _risk_and_coef(
        self, coef: np.ndarray, weights: np.ndarray, pi_logged: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """The exact risk and the effective coefficients c' (n,) at pi_logged (n,)."""

    def round_state(self, scores: np.ndarray, data: LoggedBandit, coef: np.ndarray) -> RoundState:
        scores, coef = check_inputs(scores, data, coef, type(self).__name__)
        self.validate_params()
        actions = np.asarray(data.actions)
        # the softmax the line search computed for the step just taken, if these scores are
        # exactly F + alpha f (the usual commit): one softmax less per round
        stepped = self.__dict__.pop("_stepped", None)
        softmax = stepped[1] if stepped is not None and np.array_equal(scores, stepped[0]) else None
        probs, pi_logged, g, log_norm = policy_terms(scores, actions, softmax=softmax)
        weights = self._weights(data)
        risk, effective = self._risk_and_coef(coef, weights, pi_logged)
        xi, sigma = self.xi_sigma(effective, pi_logged)
        return EffectiveState(
            scores=scores,
            probs=probs,
            coef=effective,
            actions=actions,
            pi_logged=pi_logged,
            g=g,
            xi=xi,
            sigma=sigma,
            log_norm=log_norm,
            raw_coef=coef,
            weights=weights,
            risk=risk,
        )

    def risk_at(self, state: RoundState) -> float:
        return float(state.risk)

    def step_at(self, state: RoundState, f_values: np.ndarray, *, l2: float = 0.0) -> float:
        """Closed-form step of the frozen-coefficient bound, then backtracking on the risk."""
        alpha = super().step_at(state, f_values, l2=l2)
        if alpha == 0.0:
            return 0.0
        rows = np.arange(state.n)
        for _ in range(MAX_HALVINGS):
            trial = state.scores + alpha * f_values
            policy = softmax_and_log_norm(trial)
            risk, _ = self._risk_and_coef(
                state.raw_coef, state.weights, policy[0][rows, state.actions]
            )
            if risk + l2 * alpha**2 <= state.risk:
                self._stepped = (trial, policy)  # round_state reuses it (F + alpha f)
                return float(alpha)
            alpha *= 0.5
        return 0.0


class SNIPSObjective(_EffectiveCoefObjective):
    """Self-normalised IPS risk -sum c_i pi_i / sum w_i pi_i (see the module docstring).

    Parameters
    ----------
    max_weight
        M > 0 clips the normaliser's importance weights, w_i = min(1/p_i, M); use
        the same M as ``truncated_ips`` when training with it. ``inf`` (default) no clipping.
    """

    name: ClassVar[str] = "snips"

    _parameter_constraints: ClassVar[dict] = {
        "max_weight": [
            Interval(Real, 0.0, None, closed="neither", fix="use inf to disable clipping")
        ]
    }

    def __init__(self, *, max_weight: float = math.inf) -> None:
        self.max_weight = max_weight

    def _weights(self, data: LoggedBandit) -> np.ndarray:
        return np.minimum(super()._weights(data), float(self.max_weight))

    def _risk_and_coef(
        self, coef: np.ndarray, weights: np.ndarray, pi_logged: np.ndarray
    ) -> tuple[float, np.ndarray]:
        n = len(coef)
        numerator = dot(coef, pi_logged) / n
        normaliser = dot(weights, pi_logged) / n
        value = numerator / normaliser
        return -value, (coef - value * weights) / normaliser


class VariancePenalised(_EffectiveCoefObjective):
    """Sample-variance penalised IPS risk -mean(u) + lambda sqrt(Var(u)/n), u_i = c_i pi_i.

    Parameters
    ----------
    variance_penalty
        lambda >= 0; 0 gives BOPL's risk. POEM's default range is 0.01-1.
    """

    name: ClassVar[str] = "poem"
    inert_zero_rows: ClassVar[bool] = True  # u_i = c_i pi_i = 0 and c'_i = 0 when c_i = 0

    _parameter_constraints: ClassVar[dict] = {
        "variance_penalty": [
            Interval(Real, 0.0, None, fix="use 0.0 for the plain IPS risk or a value such as 0.1")
        ]
    }

    def __init__(self, *, variance_penalty: float = 0.1) -> None:
        self.variance_penalty = variance_penalty

    def _risk_and_coef(
        self, coef: np.ndarray, weights: np.ndarray, pi_logged: np.ndarray
    ) -> tuple[float, np.ndarray]:
        n = len(coef)
        lam = float(self.variance_penalty)
        u = coef * pi_logged
        mean = float(u.mean())
        if n < 2 or lam == 0.0:
            return -mean, coef.copy()
        centred = u - mean
        var = dot(centred, centred) / (n - 1)
        if not var > 0.0:  # sqrt is not differentiable at 0: use the subgradient 0
            return -mean, coef.copy()
        sd = math.sqrt(var)
        risk = -mean + lam * sd / math.sqrt(n)
        return risk, coef * (1.0 - lam * math.sqrt(n) * centred / ((n - 1) * sd))
