"""FKM linear learners: online projected gradient descent on linear models (Flaxman, Kalai &
McMahan 2005), the weak learner and the N-FKM baseline of Brukhim & Hazan (2021, §4).

[`LinearBank`][opboost.algorithms.online.fkm.LinearBank] holds ``N`` linear models ``A_i(x) =
Π_K(W_i [x, 1])`` as one (N, m, d+1) array, so all ``N`` weak learners of Algorithm 2 predict and
update in one vectorised step. Each update is projected gradient descent on a *linear* loss
``g_i·y``: the gradient in ``W_i`` is ``g_i ⊗ [x, 1]``, step ``lr · t^{-c}``, then ``W_i`` is
projected onto the Frobenius ball of radius ``radius``.

[`NFKM`][opboost.algorithms.online.fkm.NFKM] (registry name ``"n_fkm"``) is the bandit baseline: one
linear model and ``N`` noisy loss queries per round (the booster's budget). By default it is FKM
proper: the weights are perturbed, ``Π_K((W + δU_j)[x, 1])`` with ``U_j`` uniform on the sphere of
``R^{m(d+1)}``, and ``W`` steps on the mean of ``(m(d+1)/δ) l̃_j U_j``. ``perturb="outputs"``
perturbs the prediction instead (``ŷ + δv_j``, estimate ``(m/δ) l̃_j v_j`` chained through
``[x, 1]``), a stronger baseline than the paper's.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.parameters import FKM_STEPS, LOSS_LEARNER
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.api.constraints import Interval, Options
from opboost.api.loss_feedback import (
    LossFeedbackLearner,
    project,
    sample_unit_sphere,
    spherical_gradient,
)
from opboost.api.online import as_context
from opboost.api.validation import check_random_state

__all__ = ["NFKM", "LinearBank"]


class LinearBank:
    """``N`` linear learners on ``K ⊂ R^m`` trained by projected OGD on linear losses.

    Parameters
    ----------
    n_learners, n_outputs, n_features
        N, m, d.
    lr, lr_decay
        step ``lr · t^{-lr_decay}`` at the learner's t-th update (t >= 1).
    radius
        Frobenius-norm bound on each ``W_i`` (the "projected" in projected OGD); inf
        disables the projection.
    label_set, low, high
        the set ``K`` each output is projected onto.
    """

    @classmethod
    def of(cls, learner: Any, n_learners: int, n_features: int) -> LinearBank:
        """The bank of a learner that has ``n_outputs``, the step parameters (``lr``,
        ``lr_decay``, ``radius``) and the label-set parameters (``label_set``, ``low``,
        ``high``)."""
        return cls(
            n_learners,
            learner.n_outputs,
            n_features,
            lr=learner.lr,
            lr_decay=learner.lr_decay,
            radius=learner.radius,
            label_set=learner.label_set,
            low=learner.low,
            high=learner.high,
        )

    def __init__(
        self,
        n_learners: int,
        n_outputs: int,
        n_features: int,
        *,
        lr: float,
        lr_decay: float,
        radius: float,
        label_set: str,
        low: float,
        high: float,
    ) -> None:
        self.W = np.zeros((n_learners, n_outputs, n_features + 1))
        self.lr, self.lr_decay, self.radius = lr, lr_decay, radius
        self.label_set, self.low, self.high = label_set, low, high
        self.t = 0

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Unprojected outputs ``W_i [x, 1]`` (N, m) for one context ``x`` (d,)."""
        return self.W[:, :, :-1] @ x + self.W[:, :, -1]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Outputs ``A_i(x) = Π_K(W_i [x, 1])`` (N, m), each in the label set."""
        return project(self.raw(x), self.label_set, self.low, self.high)

    def update(self, x: np.ndarray, grads: np.ndarray) -> None:
        """One projected OGD step for each learner i on the linear loss ``grads[i]·y``.

        ``grads`` is (N, m). The gradient in ``W_i`` is ``grads[i] ⊗ [x, 1]``.
        """
        xb = np.append(x, 1.0)
        self.step(grads[:, :, None] * xb[None, None, :])

    def step(self, grad_w: np.ndarray) -> None:
        """One projected OGD step ``W -= lr t^{-c} grad_w`` (grad_w shaped like ``W``)."""
        self.t += 1
        self.W -= self.lr * self.t ** (-self.lr_decay) * grad_w
        if np.isfinite(self.radius):
            norms = np.sqrt((self.W * self.W).sum(axis=(1, 2)))
            scale = np.minimum(1.0, self.radius / np.maximum(norms, 1e-300))
            self.W *= scale[:, None, None]


class NFKM(LossFeedbackLearner):
    """N-point FKM: a linear model learned from ``N`` noisy loss values per round.

    Parameters
    ----------
    n_queries
        N, loss queries per round (match the booster's ``n_learners``).
    delta
        smoothing radius δ of the spherical estimator.
    lr, lr_decay
        step ``lr · t^{-lr_decay}``.
    radius
        Frobenius bound on the weights (projected gradient descent).
    perturb
        where FKM draws its spherical perturbation.

        - ``"weights"`` (FKM as defined by Flaxman, Kalai & McMahan 2005, whose decision is
          the point played, here the weights ``W`` in ``R^{m(d+1)}``): query
          ``Π_K((W + δU_j)[x, 1])`` for ``U_j`` uniform on the unit sphere of
          ``R^{m(d+1)}``, and step on ``W`` with the mean of ``(m(d+1)/δ) l̃_j U_j``.
        - ``"outputs"``: query ``ŷ + δv_j`` in the label space ``R^m`` and step with the
          chain rule ``ĝ ⊗ [x, 1]``, ``ĝ`` the mean of ``(m/δ) l̃_j v_j``. This uses the
          linear-model structure that Algorithm 2 uses for its learners, so it is a
          stronger baseline than the paper's (its variance does not grow with d).
    n_outputs, label_set, low, high
        the label set ``K ⊂ R^m``.
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        in ``learn_one``): ``"auto"`` centres at the running mean except two-valued features
        (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw features.
    random_state
        seed of the query directions.

    References
    ----------
    Flaxman, Kalai & McMahan (2005), Online convex optimization in the bandit setting.
    Brukhim & Hazan (2021), §4 "N-FKM".
    """

    name: ClassVar[str] = "n_fkm"

    _parameter_constraints: ClassVar[dict] = {
        "n_queries": [Interval(Integral, 1, None)],
        "delta": [Interval(Real, 0.0, None, closed="right", fix="the paper uses delta=0.5")],
        **FKM_STEPS,
        "perturb": [Options(("weights", "outputs"))],
        **LOSS_LEARNER,
    }

    def __init__(
        self,
        *,
        n_queries: int = 10,
        delta: float = 0.5,
        lr: float = 0.01,
        lr_decay: float = 0.5,
        radius: float = float("inf"),
        perturb: str = "weights",
        n_outputs: int = 1,
        label_set: str = "real",
        low: float = 0.0,
        high: float = 1.0,
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.n_queries = n_queries
        self.delta = delta
        self.lr = lr
        self.lr_decay = lr_decay
        self.radius = radius
        self.perturb = perturb
        self.n_outputs = n_outputs
        self.label_set = label_set
        self.low = low
        self.high = high
        self.standardize = standardize
        self.random_state = random_state

    def _init(self, x: np.ndarray) -> None:
        self.validate_params()
        self._scaler = make_scaler(self.standardize, x.shape[0], "NFKM")
        self._rng = check_random_state(self.random_state)
        self._bank = LinearBank.of(self, 1, x.shape[0])
        self._directions: np.ndarray | None = None

    def _x(self, x: Any, learn: bool = False) -> np.ndarray:
        bank = getattr(self, "_bank", None)
        x = as_context(x, None if bank is None else bank.W.shape[2] - 1, "NFKM")
        if bank is None:
            self._init(x)
        return scale_one(self._scaler, x, learn)

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """``Π_K(W [x, 1])``; (m,)."""
        x = self._x(x)
        return self._bank.predict(x)[0]

    def query_one(self, x: np.ndarray) -> np.ndarray:
        """``N`` query points (N, m): ``Π_K((W + δU_j)[x, 1])`` or ``ŷ + δv_j`` (``perturb``)."""
        x = self._x(x)
        if self.perturb == "outputs":
            self._directions = sample_unit_sphere(self._rng, self.n_queries, self.n_outputs)
            return self._bank.predict(x)[0] + self.delta * self._directions
        W = self._bank.W[0]
        self._directions = sample_unit_sphere(self._rng, self.n_queries, W.size).reshape(
            self.n_queries, *W.shape
        )
        Wq = W[None] + self.delta * self._directions
        return self._project(Wq[:, :, :-1] @ x + Wq[:, :, -1])

    def learn_one(self, x: np.ndarray, feedback: np.ndarray) -> None:
        """Step on the mean spherical gradient estimate from ``feedback`` (N,) loss values."""
        x = self._x(x, learn=True)
        if self._directions is None:
            raise RuntimeError("NFKM.learn_one: call query_one(x) first for the same x.")
        losses = np.asarray(feedback, float).reshape(-1)
        if self.perturb == "outputs":
            g = spherical_gradient(losses, self._directions, self.delta)
            self._bank.update(x, g.mean(axis=0)[None, :])
        else:
            u = self._directions.reshape(self.n_queries, -1)
            gw = spherical_gradient(losses, u, self.delta).mean(axis=0)
            self._bank.step(gw.reshape(self._bank.W.shape))
        self._directions = None

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_queries": 3, "random_state": 0}
