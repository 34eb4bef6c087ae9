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
OGD and OGB) instead receive a :class:`RevealedLoss` (value and gradient at any point):
``learner.learn_one(x, env.reveal(t))``.

:class:`LossEnvironment` holds the hidden labels. They are sealed: reading them anywhere
except inside :meth:`LossEnvironment.loss` / :meth:`RevealedLoss` raises
:class:`HiddenLabelError`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from opboost._validation import check_choice, check_random_state, check_scalar
from opboost.exceptions import InvalidParameterError, OpboostError
from opboost.online.base import OnlineLearner

__all__ = [
    "LABEL_SETS",
    "LOSSES",
    "HiddenLabelError",
    "LossEnvironment",
    "LossFeedbackLearner",
    "RevealedLoss",
    "as_vector",
    "project",
    "sample_unit_sphere",
    "spherical_gradient",
]

#: Convex losses the environment can charge: value and gradient in the prediction.
LOSSES: tuple[str, ...] = ("squared", "absolute")
#: Convex label sets with a Euclidean projection (Assumption 3 of Brukhim & Hazan).
LABEL_SETS: tuple[str, ...] = ("real", "box", "simplex")


class HiddenLabelError(OpboostError):
    """A hidden label was read outside the loss oracle."""


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


def as_vector(x: Any, n_features: int | None, owner: str) -> np.ndarray:
    """``x`` as a 1-D float64 array of length ``n_features`` (when known); else raise."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or (n_features is not None and arr.shape[0] != n_features):
        want = f"({n_features},)" if n_features is not None else "(d,)"
        raise InvalidParameterError(
            f"{owner}: x must be a 1-D array of shape {want}. Got shape {arr.shape}; pass one "
            f"row X[i] per call."
        )
    return arr


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
        owner = type(self).__name__
        check_scalar(self.n_outputs, "n_outputs", owner, kind=int, low=1)
        check_choice(self.label_set, "label_set", owner, LABEL_SETS)
        if self.label_set == "box" and not self.low < self.high:
            raise InvalidParameterError(
                f"The 'low' and 'high' parameters of {owner} must satisfy low < high for "
                f"label_set='box'. Got low={self.low!r}, high={self.high!r} instead."
            )
        if self.label_set == "simplex" and self.n_outputs < 2:
            raise InvalidParameterError(
                f"The 'n_outputs' parameter of {owner} must be >= 2 for label_set='simplex'. "
                f"Got {self.n_outputs!r} instead; use label_set='box' for a scalar in [0, 1]."
            )

    def _project(self, points: np.ndarray) -> np.ndarray:
        return project(points, self.label_set, self.low, self.high)


# --- environment --------------------------------------------------------------------------------


class _SealedLabels:
    """Holds the (n, m) labels; any read outside :meth:`unsealed` raises."""

    def __init__(self, labels: np.ndarray) -> None:
        self.__labels = labels
        self.__open = 0

    @contextmanager
    def unsealed(self) -> Iterator[np.ndarray]:
        self.__open += 1
        try:
            yield self.__labels
        finally:
            self.__open -= 1

    def _deny(self, *_: Any, **__: Any) -> Any:
        raise HiddenLabelError(
            "The labels of a LossEnvironment are hidden: learners see loss values only. "
            "Call env.loss(t, points) to query the loss at points."
        )

    __getitem__ = __array__ = __iter__ = __len__ = __getstate__ = __reduce_ex__ = _deny

    def __getattribute__(self, name: str) -> Any:
        if name in {"unsealed", "_deny", "_SealedLabels__labels", "_SealedLabels__open"}:
            return object.__getattribute__(self, name)
        if name.startswith("__") and name.endswith("__"):
            return object.__getattribute__(self, name)
        object.__getattribute__(self, "_deny")()


def _loss_value(kind: str, points: np.ndarray, label: np.ndarray) -> np.ndarray:
    diff = points - label
    return (diff * diff).sum(axis=-1) if kind == "squared" else np.abs(diff).sum(axis=-1)


def _loss_grad(kind: str, points: np.ndarray, label: np.ndarray) -> np.ndarray:
    diff = points - label
    return 2.0 * diff if kind == "squared" else np.sign(diff)


class RevealedLoss:
    """The full-information loss ``l_t`` of one round: value and gradient at any points."""

    def __init__(self, env: LossEnvironment, t: int) -> None:
        self._env, self._t = env, t

    def value(self, points: np.ndarray) -> np.ndarray:
        """Noiseless ``l_t`` at ``points`` (k, m) or (m,); shape (k,) or ()."""
        with self._env._labels.unsealed() as labels:
            return _loss_value(self._env.loss_name, np.asarray(points, float), labels[self._t])

    def gradient(self, points: np.ndarray) -> np.ndarray:
        """``∇l_t`` at ``points`` (k, m) or (m,); same shape (a subgradient for "absolute")."""
        with self._env._labels.unsealed() as labels:
            return _loss_grad(self._env.loss_name, np.asarray(points, float), labels[self._t])


class LossEnvironment:
    """Hides labels ``Y`` (n, m) (or (n,)) and answers loss queries with bounded noise.

    ``loss(t, points)`` returns ``l_t(q_j) + w_j`` with ``w_j`` i.i.d. uniform on
    ``[-noise, noise]`` (zero-mean and bounded as §3.1 requires; the paper's experiments
    use ``noise = 0.1``). ``evaluate(t, y_hat)`` is the noiseless loss of a prediction, for
    scoring only. ``loss_name`` is ``"squared"`` (``||y - y_t||²``) or ``"absolute"``
    (``||y - y_t||_1``).
    """

    def __init__(
        self, Y: np.ndarray, *, loss: str = "squared", noise: float = 0.1, random_state=None
    ) -> None:
        check_choice(loss, "loss", "LossEnvironment", LOSSES)
        check_scalar(noise, "noise", "LossEnvironment", low=0.0, fix="use 0.0 for exact losses")
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        if Y.ndim != 2 or not np.isfinite(Y).all():
            raise InvalidParameterError(
                f"LossEnvironment: Y must be a finite (n,) or (n, m) array. Got shape {Y.shape}."
            )
        self.loss_name = loss
        self.noise = float(noise)
        self.n_examples, self.n_outputs = Y.shape
        self._labels = _SealedLabels(Y)
        self._rng = check_random_state(random_state)
        self.n_queries = 0

    @property
    def labels(self) -> np.ndarray:
        """Always raises :class:`HiddenLabelError`: labels are never shown."""
        self._labels._deny()

    def loss(self, t: int, points: np.ndarray) -> np.ndarray:
        """Noisy loss values (k,) of round ``t`` at ``points`` (k, m) or (m,) (shape ())."""
        pts = np.asarray(points, dtype=np.float64)
        if pts.shape[-1] != self.n_outputs:
            raise InvalidParameterError(
                f"LossEnvironment.loss: points must have last dimension m={self.n_outputs}. "
                f"Got shape {pts.shape}; check the learner's n_outputs."
            )
        with self._labels.unsealed() as labels:
            values = _loss_value(self.loss_name, pts, labels[t])
        self.n_queries += int(np.size(values))
        return values + self._rng.uniform(-self.noise, self.noise, size=np.shape(values))

    def reveal(self, t: int) -> RevealedLoss:
        """The whole loss of round ``t`` (full-information learners only)."""
        return RevealedLoss(self, t)

    def evaluate(self, t: int, y_hat: np.ndarray) -> float:
        """Noiseless loss of the prediction ``y_hat`` (m,) at round ``t`` (for scoring)."""
        with self._labels.unsealed() as labels:
            return float(_loss_value(self.loss_name, np.asarray(y_hat, float), labels[t]))
