"""The loss-feedback online protocol: predict a point of a label set, learn from loss values.

Setting (Brukhim & Hazan 2021, §3.1). Each round an adversary picks a context ``x`` (d,)
and a convex loss ``l_t`` on a convex label set ``K ⊂ R^m`` (``l_t(y) = ||y - y_t||²`` for a
hidden label ``y_t``). The learner never sees ``y_t`` nor a gradient: in the *noisy
multi-point bandit* setting it names ``k`` query points and receives the noisy values
``l_t(q_j) + w_j`` at those points only. River style::

    y_hat = learner.predict_one(x)        # (m,) prediction in K, scored by the runner
    Q = learner.query_one(x)              # (k, m) query points; draws its own directions
    learner.learn_one(x, env.loss(t, Q))  # (k,) noisy loss values at Q, nothing else

Every query point is a function of ``x`` and the learner's state (Algorithm 2 queries
``y^{i-1} + δv`` where every ``y^{i-1}`` is computed from ``x`` before any update), so the
whole round's queries can be named at once. ``learn_one`` must follow the ``query_one``
for the same ``x``. ``information = "full"`` learners (the full-information baselines
OGD and OGB) instead receive a ``FullLoss`` (value and gradient at any point):
``learner.learn_one(x, env.reveal(t))``.

The environment that holds the hidden labels is a simulation
(``opboost.simulation.loss_environment.LossEnvironment``); a learner sees it only through
these calls.
"""

from __future__ import annotations

from abc import abstractmethod
from numbers import Integral, Real
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from opboost.api.constraints import Interval, Options, Rule, validate_params
from opboost.api.online import OnlineLearner

__all__ = [
    "LABEL_CONSTRAINTS",
    "LABEL_SETS",
    "LOSSES",
    "FullLoss",
    "LossFeedbackLearner",
    "project",
    "sample_unit_sphere",
    "spherical_gradient",
]

#: Convex losses the environment can charge: value and gradient in the prediction.
LOSSES: tuple[str, ...] = ("squared", "absolute")
#: Convex label sets with a Euclidean projection (Assumption 3 of Brukhim & Hazan).
LABEL_SETS: tuple[str, ...] = ("real", "box", "simplex")

#: Declared constraints of the label-set parameters every loss-feedback learner has.
LABEL_CONSTRAINTS: dict[str, list[Any]] = {
    "n_outputs": [
        Interval(Integral, 1, None),
        Rule(
            lambda p: p["label_set"] != "simplex" or p["n_outputs"] >= 2,
            "must be >= 2 for label_set='simplex'. Got {n_outputs!r} instead",
            fix="use label_set='box' for a scalar in [0, 1]",
        ),
    ],
    "label_set": [Options(LABEL_SETS)],
    "low": [Interval(Real, finite=True)],
    "high": [
        Interval(Real, finite=True),
        Rule(
            lambda p: p["label_set"] != "box" or p["low"] < p["high"],
            "must exceed 'low' for label_set='box' (low < high). Got low={low!r}, "
            "high={high!r} instead",
        ),
    ],
}


# --- geometry -----------------------------------------------------------------------------


def sample_unit_sphere(rng: np.random.Generator, k: int, m: int) -> np.ndarray:
    """``k`` directions uniform on the unit sphere of ``R^m``; (k, m). For m = 1: ±1."""
    v = rng.standard_normal((k, m))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def spherical_gradient(losses: np.ndarray, directions: np.ndarray, delta: float) -> np.ndarray:
    """The one-point estimates ``(m/δ) l(y + δv_j) v_j`` (Lemma 7, Algorithm 2 line 9); (k, m).

    ``losses`` (k,) are the (noisy) values at ``y + δ v_j``, ``directions`` (k, m) the
    ``v_j``. Each row is an unbiased estimate of the gradient of the smoothed loss
    ``l̂(y) = E_u[l(y + δu)]`` (u uniform in the unit ball) at ``y``.
    """
    m = directions.shape[1]
    return (m / delta) * losses[:, None] * directions


def project(points: np.ndarray, label_set: str, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """Euclidean projection of ``points`` (..., m) onto the label set; same shape.

    ``"real"``: identity (K = R^m). ``"box"``: clip to ``[low, high]^m``. ``"simplex"``:
    the probability simplex (sort-based projection of Duchi et al. 2008, vectorised).
    """
    if label_set == "real":
        return points
    if label_set == "box":
        return np.clip(points, low, high)
    u = -np.sort(-points, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    ind = np.arange(1, points.shape[-1] + 1)
    cond = u - css / ind > 0
    rho = points.shape[-1] - 1 - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1.0)
    return np.maximum(points - theta, 0.0)


@runtime_checkable
class FullLoss(Protocol):
    """The whole loss ``l_t`` of one round, as full-information learners receive it."""

    def value(self, points: np.ndarray) -> np.ndarray:
        """``l_t`` at ``points`` (k, m) or (m,); shape (k,) or ()."""

    def gradient(self, points: np.ndarray) -> np.ndarray:
        """``∇l_t`` at ``points`` (k, m) or (m,); same shape."""


# --- learner protocol ------------------------------------------------------------------------


class LossFeedbackLearner(OnlineLearner):
    """Base of online learners that predict a point of ``K ⊂ R^m`` and learn from losses.

    Common parameters: ``n_outputs`` (m, the label dimension; it must be known before the
    first prediction since labels are never shown), ``label_set`` with ``low``/``high`` for
    a box, and ``random_state``. ``information`` is ``"bandit"`` (loss values at queried
    points) or ``"full"`` (the loss function is revealed after the prediction).
    """

    feedback: ClassVar[str] = "loss"
    information: ClassVar[str] = "bandit"

    @abstractmethod
    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """The (m,) prediction in the label set for context ``x`` (d,); no randomness used."""

    def query_one(self, x: np.ndarray) -> np.ndarray:
        """The (k, m) points at which the loss is revealed this round (bandit learners)."""
        raise NotImplementedError(
            f"{type(self).__name__} is a full-information learner; pass "
            f"LossEnvironment.reveal(t) to learn_one instead of querying points."
        )

    @abstractmethod
    def learn_one(self, x: np.ndarray, feedback: Any) -> None:
        """Learn from ``feedback``: (k,) loss values at the last queried points (bandit)."""

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """Predictions (n, m) for the rows of ``X`` (n, d), without learning in between."""
        return np.stack([self.predict_one(row) for row in np.asarray(X)])

    # shared validation of the label-set parameters
    def _check_label_params(self) -> None:
        validate_params(type(self).__name__, LABEL_CONSTRAINTS, self.get_params(deep=False))

    def _project(self, points: np.ndarray) -> np.ndarray:
        return project(points, self.label_set, self.low, self.high)
