"""A bank of river binary classifiers as weak learners, one model per (class, learner), with
the interface of :mod:`opboost.algorithms.online.weak_learners` (sample weights where river supports
them, Poisson resampling otherwise)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError

__all__ = ["RiverBank"]


class RiverBank:
    """K x N river binary classifiers, one per (k, i); river is imported lazily.

    ``spec`` is ``"module.Class"`` inside river, e.g. ``"linear_model.Perceptron"``.
    ``params`` go to every model's constructor; a model whose constructor takes ``seed``
    gets a distinct seed drawn from ``rng``. Contexts become dicts {j: x_j}.
    """

    def __init__(
        self,
        spec: str,
        n_actions: int,
        n_learners: int,
        n_features: int,
        rng: np.random.Generator,
        **params: Any,
    ) -> None:
        cls = _river_class(spec)
        takes_seed = "seed" in inspect.signature(cls).parameters
        self.n_actions, self.n_learners, self.n_features = n_actions, n_learners, n_features
        self.models = [
            [
                cls(**params, **({"seed": int(rng.integers(2**31))} if takes_seed else {}))
                for _ in range(n_learners)
            ]
            for _ in range(n_actions)
        ]
        self.weighted = "w" in inspect.signature(cls.learn_one).parameters
        self._rng = rng
        self._keys = list(range(n_features))

    def _dict(self, x: np.ndarray) -> dict[int, float]:
        return dict(zip(self._keys, x.tolist(), strict=True))

    def margins(self, x: np.ndarray) -> np.ndarray:
        """2 P(+1|x) - 1 for every model, shape (K, N)."""
        xd = self._dict(x)
        return np.array(
            [
                [2.0 * m.predict_proba_one(xd).get(True, 0.0) - 1.0 for m in row]
                for row in self.models
            ]
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Hypotheses in {-1, +1} (a model that has seen nothing says -1), shape (K, N)."""
        xd = self._dict(x)
        return np.array(
            [[1.0 if m.predict_one(xd) is True else -1.0 for m in row] for row in self.models]
        )

    def predict_batch(self, X: np.ndarray) -> np.ndarray:
        """Hypotheses for every row of X (n, d): shape (n, K, N)."""
        return np.stack([self.predict(row) for row in X])

    def learn(self, k: int, x: np.ndarray, y: float, w: np.ndarray, h_k: np.ndarray) -> None:
        """Learn (x, y > 0) on the N models of class k, weight w_i (or Poisson(w_i) repeats)."""
        xd = self._dict(x)
        label = bool(y > 0)
        if self.weighted:
            for model, wi in zip(self.models[k], w.tolist(), strict=True):
                if wi > 0.0:
                    model.learn_one(xd, label, w=wi)
        else:
            for model, reps in zip(self.models[k], self._rng.poisson(w).tolist(), strict=True):
                for _ in range(reps):
                    model.learn_one(xd, label)


def _river_class(spec: str) -> type:
    module_name, _, class_name = spec.rpartition(".")
    try:
        module = importlib.import_module(f"river.{module_name}")
        return getattr(module, class_name)
    except (ImportError, AttributeError, ValueError) as err:
        raise InvalidParameterError(
            f"weak_learner='river:{spec}' does not name a river class ({err}). Use "
            f"'river:<module>.<Class>', e.g. 'river:linear_model.Perceptron' or "
            f"'river:tree.HoeffdingTreeClassifier'."
        ) from err
