"""The loss-feedback environment: hidden labels, noisy loss queries (Brukhim & Hazan 2021, §3.1).

:class:`LossEnvironment` holds the hidden labels. They are sealed: reading them anywhere
except inside :meth:`LossEnvironment.loss` / :meth:`RevealedLoss` raises
:class:`~opboost.api.exceptions.HiddenLabelError`. The learner protocol is
:mod:`opboost.api.loss_feedback`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from opboost.api.exceptions import HiddenLabelError, InvalidParameterError
from opboost.api.loss_feedback import LOSSES
from opboost.api.validation import check_choice, check_random_state, check_scalar

__all__ = ["LossEnvironment", "RevealedLoss"]


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
