"""scikit-learn base learners (their ensemble is in
``opboost.algorithms.learners.sklearn_ensemble``).

Learners (kind "base_learner"):

``sklearn_tree``            DecisionTreeRegressor, regression reduction
``sklearn_stump``           depth-1 DecisionTreeClassifier, classification reduction
``sklearn_tree_classifier`` depth-limited DecisionTreeClassifier, classification reduction
``sklearn_regressor``       any regressor taking ``sample_weight`` (cloned each round)
``sklearn_classifier``      any classifier taking ``sample_weight``; predictions map to +-1

``action_design`` says how f(x, a) is featurised: ``"stacked"`` fits one model on the n*K rows
[x; onehot(a)] (London et al., appendix F.5), built once in ``prepare``; ``"per_action"`` fits
one model per action on the n context rows. Rows with zero weight are left out of the fit.

The fitted rounds form a ``SklearnEnsemble``
(JSON, no pickle).
"""

from __future__ import annotations

import numbers
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from opboost.algorithms.learners.sklearn_ensemble import (
    ACTION_DESIGNS,
    InMemoryModel,
    SklearnEnsemble,
    TreeArrays,
)
from opboost.api.constraints import Interval, Options, Rule, Satisfies
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseLearner, BaseProblem, Ensemble
from opboost.api.numerics.design import stacked_design

__all__ = [
    "SklearnClassifier",
    "SklearnEnsemble",
    "SklearnRegressor",
    "SklearnStump",
    "SklearnTree",
    "SklearnTreeClassifier",
]


_ACTION_DESIGN = [
    Options(
        ACTION_DESIGNS,
        fix="'stacked' fits one model on [x; onehot(a)], 'per_action' one per action",
    )
]
_TREE_CONSTRAINTS: dict[str, list[Any]] = {
    "max_depth": [
        Interval(Integral, 1, None, fix="use a small depth such as 3-8 (None grows full trees)"),
        None,
    ],
    "min_samples_leaf": [Interval(Integral, 1, None)],
    "max_features": [  # as scikit-learn's trees
        Interval(Integral, 1, None),
        Interval(Real, 0.0, 1.0, closed="right"),
        Options(("sqrt", "log2")),
        None,
    ],
    "action_design": _ACTION_DESIGN,
}


def _is_model(want: str) -> Any:
    def check(value: Any) -> bool:
        from sklearn.base import is_classifier, is_regressor

        return (is_regressor if want == "regressor" else is_classifier)(value)

    return check


def _weighted(params: dict[str, Any]) -> bool | str:
    from sklearn.utils.validation import has_fit_parameter

    estimator = params["estimator"]
    return has_fit_parameter(estimator, "sample_weight") or (
        f"must accept sample_weight in fit; {type(estimator).__name__} does not"
    )


def _estimator_constraint(want: str) -> list[Any]:
    """A scikit-learn ``want`` ("regressor" or "classifier") whose fit takes sample_weight."""
    example = "Regressor" if want == "regressor" else "Classifier"
    return [
        Satisfies(
            _is_model(want),
            f"a scikit-learn {want}",
            fix=f"pass e.g. estimator=DecisionTree{example}(max_depth=3)",
        ),
        Rule(_weighted, fix=f"use a weighted {want}"),
    ]


def _round_seed(seed: int, round_index: int) -> int:
    """A per-round seed that depends only on (seed, round): resumed fits draw the same."""
    return int(np.random.SeedSequence([seed, round_index]).generate_state(1)[0])


class _SklearnLearner(BaseLearner):
    """Shared prepare/fit/commit logic; subclasses build one unfitted estimator per model."""

    ensemble_class: ClassVar[type[Ensemble]] = SklearnEnsemble
    _parameter_constraints: ClassVar[dict] = {"action_design": _ACTION_DESIGN}

    def _make_estimator(self, seed: int) -> Any:
        raise NotImplementedError

    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        self.validate_params()
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
            return TreeArrays.constant(0.0), np.zeros(X.shape[0])
        seed = _round_seed(self._seed, self._ensemble.n_rounds * max(self._k, 1) + slot)
        estimator = self._make_estimator(seed)
        estimator.fit(self._subset(slot, X, mask), targets[mask], sample_weight=weights[mask])
        classification = self.reduction == "classification"
        if hasattr(estimator, "tree_"):
            model: Any = TreeArrays.from_sklearn(estimator)
            pred = np.asarray(estimator.predict(X), dtype=np.float64)
            if classification:
                pred = np.where(pred > 0, 1.0, -1.0)
        else:
            model = InMemoryModel(estimator, classification)
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


def _tree_params(learner: Any) -> dict[str, Any]:
    """The depth, leaf-size and feature-sampling settings shared by the trees."""
    return {
        "max_depth": learner.max_depth,
        "min_samples_leaf": learner.min_samples_leaf,
        "max_features": learner.max_features,
    }


class SklearnTree(_SklearnLearner):
    """A DecisionTreeRegressor per round (regression reduction)."""

    name: ClassVar[str] = "sklearn_tree"
    reduction: ClassVar[str] = "regression"
    _parameter_constraints: ClassVar[dict] = {
        **_TREE_CONSTRAINTS,
        "max_leaf_nodes": [Interval(Integral, 2, None), None],
    }

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

        return DecisionTreeRegressor(
            max_leaf_nodes=self.max_leaf_nodes, random_state=seed, **_tree_params(self)
        )


class SklearnTreeClassifier(_SklearnLearner):
    """A depth-limited DecisionTreeClassifier per round (classification reduction)."""

    name: ClassVar[str] = "sklearn_tree_classifier"
    reduction: ClassVar[str] = "classification"
    _parameter_constraints: ClassVar[dict] = _TREE_CONSTRAINTS

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

        return DecisionTreeClassifier(random_state=seed, **_tree_params(self))


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
    def __init__(self, *, estimator: Any = None, action_design: str = "stacked") -> None:
        self.estimator = estimator
        self.action_design = action_design

    def _make_estimator(self, seed: int) -> Any:
        from sklearn.base import clone

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
    _parameter_constraints: ClassVar[dict] = {
        "estimator": _estimator_constraint("regressor"),
        "action_design": _ACTION_DESIGN,
    }

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        from sklearn.tree import DecisionTreeRegressor

        return {"estimator": DecisionTreeRegressor(max_depth=2)}


class SklearnClassifier(_Adapter):
    """Any scikit-learn classifier taking sample_weight; labels +-1 (classification)."""

    name: ClassVar[str] = "sklearn_classifier"
    reduction: ClassVar[str] = "classification"
    _parameter_constraints: ClassVar[dict] = {
        "estimator": _estimator_constraint("classifier"),
        "action_design": _ACTION_DESIGN,
    }

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        from sklearn.tree import DecisionTreeClassifier

        return {"estimator": DecisionTreeClassifier(max_depth=2)}
