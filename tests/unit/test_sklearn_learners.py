"""scikit-learn base learners: designs, reductions, adapters and the JSON tree ensemble."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import opboost
from opboost.algorithms.learners.sklearn import (
    SklearnClassifier,
    SklearnEnsemble,
    SklearnRegressor,
    SklearnStump,
    SklearnTree,
    SklearnTreeClassifier,
)
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.api.numerics.design import stacked_design

LEARNERS = [
    pytest.param(SklearnTree(max_depth=3), id="tree-stacked"),
    pytest.param(SklearnTree(max_depth=3, action_design="per_action"), id="tree-per-action"),
    pytest.param(SklearnStump(action_design="per_action"), id="stump-per-action"),
    pytest.param(SklearnTreeClassifier(), id="tree-classifier"),
    pytest.param(
        SklearnRegressor(estimator=DecisionTreeRegressor(max_depth=2)), id="regressor-adapter"
    ),
    pytest.param(
        SklearnClassifier(
            estimator=DecisionTreeClassifier(max_depth=2), action_design="per_action"
        ),
        id="classifier-adapter",
    ),
]


def problem(learner, n=60, k=3, seed=0):
    """A random base problem of the learner's reduction, and contexts."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    weights = rng.random((n, k))
    weights[:5] = 0.0  # rows with zero weight are left out of the fit
    if learner.reduction == "classification":
        targets = np.where(rng.random((n, k)) < 0.4, 1.0, -1.0)
    else:
        targets = rng.normal(size=(n, k))
    return X, BaseProblem(learner.reduction, targets, weights)


def run_rounds(learner, X, prob, rounds=3):
    learner.prepare(X, prob.targets.shape[1], random_state=0)
    outputs = []
    for t in range(rounds):
        outputs.append(learner.fit_round(prob))
        learner.commit_round(0.5 + t)
    return outputs


def test_registered_names():
    """All five sklearn learners are registered as base learners."""
    assert {
        "sklearn_tree",
        "sklearn_stump",
        "sklearn_tree_classifier",
        "sklearn_regressor",
        "sklearn_classifier",
    } <= set(opboost.available("base_learner"))


def test_stacked_design_rows():
    """Row i*K + a of the stacked design is [x_i; onehot(a)]."""
    X = np.arange(6, dtype=np.float32).reshape(3, 2)
    stacked = stacked_design(X, 2, dtype=np.float32)
    assert stacked.shape == (6, 4)
    np.testing.assert_array_equal(stacked[3], [2, 3, 0, 1])


@pytest.mark.parametrize("learner", LEARNERS)
def test_ensemble_reproduces_training_predictions(learner):
    """The ensemble's numpy prediction equals sum alpha_t f_t from the training rounds."""
    X, prob = problem(learner)
    outputs = run_rounds(learner, X, prob)
    expected = np.zeros_like(outputs[0])
    for t, f in enumerate(outputs):
        expected += (0.5 + t) * f
    np.testing.assert_array_equal(learner.ensemble().decision_function(X), expected)


@pytest.mark.parametrize("learner", LEARNERS)
def test_dumps_loads_bit_identical(learner):
    """JSON round trip gives bit-identical scores on new contexts."""
    X, prob = problem(learner)
    run_rounds(learner, X, prob)
    ensemble = learner.ensemble()
    text = ensemble.dumps()
    assert json.loads(text)["format"] == "opboost-sklearn-trees"
    X_new = np.random.default_rng(5).normal(size=(40, 4))
    np.testing.assert_array_equal(
        SklearnEnsemble.loads(text).decision_function(X_new), ensemble.decision_function(X_new)
    )


@pytest.mark.parametrize(
    "learner", [p.values[0] for p in LEARNERS if p.values[0].reduction == "classification"]
)
def test_classification_predictions_are_plus_minus_one(learner):
    """Classification learners map predictions to f in {-1, +1}."""
    X, prob = problem(learner)
    (f,) = run_rounds(learner, X, prob, rounds=1)
    assert set(np.unique(f)) <= {-1.0, 1.0}


def test_zero_weight_rows_do_not_affect_fit():
    """Changing targets of zero-weight rows leaves the fitted f unchanged."""
    learner = SklearnTree(max_depth=3)
    X, prob = problem(learner)
    (f1,) = run_rounds(learner, X, prob, rounds=1)
    targets = prob.targets.copy()
    targets[:5] = 1e6
    (f2,) = run_rounds(
        SklearnTree(max_depth=3), X, BaseProblem("regression", targets, prob.weights), rounds=1
    )
    np.testing.assert_array_equal(f1, f2)


def test_all_zero_weights_give_zero_f():
    """Nothing to learn from: f = 0 (the booster then stops on max|f|)."""
    learner = SklearnTree()
    X, prob = problem(learner)
    zero = BaseProblem("regression", prob.targets, np.zeros_like(prob.weights))
    (f,) = run_rounds(learner, X, zero, rounds=1)
    np.testing.assert_array_equal(f, 0.0)


def test_reduction_mismatch():
    """A classification learner given a regression problem says so."""
    learner = SklearnStump()
    X, prob = problem(SklearnTree())
    learner.prepare(X, 3)
    with pytest.raises(
        InvalidParameterError,
        match=r"SklearnStump solves the classification "
        r"reduction but got a regression problem",
    ):
        learner.fit_round(prob)


@pytest.mark.parametrize(
    ("learner", "match"),
    [
        pytest.param(
            SklearnTree(action_design="diagonal"),
            r"'action_design' parameter of "
            r"SklearnTree must be one of \{'stacked', 'per_action'\}. Got 'diagonal'",
            id="bad-design",
        ),
        pytest.param(
            SklearnTree(max_depth=0),
            r"'max_depth' parameter of SklearnTree must be "
            r"an int >= 1. Got 0 instead; use a small depth",
            id="bad-depth",
        ),
        pytest.param(
            SklearnRegressor(),
            r"'estimator' parameter of SklearnRegressor must be a "
            r"scikit-learn regressor. Got None instead; pass e.g.",
            id="no-estimator",
        ),
        pytest.param(
            SklearnRegressor(estimator=DecisionTreeClassifier()),
            r"must be a scikit-learn regressor",
            id="classifier-as-regressor",
        ),
        pytest.param(
            SklearnRegressor(estimator=KNeighborsRegressor()),
            r"must accept sample_weight in fit; KNeighborsRegressor does not",
            id="no-sample-weight",
        ),
    ],
)
def test_bad_parameters(learner, match):
    """Invalid learner parameters fail in prepare with the parameter named."""
    with pytest.raises(InvalidParameterError, match=match):
        learner.prepare(np.zeros((4, 2)), 2)


def test_non_tree_estimator_predicts_but_cannot_be_saved():
    """A Ridge adapter boosts in memory; dumps explains that only trees are saved."""
    learner = SklearnRegressor(estimator=Ridge())
    X, prob = problem(learner)
    run_rounds(learner, X, prob, rounds=1)
    assert learner.ensemble().decision_function(X).shape == (60, 3)
    with pytest.raises(ValueError, match=r"fitted with Ridge: only tree models"):
        learner.ensemble().dumps()


def test_adapter_clones_estimator():
    """The wrapped estimator is never fitted itself."""
    tree = DecisionTreeRegressor(max_depth=2)
    learner = SklearnRegressor(estimator=tree)
    X, prob = problem(learner)
    run_rounds(learner, X, prob, rounds=2)
    assert not hasattr(tree, "tree_")


def test_warm_start_continues_rounds():
    """warm_start then more rounds equals one longer run's ensemble length."""
    learner = SklearnTree(max_depth=2)
    X, prob = problem(learner)
    run_rounds(learner, X, prob, rounds=2)
    first = learner.ensemble()
    resumed = SklearnTree(max_depth=2)
    resumed.prepare(X, 3, random_state=0)
    resumed.warm_start(SklearnEnsemble.loads(first.dumps()))
    resumed.fit_round(prob)
    resumed.commit_round(1.0)
    assert resumed.ensemble().n_rounds == 3


def test_sparse_matches_dense_prediction():
    """Sparse contexts predict like dense ones."""
    learner = SklearnTree(max_depth=3)
    X, prob = problem(learner)
    run_rounds(learner, X, prob)
    ensemble = learner.ensemble()
    np.testing.assert_array_equal(
        ensemble.decision_function(sp.csr_matrix(X)), ensemble.decision_function(X)
    )


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        pytest.param(lambda o: "{", r"not valid JSON", id="truncated"),
        pytest.param(
            lambda o: json.dumps({**o, "format": "xgboost"}),
            r"not an opboost-sklearn-trees ensemble \(format 'xgboost'\)",
            id="foreign",
        ),
        pytest.param(
            lambda o: json.dumps({k: v for k, v in o.items() if k != "rounds"}),
            r"corrupted ensemble: missing key 'rounds'",
            id="missing-rounds",
        ),
        pytest.param(
            lambda o: json.dumps(
                {
                    **o,
                    "rounds": [
                        {
                            **o["rounds"][0],
                            "trees": [
                                {
                                    **o["rounds"][0]["trees"][0],
                                    "children_left": [5]
                                    * len(o["rounds"][0]["trees"][0]["children_left"]),
                                }
                            ],
                        }
                    ],
                }
            ),
            r"inconsistent",
            id="bad-children",
        ),
    ],
)
def test_loads_rejects_bad_text(edit, match):
    """Corrupted or foreign ensemble text raises ValueError saying what is wrong."""
    learner = SklearnTree(max_depth=2)
    X, prob = problem(learner)
    run_rounds(learner, X, prob, rounds=1)
    obj = json.loads(learner.ensemble().dumps())
    with pytest.raises(ValueError, match=match):
        SklearnEnsemble.loads(edit(obj))
