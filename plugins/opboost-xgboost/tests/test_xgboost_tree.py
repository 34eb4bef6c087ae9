"""XGBoostTree rounds, alpha-scaled XGBoost models, text round trips and error messages."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import xgboost as xgb
from opboost_xgboost.tree import FORMAT, XGBoostEnsemble, XGBoostTree, _stacked

from opboost.api import BaseProblem, InvalidParameterError

N, D, K = 60, 4, 3


def _problem(seed: int) -> BaseProblem:
    rng = np.random.default_rng(seed)
    return BaseProblem("regression", rng.normal(size=(N, K)), rng.random((N, K)))


@pytest.fixture
def contexts() -> np.ndarray:
    """(60, 4) seeded contexts with about a third exact zeros."""
    X = np.random.default_rng(0).normal(size=(N, D))
    return np.where(np.abs(X) < 0.4, 0.0, X)


def _fit(X, alphas, **params) -> tuple[XGBoostTree, list[np.ndarray]]:
    learner = XGBoostTree(max_depth=3, random_state=0, **params)
    learner.prepare(X, K)
    fs = []
    for t, alpha in enumerate(alphas):
        fs.append(learner.fit_round(_problem(t)))
        learner.commit_round(alpha)
    return learner, fs


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_xgboost_model_predicts_F_natively(contexts, sparse):
    """The saved XGBoost model alone predicts F = sum alpha_t f_t; alpha-0 rounds are dropped."""
    X = sp.csr_matrix(contexts) if sparse else contexts
    learner, fs = _fit(X, [0.5, 0.0, -2.0])
    ensemble = learner.ensemble()
    expected = 0.5 * fs[0] - 2.0 * fs[2]
    model_text = ensemble.dumps().partition("\n")[2]
    native = xgb.Booster(model_file=bytearray(model_text.encode()))
    rows = xgb.DMatrix(_stacked(X, K, sparse))
    assert native.num_boosted_rounds() == ensemble.n_rounds == 2
    np.testing.assert_allclose(
        native.predict(rows, output_margin=True).reshape(N, K), expected, rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(ensemble.decision_function(X), expected, rtol=1e-6, atol=1e-6)


def test_xgboost_leaves_are_weighted_means(contexts):
    """With reg_lambda 0 an unsplit tree's leaf is the weighted mean of the targets.

    Weights are rescaled to mean 1 (total N*K = 180), so min_child_weight 100 forbids splits.
    """
    learner = XGBoostTree(max_depth=1, min_child_weight=100.0, random_state=0)
    learner.prepare(contexts, K)
    problem = _problem(3)
    f = learner.fit_round(problem)
    mean = np.sum(problem.weights * problem.targets) / np.sum(problem.weights)
    np.testing.assert_allclose(f, np.full((N, K), mean), rtol=1e-5)


def test_xgboost_raw_hessian_units_count_the_weights_as_given(contexts):
    """hessian_units="raw": min_child_weight counts the objective's own weights (the paper's
    XGBoost units); the default counts typical rows, whatever the weights' scale."""
    problem = _problem(4)
    small = BaseProblem("regression", problem.targets, problem.weights * 1e-3)
    limit = 1.0  # below the N*K = 180 typical rows, above the raw total (about 0.09)
    for units, split in (("mean", True), ("raw", False)):
        learner = XGBoostTree(max_depth=2, min_child_weight=limit, hessian_units=units)
        learner.prepare(contexts, K)
        f = learner.fit_round(small)
        assert (np.ptp(f) > 1e-9) == split, units


def test_xgboost_uncommitted_round_is_left_out(contexts):
    """A fitted round that is never committed is not part of the ensemble."""
    learner, fs = _fit(contexts, [1.5])
    learner.fit_round(_problem(9))
    np.testing.assert_allclose(
        learner.ensemble().decision_function(contexts), 1.5 * fs[0], rtol=1e-6, atol=1e-6
    )
    np.testing.assert_array_equal(learner.predict_round(contexts), fs[0])


def test_xgboost_dumps_loads_bit_identical(contexts):
    """loads(dumps()) predicts bit-identically, including staged scores."""
    ensemble = _fit(contexts, [0.3, 0.7, 1.1], tree_method="hist")[0].ensemble()
    text = ensemble.dumps()
    loaded = XGBoostEnsemble.loads(text)
    np.testing.assert_array_equal(
        loaded.decision_function(contexts), ensemble.decision_function(contexts)
    )
    staged = list(loaded.staged_decision_function(contexts))
    assert len(staged) == 3
    np.testing.assert_array_equal(staged[-1], ensemble.decision_function(contexts))
    assert loaded.dumps() == text


def test_xgboost_seeded_fits_are_identical(contexts):
    """Two fits with the same seed save the same text."""
    first = _fit(contexts, [0.5, 1.0])[0].ensemble().dumps()
    assert _fit(contexts, [0.5, 1.0])[0].ensemble().dumps() == first


def test_xgboost_loads_rejects_foreign_text():
    """Text that is not an xgboost_json_v1 ensemble is a ValueError naming the format."""
    with pytest.raises(ValueError, match=f"Not a {FORMAT} ensemble: the first line"):
        XGBoostEnsemble.loads('{"format": "lightgbm_text_v1"}\ntree')


def test_xgboost_loads_rejects_edited_model(contexts):
    """An edited model part fails the SHA-256 check before XGBoost parses it."""
    text = _fit(contexts, [0.5])[0].ensemble().dumps()
    with pytest.raises(ValueError, match="does not match the SHA-256 in its header"):
        XGBoostEnsemble.loads(text.replace('"num_trees":"1"', '"num_trees":"2"', 1) + " ")


def test_xgboost_bad_tree_method_message(contexts):
    """An unknown tree_method names the parameter, the choices and the value."""
    learner = XGBoostTree(tree_method="approx")
    with pytest.raises(
        InvalidParameterError,
        match=r"The 'tree_method' parameter of XGBoostTree must be one of \{'exact', 'hist'\}. "
        r"Got 'approx' instead",
    ):
        learner.prepare(contexts, K)


def test_xgboost_rejects_classification_problem(contexts):
    """A classification problem is refused with a pointer to a classification learner."""
    learner = XGBoostTree()
    learner.prepare(contexts, K)
    problem = BaseProblem("classification", np.ones((N, K)), np.ones((N, K)))
    with pytest.raises(InvalidParameterError, match="solves the 'regression' reduction"):
        learner.fit_round(problem)


def test_xgboost_predict_checks_feature_count(contexts):
    """Contexts with the wrong number of features are refused with both counts."""
    ensemble = _fit(contexts, [1.0])[0].ensemble()
    with pytest.raises(InvalidParameterError, match="have 5 features but the model was fitted"):
        ensemble.decision_function(np.zeros((2, 5)))
