"""Online gradient boosting with noisy bandit feedback (Brukhim & Hazan 2021, Algorithm 2).

``N`` weak online learners ``A_1..A_N`` are combined by ``N`` Frank–Wolfe steps
``η_i = 2/(i+1)`` (line 2)::

    y^0 = 0,   y^i = (1 - η_i) y^{i-1} + η_i A_i(x)/γ          (line 6)
    ŷ = Π_K(y^N)                                               (line 13)

For η_i = 2/(i+1) the recursion has the closed form ``y^i = 2/(i(i+1)) Σ_{k<=i} k A_k(x)/γ``,
which :meth:`BrukhimHazanBoost.iterates_one` evaluates with one cumulative sum. Learner i is
trained on the linear loss ``g_i·y`` with ``g_i = (m/δ) l̃(y^{i-1} + δv_i) v_i`` (lines 7–11),
the spherical estimate of the gradient of the smoothed loss at ``y^{i-1}`` (Lemma 7). All
``N`` query points depend only on ``x`` and the learners' state, so one round makes one
:meth:`query_one` call and one :meth:`learn_one` call.

Weak learners: ``"fkm"`` (the paper's linear model trained by projected OGD, vectorised over
the N learners, :class:`opboost.algorithms.online.fkm.LinearBank`) or any river regressor named as
``"river:<module>.<Class>"`` (e.g. ``"river:linear_model.LinearRegression"``; imported
lazily). A river regressor learns the linear loss ``g·y`` through the squared-loss target
``A_i(x) - g``, whose gradient at the current output is exactly ``g``.
"""

from __future__ import annotations

import copy
import functools
import importlib
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from opboost.algorithms.online.fkm import LinearBank
from opboost.algorithms.online.parameters import FKM_STEPS, LOSS_LEARNER, N_LEARNERS
from opboost.algorithms.online.scaling import make_scaler, scale_one
from opboost.api.constraints import Interval, Options, Satisfies
from opboost.api.exceptions import InvalidParameterError
from opboost.api.loss_feedback import (
    LossFeedbackLearner,
    project,
    sample_unit_sphere,
    spherical_gradient,
)
from opboost.api.online import as_context
from opboost.api.validation import check_random_state

__all__ = ["BrukhimHazanBoost", "RiverBank", "frank_wolfe_iterates"]


def frank_wolfe_iterates(
    outputs: np.ndarray, gamma: float = 1.0, y0: np.ndarray | None = None
) -> np.ndarray:
    """All iterates ``y^0..y^N`` (N+1, m) of Algorithm 2 line 6 for learner ``outputs`` (N, m).

    Closed form of ``y^i = (1-η_i) y^{i-1} + η_i a_i/γ`` with ``η_i = 2/(i+1)``:
    ``y^i = 2/(i(i+1)) Σ_{k<=i} k a_k / γ`` — a convex combination of ``a_1..a_i`` (γ = 1).
    ``y0`` (m,) defaults to 0 (line 5); as ``η_1 = 1``, ``y^1 = a_1/γ`` whatever ``y^0`` is.
    """
    n, m = outputs.shape
    k, coef = _fw_weights(n)
    partial = np.cumsum(k * outputs, axis=0)
    partial *= coef
    out = np.empty((n + 1, m))
    out[0] = 0.0 if y0 is None else np.reshape(y0, m)
    np.divide(partial, gamma, out=out[1:])
    return out


@functools.lru_cache(maxsize=8)
def _fw_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, 2 / (k (k + 1))) as (n, 1) columns for k = 1..n (read-only)."""
    k = np.arange(1, n + 1, dtype=np.float64)[:, None]
    coef = 2.0 / (k * (k + 1))
    k.flags.writeable = coef.flags.writeable = False
    return k, coef


class RiverBank:
    """``N × m`` river regressors exposing :class:`LinearBank`'s ``predict``/``update``."""

    def __init__(
        self, spec: str, n_learners: int, n_outputs: int, *, label_set: str, low: float, high: float
    ) -> None:
        path = spec.removeprefix("river:")
        module_name, _, cls_name = path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(f"river.{module_name}"), cls_name)
        except (ImportError, AttributeError) as exc:
            raise InvalidParameterError(
                f"The 'weak_learner' parameter of BrukhimHazanBoost names {spec!r}, which is "
                f"not a river class ({exc}). Use e.g. 'river:linear_model.LinearRegression'."
            ) from exc
        proto = cls()
        self.models = [[copy.deepcopy(proto) for _ in range(n_outputs)] for _ in range(n_learners)]
        self.label_set, self.low, self.high = label_set, low, high

    def raw(self, x: np.ndarray) -> np.ndarray:
        xd = dict(enumerate(x.tolist()))
        return np.array([[float(r.predict_one(xd)) for r in row] for row in self.models])

    def predict(self, x: np.ndarray) -> np.ndarray:
        return project(self.raw(x), self.label_set, self.low, self.high)

    def update(self, x: np.ndarray, grads: np.ndarray) -> None:
        xd = dict(enumerate(x.tolist()))
        targets = self.raw(x) - grads
        for row, trow in zip(self.models, targets, strict=True):
            for r, target in zip(row, trow, strict=True):
                r.learn_one(xd, float(target))


class BrukhimHazanBoost(LossFeedbackLearner):
    """Online boosting from noisy multi-point bandit feedback (Algorithm 2).

    Parameters
    ----------
    n_learners
        N, the number of weak learners and of loss queries per round.
    delta
        smoothing radius δ of the spherical gradient estimator (paper: 0.5).
    gamma
        weak-learning advantage γ >= 1 of Definition 6 (outputs are divided by γ).
    lr, lr_decay
        the weak learners' step ``lr · t^{-lr_decay}`` (paper: lr in [1e-4, 0.1],
        c in [0.25, 1]); used by the ``"fkm"`` weak learner.
    radius
        Frobenius bound on each FKM learner's weights.
    origin
        ``y^0``, where learner 1's loss is queried: ``"zero"`` (line 5 of the paper,
        the default) or ``"center"`` of the label set (box midpoint, simplex barycentre;
        not in the paper). Since ``η_1 = 1``, a round's iterates ``y^1..y^N`` do not depend
        on it given the learners' state, and neither does Theorem 9; but learner 1 is
        trained on the gradient at ``y^0`` (it minimises ``∇l̂(y^0)·y``), so the origin
        changes what every learner learns (measured in docs/benchmarks/online.md).
    weak_learner
        ``"fkm"`` or ``"river:<module>.<Class>"`` (a river regressor).
    n_outputs, label_set, low, high
        the label set ``K ⊂ R^m`` (``"real"``, ``"box"``
        ``[low, high]^m`` or ``"simplex"``).
    standardize
        online scaling by the running std
        (``RunningScaler``; a context joins the statistics
        in ``learn_one``): ``"auto"`` centres at the running mean except two-valued features
        (one-hot zeros kept), ``"mean"`` is river's StandardScaler, False feeds raw features.
    random_state
        seed of the query directions ``v_t^i``.

    Examples
    --------
    >>> import numpy as np
    >>> from opboost.simulation.loss_environment import LossEnvironment
    >>> env = LossEnvironment(np.array([0.5, 0.2]), noise=0.1, random_state=0)
    >>> booster = BrukhimHazanBoost(n_learners=3, random_state=0)
    >>> x = np.array([1.0, -1.0])
    >>> booster.predict_one(x)
    array([0.])
    >>> booster.learn_one(x, env.loss(0, booster.query_one(x)))
    >>> booster.query_one(x).shape
    (3, 1)

    References
    ----------
    Brukhim & Hazan (2021), Online Boosting with Bandit Feedback, ALT, Algorithm 2.
    """

    name: ClassVar[str] = "brukhim_hazan"

    _parameter_constraints: ClassVar[dict] = {
        "n_learners": N_LEARNERS("the paper uses 5 to 30 weak learners"),
        "delta": [Interval(Real, 0.0, None, closed="right", fix="the paper uses delta=0.5")],
        "gamma": [Interval(Real, 1.0, None, fix="gamma=1 means no advantage")],
        **FKM_STEPS,
        "origin": [Options(("zero", "center"))],
        "weak_learner": [
            Satisfies(
                lambda v: isinstance(v, str) and (v == "fkm" or v.startswith("river:")),
                "'fkm' or 'river:<module>.<Class>'",
                fix="e.g. 'river:linear_model.LinearRegression'",
            )
        ],
        **LOSS_LEARNER,
    }

    def __init__(
        self,
        *,
        n_learners: int = 10,
        delta: float = 0.5,
        gamma: float = 1.0,
        lr: float = 0.01,
        lr_decay: float = 0.5,
        radius: float = float("inf"),
        origin: str = "zero",
        weak_learner: str = "fkm",
        n_outputs: int = 1,
        label_set: str = "real",
        low: float = 0.0,
        high: float = 1.0,
        standardize: str | bool = "auto",
        random_state: int | None = None,
    ) -> None:
        self.n_learners = n_learners
        self.delta = delta
        self.gamma = gamma
        self.lr = lr
        self.lr_decay = lr_decay
        self.radius = radius
        self.origin = origin
        self.weak_learner = weak_learner
        self.n_outputs = n_outputs
        self.label_set = label_set
        self.low = low
        self.high = high
        self.standardize = standardize
        self.random_state = random_state

    # --- state ----------------------------------------------------------------------------

    def _init(self, x: np.ndarray) -> None:
        owner = type(self).__name__
        self.validate_params()
        self._y0 = np.zeros(self.n_outputs)
        if self.origin == "center" and self.label_set == "box":
            self._y0 += (self.low + self.high) / 2.0
        elif self.origin == "center" and self.label_set == "simplex":
            self._y0 += 1.0 / self.n_outputs
        self._rng = check_random_state(self.random_state)
        self._n_features = x.shape[0]
        self._scaler = make_scaler(self.standardize, x.shape[0], owner)
        if self.weak_learner == "fkm":
            self._bank = LinearBank.of(self, self.n_learners, x.shape[0])
        else:
            self._bank = RiverBank(
                self.weak_learner,
                self.n_learners,
                self.n_outputs,
                label_set=self.label_set,
                low=self.low,
                high=self.high,
            )
        self._directions: np.ndarray | None = None

    def _x(self, x: Any, learn: bool = False) -> np.ndarray:
        """``x`` (d,) standardised (then added to the scaler's statistics if ``learn``)."""
        x = as_context(x, getattr(self, "_n_features", None), type(self).__name__)
        if not hasattr(self, "_bank"):
            self._init(x)
        return scale_one(self._scaler, x, learn)

    # --- protocol -------------------------------------------------------------------------

    def _iterates(self, x: Any) -> np.ndarray:
        """:meth:`iterates_one`, kept for the same ``x`` object until the model learns (a
        round's ``predict_one`` and ``query_one`` share one evaluation); do not modify."""
        cached_x, iterates = getattr(self, "_iterates_cache", (None, None))
        if x is cached_x and x is not None:
            return iterates
        z = self._x(x)  # before reading _bank: the first context builds it
        iterates = frank_wolfe_iterates(self._bank.predict(z), self.gamma, self._y0)
        self._iterates_cache = (x, iterates)
        return iterates

    def iterates_one(self, x: np.ndarray) -> np.ndarray:
        """Frank–Wolfe iterates ``y^0..y^N`` (N+1, m) for context ``x`` (d,) (line 6)."""
        return self._iterates(x).copy()

    def predict_one(self, x: np.ndarray) -> np.ndarray:
        """``ŷ = Π_K(y^N)``; (m,) (line 13)."""
        return self._project(self._iterates(x)[-1])

    def query_one(self, x: np.ndarray) -> np.ndarray:
        """The N query points ``y^{i-1} + δ v_i`` (N, m), v_i uniform on the sphere (7–8)."""
        iterates = self._iterates(x)
        self._directions = sample_unit_sphere(self._rng, self.n_learners, self.n_outputs)
        return iterates[:-1] + self.delta * self._directions

    def learn_one(self, x: np.ndarray, feedback: np.ndarray) -> None:
        """Pass ``g_i = (m/δ) l̃_i v_i`` to learner i as a linear loss (lines 9–11).

        ``feedback`` is (N,): the noisy loss values at the points of the last ``query_one``.
        """
        x = self._x(x, learn=True)
        if self._directions is None:
            raise RuntimeError(
                f"{type(self).__name__}.learn_one: call query_one(x) first for the same x."
            )
        losses = np.asarray(feedback, dtype=np.float64).reshape(-1)
        if losses.shape[0] != self.n_learners:
            raise InvalidParameterError(
                f"{type(self).__name__}.learn_one: feedback must hold {self.n_learners} loss "
                f"values (one per query point). Got shape {np.shape(feedback)}."
            )
        self._bank.update(x, spherical_gradient(losses, self._directions, self.delta))
        self._directions = None
        self._iterates_cache = (None, None)  # the learners moved

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"n_learners": 3, "random_state": 0}
