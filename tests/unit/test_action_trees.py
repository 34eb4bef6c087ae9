"""Stacked trees read per action (``opboost.lgbm.action_trees``): the reward-model start of
per-action trees is the stacked reward model, bit for bit."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from opboost import Booster, LoggedBandit
from opboost.algorithms.learners.lightgbm_linear_tree import linear_tree_model
from opboost.algorithms.learners.lightgbm_reward_start import fit_reward_model
from opboost.lgbm.action_trees import per_action_model
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.rows import design_rows
from opboost.simulation.datasets.bundled import SyntheticMulticlass
from opboost.simulation.supervised import supervised_to_bandit

D, K = 4, 7


def _per_action_header(X: np.ndarray, categorical=(3,)) -> str:
    data = lgb.Dataset(X, params={"verbose": -1}, categorical_feature=list(categorical))
    booster = lgb.Booster({"objective": "none", "num_class": K, "verbose": -1}, data)
    return booster.model_to_string()


def _contexts(rng: np.random.Generator, n: int, nan_share: float) -> np.ndarray:
    X = rng.normal(size=(n, D))
    X[:, 3] = rng.integers(-1, 8, n)  # categorical; -1 and 6, 7 are rarely or never seen
    X[rng.random((n, D)) < nan_share] = np.nan
    return X


def _stacked_model(X, actions, rewards, design: str, rounds: int = 30) -> lgb.Booster:
    n = len(actions)
    rows = design_rows(X, K, design).reshape(n, K, -1)[np.arange(n), actions]
    categorical = [3, D] if design == "stacked" else [3]
    params = {"objective": "regression", "verbose": -1, "num_leaves": 15, "min_data_in_leaf": 5,
              "max_cat_to_onehot": 2, "seed": 0}  # fmt: skip
    data = lgb.Dataset(rows, rewards, categorical_feature=categorical)
    return lgb.train(params, data, rounds)


def _check_same_scores(stacked, per_action, X, design):
    want = stacked.predict(design_rows(X, K, design), raw_score=True).reshape(-1, K)
    ensemble = LightGBMEnsemble(
        per_action, n_actions=K, action_design="per_action", n_features=D, n_rounds=0
    )
    np.testing.assert_array_equal(ensemble.decision_function(X), want)
    again = LightGBMEnsemble.loads(ensemble.dumps())  # the loader's checks accept the text
    np.testing.assert_array_equal(again.decision_function(X), want)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_stacked_trees_read_per_action_predict_the_same_scores_bit_for_bit(design):
    """Splits on a categorical context column, missing values, categories never seen, actions
    on either side of categorical (stacked) and indicator (onehot) splits: q(x, a) is kept."""
    rng = np.random.default_rng(0)
    X = _contexts(rng, 3000, 0.05)
    actions = rng.integers(0, K, 3000)
    paid = np.nan_to_num(X[:, 3]) == actions % 6
    rewards = np.sin(np.nan_to_num(X[:, 0]) * (actions + 1)) + paid + 0.1 * rng.normal(size=3000)
    stacked = _stacked_model(X, actions, rewards, design)
    per_action = per_action_model(stacked, design, _per_action_header(X))
    assert per_action.num_trees() == K * stacked.num_trees()
    assert per_action.num_model_per_iteration() == K and per_action.num_feature() == D
    text = per_action.model_to_string()
    assert "num_cat=0" in text and text.count("num_cat=") > text.count("num_cat=0")
    _check_same_scores(stacked, per_action, _contexts(rng, 500, 0.1), design)


def test_a_tree_split_on_the_action_alone_becomes_one_leaf_per_action():
    rng = np.random.default_rng(1)
    X = np.zeros((1000, D))  # no context split to make: the trees split on the action only
    actions = rng.integers(0, K, 1000)
    stacked = _stacked_model(X, actions, actions / K, "stacked", rounds=3)
    per_action = per_action_model(stacked, "stacked", _per_action_header(X))
    assert per_action.model_to_string().count("num_leaves=1\n") == 3 * K
    _check_same_scores(stacked, per_action, X[:50], "stacked")


def test_per_action_model_refuses_linear_trees_and_other_designs():
    rng = np.random.default_rng(2)
    X = _contexts(rng, 200, 0.0)
    header = _per_action_header(X)
    stacked_header = lgb.Booster(
        {"objective": "none", "verbose": -1}, lgb.Dataset(np.c_[X, np.zeros(200)])
    ).model_to_string()
    linear = linear_tree_model(np.ones((D, K)), np.zeros(K), "stacked", stacked_header)
    with pytest.raises(ValueError, match="tree 0 is linear"):
        per_action_model(linear, "stacked", header)
    with pytest.raises(ValueError, match="no action columns in design 'per_action'"):
        per_action_model(linear, "per_action", header)


def test_the_linear_leaves_per_action_predict_each_actions_linear_model():
    rng = np.random.default_rng(3)
    W, b = rng.normal(size=(D, K)), rng.normal(size=K)
    W[:, 0] = 0.0  # an action whose leaf has no features: its constant
    X = _contexts(rng, 40, 0.0)
    model = linear_tree_model(W, b, "per_action", _per_action_header(X))
    assert model.num_model_per_iteration() == K and model.num_trees() == K
    np.testing.assert_allclose(model.predict(X, raw_score=True), X @ W + b, rtol=1e-13, atol=1e-13)
    X[0, 1] = np.nan  # a missing value in a leaf's features: that action's constant
    np.testing.assert_array_equal(model.predict(X[:1], raw_score=True)[0, 1:], b[1:])


@pytest.mark.parametrize("linear", [False, True])
def test_the_per_action_reward_start_is_the_stacked_one(linear):
    """Both families of the reward model (trees; a linear model then trees) give the same
    F_0 = factor q whether read on stacked rows or per action."""
    rng = np.random.default_rng(4)
    n = 2000
    X = rng.normal(size=(n, D))
    actions = rng.integers(0, K, n)
    slopes = rng.normal(size=(D, K))
    signal = (X @ slopes)[np.arange(n), actions] if linear else np.abs(X[:, 0]) * (actions % 2)
    rewards = signal + 0.1 * rng.normal(size=n)
    model = fit_reward_model(X, actions, rewards, K, "stacked", "auto", 0, 1)
    assert model.report["family"] == ("linear+trees" if linear else "trees")
    stacked = model.start_model(2.5)
    per_action = model.start_model(2.5, _per_action_header(X, categorical=()))
    want = stacked.predict(design_rows(X, K, "stacked"), raw_score=True).reshape(n, K)
    np.testing.assert_allclose(per_action.predict(X, raw_score=True), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(want, 2.5 * model.q, rtol=1e-12, atol=1e-12)


def test_per_action_booster_asked_for_the_reward_start_gets_the_model_not_a_distillation():
    """Booster(warm_start="reward_model") with per-action trees starts at the stacked reward
    model itself (what the stacked design does), saved and loaded as one LightGBM text."""
    data = SyntheticMulticlass(
        n_samples=3000, n_features=8, n_classes=4, n_informative=6, random_state=0
    ).load()
    sim = supervised_to_bandit(data.X, data.y, n_actions=4, random_state=0)
    booster = Booster(
        warm_start="reward_model", n_rounds=5, random_state=0, validation_fraction=None,
        base_learner_params={"action_design": "per_action", "num_threads": 1},
    ).fit(sim.logged)  # fmt: skip
    assert booster.reward_start_["family"] in ("trees", "linear+trees")
    ensemble = booster.policy_.ensemble
    assert ensemble.n_rounds == 5 and ensemble.booster.num_trees() > 4 * 5
    logged_value = np.mean(sim.logged.rewards)
    assert np.mean(booster.predict(data.X) == data.y) > logged_value + 0.2
    again = LightGBMEnsemble.loads(ensemble.dumps())
    np.testing.assert_array_equal(
        again.decision_function(data.X), ensemble.decision_function(data.X)
    )


def test_staged_scores_of_a_per_action_fit_with_a_linear_start_end_at_its_scores():
    """A linear reward-model start enters per-action trees as one linear leaf per action; the
    staged scores read it per action (they took every action's scores of the round before)."""
    rng = np.random.default_rng(5)
    n = 3000
    X = rng.normal(size=(n, D))
    actions = rng.integers(0, K, n)
    rewards = (X @ rng.normal(size=(D, K)))[np.arange(n), actions] + 0.1 * rng.normal(size=n)
    logged = LoggedBandit(X, actions, np.full(n, 1.0 / K), rewards, K)
    learner = {"action_design": "per_action", "num_threads": 1, "num_leaves": 4}
    booster = Booster(warm_start="reward_model", n_rounds=2, random_state=0,
                      validation_fraction=None,  # every round kept
                      base_learner_params=learner).fit(logged)  # fmt: skip
    assert booster.reward_start_["family"] == "linear+trees"
    stages = list(booster.policy_.ensemble.staged_decision_function(X[:100]))
    np.testing.assert_allclose(stages[-1], booster.decision_function(X[:100]), rtol=1e-9, atol=1e-9)
    trees = booster.reward_start_["trees"]
    assert len(stages) == 1 + trees + 2  # the linear leaves, the trees, the rounds
