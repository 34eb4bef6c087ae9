"""The JSON-serialisable tree ensemble of the scikit-learn base learners.

:class:`SklearnEnsemble` stores each fitted tree as its ``tree_`` arrays (children, feature,
threshold, leaf value) and predicts with numpy, so ``dumps``/``loads`` are plain JSON and
predictions after loading are bit-identical. Non-tree estimators predict in memory but
cannot be saved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import Ensemble
from opboost.api.numerics.contexts import check_finite_contexts
from opboost.api.numerics.design import stacked_design

__all__ = ["ACTION_DESIGNS", "SklearnEnsemble"]

ACTION_DESIGNS = ("stacked", "per_action")
_TREE_KEYS = ("children_left", "children_right", "feature", "threshold", "value")
_CHUNK = 8192  # rows of a sparse matrix densified at a time for prediction


class TreeArrays:
    """One tree as numpy arrays; ``value`` is the leaf output (float64) of every node."""

    def __init__(self, left, right, feature, threshold, value):
        self.left, self.right = left.astype(np.int64), right.astype(np.int64)
        self.feature, self.threshold = feature.astype(np.int64), threshold.astype(np.float64)
        self.value = value.astype(np.float64)

    @classmethod
    def constant(cls, value: float) -> TreeArrays:
        """A single leaf predicting ``value`` everywhere."""
        leaf = np.array([-1])
        return cls(leaf, leaf, np.array([-2]), np.array([-2.0]), np.array([value]))

    @classmethod
    def from_sklearn(cls, estimator: Any) -> TreeArrays:
        tree = estimator.tree_
        raw = tree.value[:, 0, :]
        if hasattr(estimator, "classes_"):  # leaf label, mapped to +-1 as float
            value = np.asarray(estimator.classes_, dtype=np.float64)[raw.argmax(axis=1)]
        else:
            value = raw[:, 0]
        return cls(tree.children_left, tree.children_right, tree.feature, tree.threshold, value)

    def to_dict(self) -> dict[str, list]:
        return {
            k: getattr(self, a).tolist()
            for k, a in zip(
                _TREE_KEYS, ("left", "right", "feature", "threshold", "value"), strict=True
            )
        }

    @classmethod
    def from_dict(cls, obj: Any, n_columns: int) -> TreeArrays:
        if not isinstance(obj, dict) or any(k not in obj for k in _TREE_KEYS):
            raise ValueError(f"a tree must be an object with keys {list(_TREE_KEYS)}")
        arrays = [np.asarray(obj[k]) for k in _TREE_KEYS]
        n_nodes = len(arrays[0])
        if n_nodes == 0 or any(a.shape != (n_nodes,) for a in arrays):
            raise ValueError("tree arrays must be non-empty and of equal length")
        if any(a.dtype.kind not in "iuf" for a in arrays):
            raise ValueError("tree arrays must be numeric")
        tree = cls(*arrays)
        internal = tree.left != -1
        idx = np.flatnonzero(internal)
        if (
            np.any(tree.right[idx] <= idx)
            or np.any(tree.left[idx] <= idx)
            or np.any(tree.left[idx] >= n_nodes)
            or np.any(tree.right[idx] >= n_nodes)
            or np.any(tree.feature[idx] < 0)
            or np.any(tree.feature[idx] >= n_columns)
            or not np.all(np.isfinite(tree.value))
        ):
            raise ValueError("tree arrays are inconsistent (child, feature or value out of range)")
        return tree

    def predict(self, X: np.ndarray, rows: np.ndarray, actions: np.ndarray | None) -> np.ndarray:
        """Leaf values for the (row, action) pairs; float32 ``X`` (m, d) as sklearn sees it.

        With ``actions`` (stacked design) feature d + a is the one-hot column of action a.
        """
        node = np.zeros(len(rows), dtype=np.int64)
        d = X.shape[1]
        active = np.flatnonzero(self.left[node] != -1)
        while active.size:
            at = node[active]
            feat = self.feature[at]
            if actions is None:
                vals = X[rows[active], feat]
            else:
                vals = X[rows[active], np.minimum(feat, d - 1)]
                onehot = feat >= d
                vals = np.where(onehot, (feat - d == actions[active]).astype(np.float32), vals)
            node[active] = np.where(vals <= self.threshold[at], self.left[at], self.right[at])
            active = active[self.left[node[active]] != -1]
        return self.value[node]


class InMemoryModel:
    """A fitted non-tree estimator: predicts, but cannot be serialised."""

    def __init__(self, estimator: Any, classification: bool):
        self.estimator, self.classification = estimator, classification

    def predict_matrix(self, X: Any) -> np.ndarray:
        pred = np.asarray(self.estimator.predict(X), dtype=np.float64)
        return np.where(pred > 0, 1.0, -1.0) if self.classification else pred


class SklearnEnsemble(Ensemble):
    """F(x) = sum_t alpha_t f_t(x) over trees; ``action_design`` as in the learner."""

    format: ClassVar[str] = "opboost-sklearn-trees"

    def __init__(
        self,
        *,
        n_actions: int,
        n_features: int,
        action_design: str,
        rounds: list[tuple[float, list]] | None = None,
    ):
        self.n_actions, self.n_features, self.action_design = n_actions, n_features, action_design
        self.rounds = list(rounds or [])

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores F(X), shape (m, K); X is (m, d) dense or CSR."""
        scores = np.zeros((X.shape[0], self.n_actions))
        for scores in self.staged_decision_function(X):  # noqa: B007 - keep the last stage
            pass
        return scores

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Yield the cumulative scores (m, K) after each round."""
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise InvalidParameterError(
                f"X must have shape (m, {self.n_features}), the training feature count. "
                f"Got {X.shape}."
            )
        check_finite_contexts(X)  # what LoggedBandit rejects at fit time
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            chunks = [X[s : s + _CHUNK].toarray() for s in range(0, X.shape[0], _CHUNK)]
        else:
            chunks = [np.asarray(X)]
        total = np.zeros((X.shape[0], self.n_actions))
        for parts in zip(*(self._round_scores(chunk) for chunk in chunks), strict=True):
            total += np.vstack(parts)
            yield total.copy()

    def _round_scores(self, X: np.ndarray) -> Iterator[np.ndarray]:
        """Yield alpha_t f_t(X), (m, K), round by round, for dense X."""
        m, k = X.shape[0], self.n_actions
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        stacked = self.action_design == "stacked"
        rows = np.repeat(np.arange(m), k) if stacked else np.arange(m)
        actions = np.tile(np.arange(k), m) if stacked else None
        for alpha, models in self.rounds:
            yield alpha * self._round_values(models, X, X32, rows, actions)

    def _round_values(self, models, X, X32, rows, actions) -> np.ndarray:
        m, k = X.shape[0], self.n_actions
        if self.action_design == "stacked":
            (model,) = models
            if isinstance(model, TreeArrays):
                return model.predict(X32, rows, actions).reshape(m, k)
            return model.predict_matrix(stacked_design(X32, k, dtype=np.float32)).reshape(m, k)
        out = np.empty((m, k))
        for a, model in enumerate(models):
            out[:, a] = (
                model.predict(X32, rows, None)
                if isinstance(model, TreeArrays)
                else model.predict_matrix(X32)
            )
        return out

    def dumps(self) -> str:
        rounds = []
        for alpha, models in self.rounds:
            for model in models:
                if not isinstance(model, TreeArrays):
                    raise ValueError(
                        f"Cannot serialise a round fitted with "
                        f"{type(model.estimator).__name__}: only tree models (with tree_) are "
                        f"saved as JSON; use a DecisionTree base learner to save the policy."
                    )
            rounds.append({"alpha": float(alpha), "trees": [m.to_dict() for m in models]})
        return json.dumps(
            {
                "format": self.format,
                "version": 1,
                "n_actions": self.n_actions,
                "n_features": self.n_features,
                "action_design": self.action_design,
                "rounds": rounds,
            },
            allow_nan=False,
        )

    @classmethod
    def loads(cls, text: str) -> SklearnEnsemble:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{cls.format}: not valid JSON ({exc}); truncated or corrupted?"
            ) from exc
        if not isinstance(obj, dict) or obj.get("format") != cls.format:
            found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
            raise ValueError(f"not an {cls.format} ensemble (format {found!r})")
        try:
            k, d, design = int(obj["n_actions"]), int(obj["n_features"]), obj["action_design"]
            if design not in ACTION_DESIGNS:
                raise ValueError(f"unknown action_design {design!r}")
            n_columns = d + k if design == "stacked" else d
            per_round = 1 if design == "stacked" else k
            rounds = []
            for t, entry in enumerate(obj["rounds"]):
                trees = entry["trees"]
                if len(trees) != per_round:
                    raise ValueError(f"round {t} has {len(trees)} trees, expected {per_round}")
                alpha = float(entry["alpha"])
                if not np.isfinite(alpha):
                    raise ValueError(f"round {t} has a non-finite alpha")
                rounds.append((alpha, [TreeArrays.from_dict(tr, n_columns) for tr in trees]))
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{cls.format}: corrupted ensemble: {what}") from exc
        return cls(n_actions=k, n_features=d, action_design=design, rounds=rounds)
