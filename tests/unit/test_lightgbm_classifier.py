"""Unit tests of ``lightgbm_tree_classifier``: LightGBM Gini trees, classification reduction."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from opboost import Booster, load_policy
from opboost.algorithms.learners.lightgbm_classifier import LightGBMTreeClassifier
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.lgbm.rows import design_rows

N, D, K = 500, 4, 3


@pytest.fixture(scope="module")
def contexts() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(N, D))


def _problem(X: np.ndarray, seed: int) -> BaseProblem:
    """+-1 labels that depend on the context and the action, with exponential weights."""
    rng = np.random.default_rng(seed)
    score = X[:, :1] * (np.arange(K) - 1) + 0.5 * rng.normal(size=(len(X), K))
    labels = np.where(score > 0, 1.0, -1.0)
    return BaseProblem("classification", labels, rng.exponential(size=(len(X), K)))


def _learner(**kw) -> LightGBMTreeClassifier:
    params = {"num_leaves": 8, "min_data_in_leaf": 10, "num_threads": 1, "random_state": 0}
    return LightGBMTreeClassifier(**{**params, **kw})


def test_outputs_are_the_weighted_majority_label_of_each_leaf(contexts):
    """f is +-1 and, within every leaf, the label holding the larger weight."""
    learner = _learner()
    learner.prepare(contexts, K)
    problem = _problem(contexts, 1)
    f = learner.fit_round(problem)
    assert set(np.unique(f)) == {-1.0, 1.0}
    rows = design_rows(contexts, K, "stacked")
    leaf = learner.booster_.predict(rows, pred_leaf=True).ravel()
    w, y, f = (a.ravel() for a in (problem.weights, problem.targets, f))
    for j in np.unique(leaf):
        in_leaf = leaf == j
        majority = 1.0 if np.sum(w[in_leaf] * y[in_leaf]) > 0 else -1.0
        assert np.all(f[in_leaf] == majority)


def _child_gini(leaf: np.ndarray, problem: BaseProblem) -> float:
    """Sum over the leaves of leaf weight x weighted Gini impurity 2p(1-p)."""
    w, y = problem.weights.ravel(), problem.targets.ravel()
    total = 0.0
    for j in np.unique(leaf):
        in_leaf = leaf == j
        p = np.sum(w[in_leaf] * (y[in_leaf] > 0)) / np.sum(w[in_leaf])
        total += np.sum(w[in_leaf]) * 2 * p * (1 - p)
    return float(total)


def test_stump_splits_like_a_weighted_gini_stump():
    """Least squares on +-1 labels splits like weighted Gini: scikit-learn's optimum.

    Integer features keep LightGBM's bins exact, so both search the same thresholds.
    """
    X = np.random.default_rng(3).integers(0, 12, size=(N, D)).astype(float)
    problem = _problem(X, 2)
    learner = _learner(num_leaves=2, min_data_in_leaf=1, action_design="stacked_onehot")
    learner.prepare(X, K)
    learner.fit_round(problem)
    rows = design_rows(X, K, "stacked_onehot")
    ours = learner.booster_.predict(rows, pred_leaf=True).ravel()
    stump = DecisionTreeClassifier(max_depth=1, criterion="gini", random_state=0)
    stump.fit(rows, problem.targets.ravel(), sample_weight=problem.weights.ravel())
    root = _child_gini(np.zeros(N * K), problem)
    best = _child_gini(stump.apply(rows), problem)
    assert best < root
    assert _child_gini(ours, problem) == pytest.approx(best, rel=1e-5)


def test_ensemble_predicts_the_committed_alpha_times_labels(contexts):
    """The saved LightGBM model's raw scores equal sum_t alpha_t f_t on the training rows."""
    learner = _learner()
    learner.prepare(contexts, K)
    F = np.zeros((N, K))
    for t, alpha in enumerate([0.7, -0.3, 1.2]):
        f = learner.fit_round(_problem(contexts, 10 + t))
        learner.commit_round(alpha)
        F += alpha * f
        np.testing.assert_array_equal(learner.predict_round(contexts), f)
    np.testing.assert_allclose(learner.ensemble().decision_function(contexts), F, atol=1e-12)


def test_regression_problems_are_refused(contexts):
    learner = _learner()
    learner.prepare(contexts, K)
    problem = BaseProblem("regression", np.zeros((N, K)), np.ones((N, K)))
    with pytest.raises(InvalidParameterError, match="solves the 'classification' reduction"):
        learner.fit_round(problem)
    labels = BaseProblem("classification", np.full((N, K), 0.5), np.ones((N, K)))
    with pytest.raises(InvalidParameterError, match=r"must be \+-1 labels; got values \[0.5\]"):
        learner.fit_round(labels)


@pytest.mark.parametrize("objective", ["bopl", "bopl_s"])
def test_booster_with_the_classifier_saves_and_reloads(objective, synthetic_log, tmp_path):
    """Both objectives run the classification reduction with it; the policy reloads exactly."""
    booster = Booster(
        objective=objective,
        base_learner="lightgbm_tree_classifier",
        base_learner_params={"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1},
        n_rounds=5,
        random_state=0,
    ).fit(synthetic_log.data)
    assert booster.n_rounds_ >= 1
    X = synthetic_log.data.contexts
    booster.save(tmp_path / "policy")
    np.testing.assert_array_equal(
        load_policy(tmp_path / "policy").decision_function(X), booster.decision_function(X)
    )
