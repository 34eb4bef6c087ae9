"""scikit-learn base learners and their JSON-serialisable tree ensemble.

Learners (kind "base_learner"):

``sklearn_tree``            DecisionTreeRegressor, regression reduction
``sklearn_stump``           depth-1 DecisionTreeClassifier, classification reduction
``sklearn_tree_classifier`` depth-limited DecisionTreeClassifier, classification reduction
``sklearn_regressor``       any regressor taking ``sample_weight`` (cloned each round)
``sklearn_classifier``      any classifier taking ``sample_weight``; predictions map to +-1

``action_design`` says how f(x, a) is featurised: ``"stacked"`` fits one model on the n*K rows
[x; onehot(a)] (London et al., appendix F.5), built once in ``prepare``; ``"per_action"`` fits
one model per action on the n context rows. Rows with zero weight are left out of the fit.

:class:`SklearnEnsemble` stores each fitted tree as its ``tree_`` arrays (children, feature,
threshold, leaf value) and predicts with numpy, so ``dumps``/``loads`` are plain JSON and
predictions after loading are bit-identical. Non-tree estimators predict in memory but
cannot be saved.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost._validation import check_choice, check_scalar
from opboost.design import stacked_design
from opboost.exceptions import InvalidParameterError
from opboost.learners.base import BaseLearner, BaseProblem, Ensemble

__all__ = [
    "SklearnClassifier",
    "SklearnEnsemble",
    "SklearnRegressor",
    "SklearnStump",
    "SklearnTree",
    "SklearnTreeClassifier",
]

ACTION_DESIGNS = ("stacked", "per_action")
_TREE_KEYS = ("children_left", "children_right", "feature", "threshold", "value")
_CHUNK = 8192  # rows of a sparse matrix densified at a time for prediction


class _Tree:
    """One tree as numpy arrays; ``value`` is the leaf output (float64) of every node."""

    def __init__(self, left, right, feature, threshold, value):
        self.left, self.right = left.astype(np.int64), right.astype(np.int64)
        self.feature, self.threshold = feature.astype(np.int64), threshold.astype(np.float64)
        self.value = value.astype(np.float64)

    @classmethod
    def constant(cls, value: float) -> _Tree:
        """A single leaf predicting ``value`` everywhere."""
        leaf = np.array([-1])
        return cls(leaf, leaf, np.array([-2]), np.array([-2.0]), np.array([value]))

    @classmethod
    def from_sklearn(cls, estimator: Any) -> _Tree:
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
    def from_dict(cls, obj: Any, n_columns: int) -> _Tree:
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


class _InMemory:
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
            if isinstance(model, _Tree):
                return model.predict(X32, rows, actions).reshape(m, k)
            return model.predict_matrix(stacked_design(X32, k, dtype=np.float32)).reshape(m, k)
        out = np.empty((m, k))
        for a, model in enumerate(models):
            out[:, a] = (
                model.predict(X32, rows, None)
                if isinstance(model, _Tree)
                else model.predict_matrix(X32)
            )
        return out

    def dumps(self) -> str:
        rounds = []
        for alpha, models in self.rounds:
            for model in models:
                if not isinstance(model, _Tree):
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
                rounds.append((alpha, [_Tree.from_dict(tr, n_columns) for tr in trees]))
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{cls.format}: corrupted ensemble: {what}") from exc
        return cls(n_actions=k, n_features=d, action_design=design, rounds=rounds)


def _round_seed(seed: int, round_index: int) -> int:
    """A per-round seed that depends only on (seed, round): resumed fits draw the same."""
    return int(np.random.SeedSequence([seed, round_index]).generate_state(1)[0])


class _SklearnLearner(BaseLearner):
    """Shared prepare/fit/commit logic; subclasses build one unfitted estimator per model."""

    ensemble_class: ClassVar[type[Ensemble]] = SklearnEnsemble

    def _make_estimator(self, seed: int) -> Any:
        raise NotImplementedError

    def _check_params(self) -> None:
        check_choice(
            self.action_design,
            "action_design",
            type(self).__name__,
            ACTION_DESIGNS,
            fix="'stacked' fits one model on [x; onehot(a)], 'per_action' one per action",
        )

    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        self._check_params()
        self._make_estimator(0)  # validate the estimator parameters before any work
        if self.action_design == "stacked":
            X32 = stacked_design(contexts, n_actions, dtype=np.float32)
        elif sp.issparse(contexts):
            X32 = sp.csr_matrix(contexts, dtype=np.float32)
        else:
            X32 = np.ascontiguousarray(contexts, dtype=np.float32)
        self._X, self._n, self._k = X32, contexts.shape[0], n_actions
        self._seed = (
            int(np.random.default_rng(random_state).integers(2**31 - 1))
            if not isinstance(random_state, numbers.Integral)
            else int(random_state)
        )
        self._ensemble = SklearnEnsemble(
            n_actions=n_actions, n_features=contexts.shape[1], action_design=self.action_design
        )
        self._masks: dict[int, tuple[np.ndarray, Any]] = {}
        self._pending: list | None = None

    def warm_start(self, ensemble: Ensemble) -> None:
        """Continue from ``ensemble``'s rounds (resuming a checkpointed fit)."""
        if (
            not isinstance(ensemble, SklearnEnsemble)
            or ensemble.action_design != self.action_design
        ):
            raise InvalidParameterError(
                f"{type(self).__name__} cannot continue from {ensemble!r}: it needs an "
                f"SklearnEnsemble with action_design={self.action_design!r}."
            )
        self._ensemble.rounds = list(ensemble.rounds)

    def _subset(self, slot: int, X: Any, mask: np.ndarray) -> Any:
        if mask.all():
            return X
        cached = self._masks.get(slot)
        if cached is not None and np.array_equal(cached[0], mask):
            return cached[1]
        subset = X[mask]
        self._masks[slot] = (mask, subset)
        return subset

    def _fit_one(self, slot: int, X: Any, targets: np.ndarray, weights: np.ndarray):
        """Fit one model on the rows with weight > 0; return (model, predictions on X)."""
        mask = weights > 0
        if not mask.any():  # nothing to learn from: f = 0 on this slot
            return _Tree.constant(0.0), np.zeros(X.shape[0])
        seed = _round_seed(self._seed, self._ensemble.n_rounds * max(self._k, 1) + slot)
        estimator = self._make_estimator(seed)
        estimator.fit(self._subset(slot, X, mask), targets[mask], sample_weight=weights[mask])
        classification = self.reduction == "classification"
        if hasattr(estimator, "tree_"):
            model: Any = _Tree.from_sklearn(estimator)
            pred = np.asarray(estimator.predict(X), dtype=np.float64)
            if classification:
                pred = np.where(pred > 0, 1.0, -1.0)
        else:
            model = _InMemory(estimator, classification)
            pred = model.predict_matrix(X)
        return model, pred

    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        if problem.reduction != self.reduction:
            raise InvalidParameterError(
                f"{type(self).__name__} solves the {self.reduction} reduction but got a "
                f"{problem.reduction} problem."
            )
        n, k = self._n, self._k
        if self.action_design == "stacked":
            model, pred = self._fit_one(
                0, self._X, problem.targets.ravel(), problem.weights.ravel()
            )
            models, f_values = [model], pred.reshape(n, k)
        else:
            models, f_values = [], np.empty((n, k))
            for a in range(k):
                model, f_values[:, a] = self._fit_one(
                    a, self._X, problem.targets[:, a], problem.weights[:, a]
                )
                models.append(model)
        self._pending = models
        return f_values

    def commit_round(self, alpha: float) -> None:
        if self._pending is not None and alpha != 0.0:
            self._ensemble.rounds.append((float(alpha), self._pending))
        self._pending = None

    def predict_round(self, X: Any) -> np.ndarray:
        """The last committed f_t (without its alpha) on new contexts X (m, d): (m, K)."""
        ens = self._ensemble
        last = SklearnEnsemble(
            n_actions=ens.n_actions,
            n_features=ens.n_features,
            action_design=ens.action_design,
            rounds=[(1.0, ens.rounds[-1][1])],
        )
        return last.decision_function(X)

    def ensemble(self) -> SklearnEnsemble:
        ens = self._ensemble
        return SklearnEnsemble(
            n_actions=ens.n_actions,
            n_features=ens.n_features,
            action_design=ens.action_design,
            rounds=ens.rounds,
        )


def _check_depth(value: Any, owner: str, name: str = "max_depth") -> None:
    check_scalar(
        value,
        name,
        owner,
        kind=numbers.Integral,
        low=1,
        allow_none=True,
        fix="use a small depth such as 3-8 (None grows full trees)",
    )


class SklearnTree(_SklearnLearner):
    """A DecisionTreeRegressor per round (regression reduction)."""

    name: ClassVar[str] = "sklearn_tree"
    reduction: ClassVar[str] = "regression"

    def __init__(
        self,
        *,
        max_depth: int | None = 6,
        min_samples_leaf: int = 1,
        max_leaf_nodes: int | None = None,
        max_features: Any = None,
        action_design: str = "stacked",
    ) -> None:
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_leaf_nodes = max_leaf_nodes
        self.max_features = max_features
        self.action_design = action_design

    def _make_estimator(self, seed: int) -> Any:
        from sklearn.tree import DecisionTreeRegressor

        _check_depth(self.max_depth, type(self).__name__)
        check_scalar(
            self.min_samples_leaf,
            "min_samples_leaf",
            type(self).__name__,
            kind=numbers.Integral,
            low=1,
        )
        return DecisionTreeRegressor(
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            max_leaf_nodes=self.max_leaf_nodes,
            max_features=self.max_features,
            random_state=seed,
        )


class SklearnTreeClassifier(_SklearnLearner):
    """A depth-limited DecisionTreeClassifier per round (classification reduction)."""

    name: ClassVar[str] = "sklearn_tree_classifier"
    reduction: ClassVar[str] = "classification"

    def __init__(
        self,
        *,
        max_depth: int | None = 3,
        min_samples_leaf: int = 1,
        max_features: Any = None,
        action_design: str = "stacked",
    ) -> None:
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.action_design = action_design

    def _make_estimator(self, seed: int) -> Any:
        from sklearn.tree import DecisionTreeClassifier

        _check_depth(self.max_depth, type(self).__name__)
        check_scalar(
            self.min_samples_leaf,
            "min_samples_leaf",
            type(self).__name__,
            kind=numbers.Integral,
            low=1,
        )
        return DecisionTreeClassifier(
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            max_features=self.max_features,
            random_state=seed,
        )


class SklearnStump(_SklearnLearner):
    """A decision stump (depth-1 DecisionTreeClassifier) per round (classification)."""

    name: ClassVar[str] = "sklearn_stump"
    reduction: ClassVar[str] = "classification"

    def __init__(self, *, action_design: str = "stacked") -> None:
        self.action_design = action_design

    def _make_estimator(self, seed: int) -> Any:
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(max_depth=1, random_state=seed)


class _Adapter(_SklearnLearner):
    _want: ClassVar[str] = "regressor"

    def __init__(self, *, estimator: Any = None, action_design: str = "stacked") -> None:
        self.estimator = estimator
        self.action_design = action_design

    def _make_estimator(self, seed: int) -> Any:
        from sklearn.base import clone, is_classifier, is_regressor
        from sklearn.utils.validation import has_fit_parameter

        owner = type(self).__name__
        check = is_regressor if self._want == "regressor" else is_classifier
        example = "Regressor" if self._want == "regressor" else "Classifier"
        if self.estimator is None or not check(self.estimator):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {owner} must be a scikit-learn {self._want}. "
                f"Got {self.estimator!r} instead; pass e.g. "
                f"estimator=DecisionTree{example}(max_depth=3)."
            )
        if not has_fit_parameter(self.estimator, "sample_weight"):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {owner} must accept sample_weight in fit; "
                f"{type(self.estimator).__name__} does not. Use a weighted {self._want}."
            )
        estimator = clone(self.estimator)
        if (
            "random_state" in estimator.get_params()
            and estimator.get_params()["random_state"] is None
        ):
            estimator.set_params(random_state=seed)
        return estimator


class SklearnRegressor(_Adapter):
    """Any scikit-learn regressor taking sample_weight (regression reduction)."""

    name: ClassVar[str] = "sklearn_regressor"
    reduction: ClassVar[str] = "regression"

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        from sklearn.tree import DecisionTreeRegressor

        return {"estimator": DecisionTreeRegressor(max_depth=2)}


class SklearnClassifier(_Adapter):
    """Any scikit-learn classifier taking sample_weight; labels +-1 (classification)."""

    name: ClassVar[str] = "sklearn_classifier"
    reduction: ClassVar[str] = "classification"
    _want: ClassVar[str] = "classifier"

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        from sklearn.tree import DecisionTreeClassifier

        return {"estimator": DecisionTreeClassifier(max_depth=2)}
