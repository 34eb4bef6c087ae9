"""Base class of boosting objectives (kind "objective") and the per-round state they share.

An objective maps the ensemble scores F (n, K), the logged data and the estimator's training
coefficients c (n,) to a risk, its gradient, a base-learning problem and a closed-form step.
Policy pi = softmax(F); g_i = e_{a_i} - pi(x_i); pi_i = pi(a_i | x_i).

Per-action coefficients (doubly robust training). An estimator may instead give an (n, K)
matrix Gamma, the value estimate V(pi) = (1/n) sum_i <pi(x_i), Gamma_i> (IPS: Gamma_i =
c_i e_{a_i}; DR: Gamma_i(a) = q(x_i, a) + 1[a = a_i] (r_i - q(x_i, a_i)) / p_i). V changes by
a constant under Gamma_i <- Gamma_i - b_i, so objectives that accept a matrix
(``supports_action_coefficients``) centre every row on its median first (the shift that
minimises sum_a |Gamma_i(a) - b_i|, hence the curvature below). Each then gives, per row, the
ascent direction u_i = -n dR/dF_i (n, K) and a curvature kappa_i (n,) with

    R(F + alpha f) <= R(F) - (alpha / n) sum_i u_i^T f_i + (alpha^2 / 2n) sum_i kappa_i ||f_i||^2,

so the step is alpha = sum u_i^T f_i / sum kappa_i ||f_i||^2, the regression reduction fits
targets u_i / kappa_i with weights kappa_i, and the classification reduction labels
sign(u_{i,a}) with weights |u_{i,a}|. With Gamma_i = c_i e_{a_i} (K >= 3) all of this equals
the per-row family below: u_i = c_i xi_i g_i and kappa_i = |c_i| sigma_i.

The built-in objectives (London et al. 2023) share one structure, the smoothness bound

    R(F + alpha f) <= R(F) - (alpha / n) sum_i c_i xi_i g_i^T f_i
                           + (alpha^2 / 2n) sum_i |c_i| sigma_i ||f_i||^2,

with per-example weights xi_i and smoothness factors sigma_i
([`Objective.xi_sigma`][opboost.api.objective.Objective.xi_sigma]). From it follow the gradient
-(1/n) c_i xi_i g_i, the step alpha = sum c_i xi_i g_i^T f_i / sum |c_i| sigma_i ||f_i||^2 (the
bound's minimiser) and both base-learning reductions. A third-party objective outside this family
overrides the ``*_at`` methods.

Per round the booster computes one ``RoundState`` (one softmax) and calls the ``*_at``
methods; the public methods (``risk``, ``gradient``, ``base_problem``, ``step``) build a state
themselves, so each is correct on its own.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from opboost.api.component import Component
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.slots import mask_slots
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.arrays import dot
from opboost.api.numerics.row_blocks import RowWeightedProblem, logged_gradient, row_blocks
from opboost.api.numerics.softmax import softmax, softmax_and_log_norm
from opboost.api.round_state import ActionState, RoundState
from opboost.api.validation import check_choice

__all__ = [
    "REDUCTIONS",
    "ActionState",
    "Objective",
    "RoundState",
    "closed_form_step",
    "policy_terms",
    "softmax",
    "softmax_and_log_norm",
]

#: The base-learning reductions of London et al. (2023), section 4.4 and appendix D.
REDUCTIONS: frozenset[str] = frozenset({"regression", "classification"})


def _policy(
    scores: np.ndarray, actions: np.ndarray, softmax: tuple | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """softmax(F) (n, K), pi(a_i|x_i) (n,) and logsumexp(F_i) (n,); ``softmax`` is
    ``softmax_and_log_norm(scores)`` when already computed."""
    probs, log_norm = softmax_and_log_norm(scores) if softmax is None else softmax
    logged = np.arange(len(actions)) * probs.shape[1] + actions  # flat index of (i, a_i)
    return probs, probs.ravel()[logged], log_norm


def policy_terms(
    scores: np.ndarray, actions: np.ndarray, *, softmax: tuple | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """softmax(F) (n, K), pi(a_i|x_i) (n,), g_i = e_{a_i} - pi(x_i) (n, K), logsumexp(F_i)
    (n,); ``softmax`` is (softmax(F), logsumexp(F_i)) when the caller already has them."""
    probs, pi_logged, log_norm = _policy(scores, actions, softmax)
    return probs, pi_logged, logged_gradient(probs, actions), log_norm


def closed_form_step(numerator: float, denominator: float, n: int, l2: float = 0.0) -> float:
    """alpha = N / (D + 2 n l2) from the sums N = sum c_i xi_i g_i^T f_i and
    D = sum |c_i| sigma_i ||f_i||^2 over n examples; 0.0 when the denominator is not positive.

    The sums are over examples, so a distributed fit adds per-partition N and D and calls this.
    """
    denominator = float(denominator) + 2.0 * int(n) * float(l2)
    if not denominator > 0.0:
        return 0.0
    return float(numerator) / denominator


def centre_rows(gamma: np.ndarray, candidates: Any = None) -> np.ndarray:
    """Gamma_i - median_a Gamma_i(a), shape (n, K): the shift that leaves V unchanged and
    minimises sum_a |Gamma_i(a)|; idempotent. With ``candidates`` (an (n, K) mask, dense or
    sparse) the median is over each row's candidates and the others are set to 0 (the
    policy gives them no mass, so V is unchanged)."""
    if candidates is None:
        return gamma - np.median(gamma, axis=1, keepdims=True)
    valid = candidates.toarray() if hasattr(candidates, "toarray") else np.asarray(candidates)
    median = np.nanmedian(np.where(valid, gamma, np.nan), axis=1, keepdims=True)
    return np.where(valid, gamma - median, 0.0)


_PER_ROW_ONLY = (
    "{owner} takes one training coefficient per logged row, not per-action coefficients "
    "(estimator 'dr' or 'dm'); use objective='bopl_s' or 'bopl', or a per-row estimator such "
    "as 'ips'."
)


def check_inputs(
    scores: np.ndarray, data: LoggedBandit, coef: np.ndarray, owner: str, matrix: bool = False
):
    scores = np.asarray(scores, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    expected = (len(data), data.n_actions)
    if scores.shape != expected:
        raise InvalidParameterError(
            f"{owner}: scores must have shape {expected} (rows of data x actions). "
            f"Got {scores.shape}."
        )
    if getattr(data, "candidates", None) is not None:  # softmax over each row's candidates
        scores = mask_slots(scores, data.candidates)
    if coef.shape == expected:
        if matrix:
            return scores, coef
        raise InvalidParameterError(_PER_ROW_ONLY.format(owner=owner))
    if coef.shape != (len(data),):
        also = f" or {expected} (per-action coefficients)" if matrix else ""
        raise InvalidParameterError(
            f"{owner}: coef must have shape ({len(data)},), one coefficient per logged row"
            f"{also}. Got {coef.shape}."
        )
    return scores, coef


def _action_problem(state: ActionState, reduction: str) -> BaseProblem:
    """The base problem of per-action coefficients: regression targets u_i / kappa_i with
    weights kappa_i, or labels sign(u) with weights |u|."""
    u, kappa = state.direction, state.kappa
    if reduction == "regression":
        inverse = np.divide(1.0, kappa, out=np.zeros_like(kappa), where=kappa > 0)
        return RowWeightedProblem(kappa, u.shape[1], lambda rows: u[rows] * inverse[rows, None])
    return BaseProblem("classification", np.where(u >= 0, 1.0, -1.0), np.abs(u))


class Objective(Component):
    """A boosting objective over the softmax policy of the ensemble scores.

    Subclasses set ``name`` and implement [`xi_sigma`][opboost.api.objective.Objective.xi_sigma] and
    [`risk_at`][opboost.api.objective.Objective.risk_at].
    """

    kind: ClassVar[str] = "objective"
    #: Base-learning reductions this objective can turn a round into.
    reductions: ClassVar[frozenset[str]] = REDUCTIONS
    #: Whether :meth:`action_terms` is defined: per-action coefficients Gamma (n, K).
    supports_action_coefficients: ClassVar[bool] = False
    #: Whether a row whose training coefficients are all 0 has zero gradient and zero weight
    #: in every round, whatever F (the risk is a sum of c_i terms: BOPL, BOPL-S, POEM; not
    #: SNIPS, whose normaliser weighs every row). A fit may then leave such rows (a zero
    #: reward under IPS) out of the base learner's rows: the same problem, fewer rows.
    inert_zero_rows: ClassVar[bool] = False
    #: Whether the risk, the gradient and the step are sums of per-row terms, each from its
    #: own row's scores and coefficients (BOPL, BOPL-S; not POEM, whose variance penalty, nor
    #: SNIPS, whose normaliser, couples the rows): the terms of any part of the rows, from
    #: :meth:`round_state` on that part alone, add up to the whole's, so a fit over partitions
    #: (the Dask engine) can use the objective.
    row_local: ClassVar[bool] = False

    # --- per-round state ------------------------------------------------------------------

    @abstractmethod
    def xi_sigma(self, coef: np.ndarray, pi_logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-example weights xi_i and smoothness factors sigma_i, each (n,)."""

    def action_terms(
        self, gamma: np.ndarray, probs: np.ndarray, log_probs: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Direction u = -n dR/dF (n, K) and curvature kappa (n,) for the row-centred
        per-action coefficients ``gamma`` (n, K) at the policy ``probs`` (n, K)."""
        raise InvalidParameterError(_PER_ROW_ONLY.format(owner=type(self).__name__))

    def round_state(
        self, scores: np.ndarray, data: LoggedBandit, coef: np.ndarray, *, centred: bool = False
    ) -> RoundState:
        """Compute the softmax and the per-example terms of this round once.

        ``coef`` is c (n,) or, for objectives with ``supports_action_coefficients``, the
        per-action matrix Gamma (n, K) (an ``ActionState`` is returned then);
        ``centred=True`` says Gamma is already
        [`centre_rows`][opboost.api.objective.centre_rows]-ed, so a fit that centres it once skips
        the per-round median (18 ms a round at 100,000 x 10).
        """
        scores, coef = check_inputs(
            scores, data, coef, type(self).__name__, matrix=self.supports_action_coefficients
        )
        actions = np.asarray(data.actions)
        probs, pi_logged, log_norm = _policy(scores, actions)
        if coef.ndim == 2:
            gamma = coef if centred else centre_rows(coef, getattr(data, "candidates", None))
            direction, kappa = self.action_terms(gamma, probs, scores - log_norm[:, None])
            ones = np.ones(len(actions))
            return ActionState(
                scores, probs, gamma, actions, pi_logged, None, ones, kappa, log_norm,
                direction, kappa,
            )  # fmt: skip
        xi, sigma = self.xi_sigma(coef, pi_logged)
        return RoundState(scores, probs, coef, actions, pi_logged, None, xi, sigma, log_norm)

    # --- state-based methods (the booster's fast path) ------------------------------------

    @abstractmethod
    def risk_at(self, state: RoundState) -> float:
        """The objective's empirical risk at ``state.scores``."""

    def gradient_at(self, state: RoundState) -> np.ndarray:
        """d risk / d F, shape (n, K): -(1/n) c_i xi_i g_i (per-action: -(1/n) u_i)."""
        if isinstance(state, ActionState):
            return state.direction * (-1.0 / state.n)
        return (-(state.coef * state.xi) / state.n)[:, None] * state.g

    def gradient_norm_at(self, state: RoundState) -> float:
        """Euclidean norm of [`gradient_at`][opboost.api.objective.Objective.gradient_at], without
        the (n, K) array when the gradient has the family's form -(1/n) c_i xi_i g_i."""
        if isinstance(state, ActionState):
            u = state.direction
            return math.sqrt(float(np.einsum("ij,ij->", u, u))) / state.n
        if type(self).gradient_at is not Objective.gradient_at:
            gradient = self.gradient_at(state)
            return math.sqrt(float(np.einsum("ij,ij->", gradient, gradient)))
        row_scale = state.coef * state.xi
        return math.sqrt(dot(row_scale * row_scale, state.gradient_products())) / state.n

    def curvature_at(self, state: RoundState) -> np.ndarray:
        """|c_i| sigma_i (per-action: kappa_i), shape (n,): the quadratic coefficients of the
        smoothness bound."""
        if isinstance(state, ActionState):
            return state.kappa
        return np.abs(state.coef) * state.sigma

    def problem_at(self, state: RoundState, reduction: str) -> BaseProblem:
        """The base-learning problem of this round for ``reduction``.

        regression: targets s_i (xi_i / sigma_i) g_{i,a}, weights |c_i| sigma_i (weighted least
        squares, the Lagrangian of line 3 with lambda = 1/2). classification: labels
        s_i (2 1{a = a_i} - 1), weights |c_i xi_i g_{i,a}| (weighted 0-1 error).
        """
        check_choice(
            reduction, "reduction", f"{type(self).__name__}.base_problem", sorted(self.reductions)
        )
        if isinstance(state, ActionState):
            return _action_problem(state, reduction)
        sign = np.where(state.coef < 0, -1.0, 1.0)
        shape = state.probs.shape
        if reduction == "regression":
            row_targets = sign * state.xi / state.sigma
            return RowWeightedProblem(
                self.curvature_at(state),
                shape[1],
                lambda rows: row_targets[rows, None] * state.gradient_rows(rows),
            )
        labels = np.full(shape, -1.0)
        labels[np.arange(state.n), state.actions] = 1.0
        labels *= sign[:, None]
        row_scale, weights = state.coef * state.xi, np.empty(shape)
        for rows in row_blocks(*shape):
            np.abs(row_scale[rows, None] * state.gradient_rows(rows), out=weights[rows])
        return BaseProblem("classification", labels, weights)

    def step_numerator_at(self, state: RoundState, f_values: np.ndarray) -> float:
        """sum_i c_i xi_i g_i^T f_i (per-action: sum_i u_i^T f_i; = -n <gradient, f>)."""
        if isinstance(state, ActionState):
            return float(np.einsum("ij,ij->", state.direction, f_values))
        return dot(state.coef * state.xi, state.gradient_products(f_values))

    def step_denominator_at(self, state: RoundState, f_values: np.ndarray) -> float:
        """sum_i |c_i| sigma_i ||f_i||^2."""
        return dot(self.curvature_at(state), np.einsum("ij,ij->i", f_values, f_values))

    def step_at(self, state: RoundState, f_values: np.ndarray, *, l2: float = 0.0) -> float:
        """Closed-form alpha minimising the smoothness bound; 0.0 when f vanishes.

        With an L2 penalty l2 * alpha^2 on the ensemble weight (London et al., appendix E)
        the penalised bound -(alpha/n) N + (alpha^2/2n) D + l2 alpha^2 is minimised by
        alpha = N / (D + 2 n l2), N = sum c_i xi_i g_i^T f_i, D = sum |c_i| sigma_i ||f_i||^2.
        """
        numerator = self.step_numerator_at(state, f_values)
        denominator = self.step_denominator_at(state, f_values)
        return closed_form_step(numerator, denominator, state.n, l2)

    # --- standalone public API ------------------------------------------------------------

    def risk(self, scores: np.ndarray, data: LoggedBandit, coef: np.ndarray) -> float:
        """Empirical risk of the policy softmax(``scores``) (n, K) on ``data``."""
        return self.risk_at(self.round_state(scores, data, coef))

    def gradient(self, scores: np.ndarray, data: LoggedBandit, coef: np.ndarray) -> np.ndarray:
        """Gradient of [`risk`][opboost.api.objective.Objective.risk] with respect to ``scores``,
        shape (n, K)."""
        return self.gradient_at(self.round_state(scores, data, coef))

    def base_problem(
        self, scores: np.ndarray, data: LoggedBandit, coef: np.ndarray, reduction: str
    ) -> BaseProblem:
        """The base-learning problem (targets and weights, each (n, K)) for ``reduction``."""
        return self.problem_at(self.round_state(scores, data, coef), reduction)

    def step(
        self, scores: np.ndarray, f_values: np.ndarray, data: LoggedBandit, coef: np.ndarray
    ) -> float:
        """Closed-form ensemble weight alpha for the base predictions ``f_values`` (n, K)."""
        state = self.round_state(scores, data, coef)
        f_values = np.asarray(f_values, dtype=np.float64)
        if f_values.shape != state.probs.shape:
            raise InvalidParameterError(
                f"{type(self).__name__}.step: f_values must have shape {state.probs.shape}. "
                f"Got {f_values.shape}."
            )
        return self.step_at(state, f_values)
