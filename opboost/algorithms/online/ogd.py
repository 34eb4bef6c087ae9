"""Full-information baselines of Brukhim & Hazan (2021, Table 2): OGD and online gradient
boosting (OGB, Beygelzimer, Hazan, Kale & Luo 2015, Algorithm 2).

Both see the whole loss of the round after predicting (``information = "full"``): the
runner passes a ``FullLoss``, and the learners use
its exact gradient, never the label.

- [`OGD`][opboost.algorithms.online.ogd.OGD] (``"ogd"``): one linear model ``ŷ = Π_K(W [x, 1])``,
step
  ``W -= lr t^{-c} ∇l(ŷ) ⊗ [x, 1]``.
- [`OGB`][opboost.algorithms.online.ogd.OGB] (``"ogb"``): Algorithm 2 of Brukhim & Hazan with the
exact gradient
  ``∇l(y^{i-1})`` in place of the spherical estimate — the convex-hull online gradient
  boosting of Beygelzimer et al. (2015), the "full information online boosting" column.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.brukhim_hazan import BrukhimHazanBoost
from opboost.algorithms.online.fkm import LinearBank
from opboost.algorithms.online.parameters import FKM_STEPS, LOSS_LEARNER
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.api.loss_feedback import FullLoss, LossFeedbackLearner
from opboost.api.online import as_context

__all__ = ["OGB", "OGD"]


def _check_revealed(owner: str, feedback: Any) -> FullLoss:
    if not isinstance(feedback, FullLoss):
        raise TypeError(
            f"{owner}.learn_one: feedback must be a revealed loss (a FullLoss such as "
            f"RevealedLoss: full information). Got "
            f"{type(feedback).__name__}; pass env.reveal(t), or use a bandit learner."
        )
    return feedback


class OGD(LossFeedbackLearner):
    """Online (projected) gradient descent on a linear model, full information.

    Parameters
    ----------
    lr, lr_decay
        step ``lr · t^{-lr_decay}``.
    radius
        Frobenius bound on the weights.
    n_outputs, label_set, low, high
        the label set ``K ⊂ R^m``.
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        in ``learn_one``): ``"auto"`` centres at the running mean except two-valued features
        (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw features.
    random_state
        unused (OGD is deterministic); kept for a uniform interface.
    """

    name: ClassVar[str] = "ogd"
    information: ClassVar[str] = "full"

    _parameter_constraints: ClassVar[dict] = {
        **FKM_STEPS,
        **LOSS_LEARNER,
    }

    def __init__(
        self,
        *,
        lr: float = 0.01,
        lr_decay: float = 0.5,
        radius: float = float("inf"),
        n_outputs: int = 1,
        label_set: str = "real",
        low: float = 0.0,
        high: float = 1.0,
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.lr = lr
        self.lr_decay = lr_decay
        self.radius = radius
        self.n_outputs = n_outputs
        self.label_set = label_set
        self.low = low
        self.high = high
        self.standardize = standardize
        self.random_state = random_state

    def _x(self, x: Any, learn: bool = False) -> np.ndarray:
        bank = getattr(self, "_bank", None)
        x = as_context(x, None if bank is None else bank.W.shape[2] - 1, "OGD")
        if bank is None:
            self.validate_params()
            self._scaler = make_scaler(self.standardize, x.shape[0], "OGD")
            self._bank = LinearBank.of(self, 1, x.shape[0])
        return scale_one(self._scaler, x, learn)

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """``Π_K(W [x, 1])``; (m,)."""
        x = self._x(x)
        return self._bank.predict(x)[0]

    def learn_one(self, x: np.ndarray, feedback: FullLoss) -> None:
        """One gradient step with ``∇l_t(ŷ)`` from the revealed loss."""
        x = self._x(x, learn=True)
        grad = _check_revealed("OGD", feedback).gradient(self._bank.predict(x)[0])
        self._bank.update(x, grad[None, :])


class OGB(BrukhimHazanBoost):
    """Full-information online gradient boosting over the convex hull (Frank–Wolfe steps).

    Same parameters as
    [`BrukhimHazanBoost`][opboost.algorithms.online.brukhim_hazan.BrukhimHazanBoost]; ``delta`` is
    unused. Learner i gets the linear loss ``∇l_t(y^{i-1})·y``.

    References
    ----------
    Beygelzimer, Hazan, Kale & Luo (2015), Online Gradient Boosting, NIPS, Algorithm 2.
    """

    name: ClassVar[str] = "ogb"
    information: ClassVar[str] = "full"

    def query_one(self, x: np.ndarray) -> np.ndarray:
        return LossFeedbackLearner.query_one(self, x)

    def learn_one(self, x: np.ndarray, feedback: FullLoss) -> None:
        """Pass the exact ``∇l_t(y^{i-1})`` (N, m) to the N learners as linear losses."""
        revealed = _check_revealed("OGB", feedback)
        iterates = self.iterates_one(x)
        self._bank.update(self._x(x, learn=True), revealed.gradient(iterates[:-1]))
