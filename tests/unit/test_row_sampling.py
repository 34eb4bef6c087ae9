"""Rows sampled for a round's tree (``lightgbm_tree``'s ``row_sampling``, LightGBM's GOSS): when
"auto" samples, that each leaf is set from every row (LightGBM's own leaf without sampling),
that the step is still taken on every row (the risk never rises), that a fit is reproducible,
and that the policy reached is as good as with every row."""

from __future__ import annotations

import re

import lightgbm as lgb
import numpy as np
import pytest

from opboost import Booster
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.lgbm.model_text import leaf_values
from opboost.lgbm.sampling import (
    GOSS_MIN_CELLS,
    GOSS_MIN_COLUMNS,
    GOSS_PARAMS,
    designed_shape,
    full_row_leaves,
    row_sampling_params,
    set_leaf_outputs,
)
from opboost.simulation.supervised import supervised_to_bandit

GOSS = {**GOSS_PARAMS, "force_col_wise": True}


def test_auto_samples_large_wide_stacked_designs_only():
    wide = (GOSS_MIN_CELLS // GOSS_MIN_COLUMNS, GOSS_MIN_COLUMNS)  # rows, columns
    assert row_sampling_params("auto", wide, "stacked", None) == GOSS
    assert row_sampling_params("auto", wide, "stacked_onehot", {}) == GOSS
    assert row_sampling_params("auto", (wide[0] - 1, wide[1]), "stacked", None) == {}
    narrow = (10 * GOSS_MIN_CELLS, GOSS_MIN_COLUMNS - 1)  # many cells, too few columns
    assert row_sampling_params("auto", narrow, "stacked", None) == {}
    assert row_sampling_params("auto", (10 * wide[0], wide[1]), "per_action", None) == {}
    assert row_sampling_params("none", (10 * wide[0], wide[1]), "stacked", None) == {}
    assert row_sampling_params("goss", (10, 2), "stacked", None) == GOSS
    # the user's own layout stays; the user's own sampling wins over "auto"
    layout = row_sampling_params("auto", wide, "stacked", {"force_row_wise": True})
    assert layout == GOSS_PARAMS
    bagging = {"bagging_fraction": 0.5, "bagging_freq": 1}
    assert row_sampling_params("auto", wide, "stacked", bagging) == {}
    alias = {"subsample": 0.5}  # LightGBM's alias of bagging_fraction
    assert row_sampling_params("auto", wide, "stacked", alias) == {}
    assert designed_shape(100, 7, 4, "stacked") == (400, 8)
    assert designed_shape(100, 7, 4, "stacked_onehot") == (400, 11)
    assert designed_shape(100, 7, 4, "per_action") == (400, 7)  # K trees on n rows: n*K


def test_goss_with_the_users_own_sampling_is_refused():
    expected = (
        "The 'row_sampling' parameter of lightgbm_tree: 'goss' samples the rows itself, but "
        "params also sets ['bagging_fraction', 'bagging_freq']; drop those params or use "
        "row_sampling='none' to keep them."
    )
    with pytest.raises(InvalidParameterError, match=f"^{re.escape(expected)}$"):
        row_sampling_params(
            "goss", (10, 2), "stacked", {"bagging_fraction": 0.5, "bagging_freq": 1}
        )


def one_tree(sampling: dict, lambda_l2: float):
    """The second of two LightGBM trees grown from seeded custom gradients: (its leaf
    values, outputs on the training rows, each row's leaf by LightGBM, grad, hess)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    grad = (X[:, 0] + rng.normal(size=3000)).astype(np.float32)
    hess = rng.uniform(0.5, 2.0, size=3000).astype(np.float32)
    params = {"objective": "none", "learning_rate": 1.0, "num_leaves": 15, "verbose": -1}
    params.update(sampling, lambda_l2=lambda_l2, seed=0, num_threads=1, deterministic=True)
    booster = lgb.Booster(params, lgb.Dataset(X, params=params))
    for _ in range(2):  # GOSS samples from the second tree on (learning rate 1)
        booster.update(fobj=lambda preds, data: (grad, hess))
    values = np.asarray(leaf_values(booster.model_to_string())[1])
    outputs = booster.predict(X, raw_score=True, start_iteration=1, num_iteration=1)
    return values, outputs, booster.predict(X, pred_leaf=True)[:, 1], grad, hess


@pytest.mark.parametrize("lambda_l2", [0.0, 1.0])
def test_full_row_leaves_of_an_unsampled_tree_are_lightgbms_own(lambda_l2):
    values, outputs, leaf, grad, hess = one_tree({}, lambda_l2)
    full, rows_leaf = full_row_leaves(values, outputs, grad, hess, lambda_l2)
    assert np.array_equal(rows_leaf, leaf)
    np.testing.assert_allclose(full, values, rtol=1e-6)


def test_a_sampled_trees_leaves_become_every_rows():
    values, outputs, leaf, grad, hess = one_tree(GOSS_PARAMS, 0.0)
    full, rows_leaf = full_row_leaves(values, outputs, grad, hess, 0.0)
    assert rows_leaf.dtype == np.uint8 and np.array_equal(rows_leaf, leaf)
    for index in range(len(values)):  # -G/H over ALL the leaf's rows, not the sample's
        rows = leaf == index
        g, h = grad[rows].astype(np.float64).sum(), hess[rows].astype(np.float64).sum()
        assert full[index] == pytest.approx(-g / h, rel=1e-12)
    assert not np.allclose(full, values)  # GOSS's own leaves were estimates
    assert (
        full_row_leaves(np.array([0.5, 0.5]), outputs, grad, hess, 0.0) is None
    )  # tied leaves: no refit
    moved = outputs.copy()
    set_leaf_outputs(full, rows_leaf, moved)
    np.testing.assert_array_equal(moved, full[leaf])


def test_each_action_tree_of_a_sampled_round_gets_every_rows_leaves(monkeypatch):
    """per_action: the K trees of a sampled round (a num_class=K model), each grown from its
    action's gradients, get -G/H over all n rows of its leaves, and the round's outputs are
    those leaves."""
    import opboost.algorithms.learners.lightgbm_tree as module

    grown = []
    original = module.update_one_iter

    def keep(booster, grad, hess):
        grown.append((grad.copy(), hess.copy()))
        return original(booster, grad, hess)

    monkeypatch.setattr(module, "update_one_iter", keep)
    rng = np.random.default_rng(0)
    n, K = 3000, 3
    X = rng.normal(size=(n, 4))
    learner = LightGBMTree(
        num_leaves=8, num_threads=1, action_design="per_action", row_sampling="goss"
    )
    learner.prepare(X, K, random_state=0)
    for _ in range(2):  # GOSS samples from the second round on (learning rate 1)
        targets = X[:, :1] * np.arange(1, K + 1) + rng.normal(size=(n, K))
        weights = rng.uniform(0.5, 2.0, size=(n, K))
        f = learner.fit_round(BaseProblem("regression", targets, weights))
        learner.commit_round(1.0)
    grad, hess = (a.reshape(K, n).astype(np.float64) for a in grown[-1])
    model = learner.booster_
    leaf = model.predict(X, pred_leaf=True, start_iteration=1, num_iteration=1)  # (n, K)
    trees = leaf_values(model.model_to_string(start_iteration=1, num_iteration=1))
    for k in range(K):
        values = np.asarray(trees[k])
        expected = [
            -grad[k, leaf[:, k] == j].sum() / hess[k, leaf[:, k] == j].sum()
            for j in range(len(values))
        ]
        np.testing.assert_allclose(values, expected, rtol=1e-10)
        np.testing.assert_allclose(f[:, k], values[leaf[:, k]], rtol=1e-10)


def test_the_learner_records_and_passes_the_sampling():
    X = np.random.default_rng(0).normal(size=(500, 4))
    for sampling, used in (("goss", "goss"), ("none", "none"), ("auto", "none")):
        learner = LightGBMTree(num_threads=1, row_sampling=sampling)
        learner.prepare(X, 3, random_state=0)
        assert learner.row_sampling_ == used
        params = learner.booster_.params
        assert (params.get("data_sample_strategy") == "goss") == (used == "goss")
        # the Dataset's parameters are the reward-model start's too: it uses every row
        assert "data_sample_strategy" not in learner.booster_.train_set.get_params()
    with pytest.raises(InvalidParameterError, match="'row_sampling' parameter of LightGBMTree"):
        LightGBMTree(row_sampling="half").prepare(X, 3, random_state=0)


@pytest.fixture(scope="module")
def logs(digits):
    sim = supervised_to_bandit(digits.X[:1500], digits.y[:1500], n_actions=10, random_state=0)
    return sim.logged, digits.X[1500:], digits.y[1500:]


def fit(logged, sampling, seed=0, design="stacked", **params):
    learner = {"num_threads": 1, "row_sampling": sampling, "action_design": design}
    return Booster(random_state=seed, base_learner_params=learner, **params).fit(logged)


@pytest.mark.parametrize("design", ["stacked", "per_action"])
def test_the_step_is_on_every_row_so_the_risk_never_rises(logs, design):
    """BOPL-S's closed-form step minimises its bound on the risk over every row, whichever
    rows grew the trees: the training risk falls or stays each round under GOSS too, with
    one stacked tree a round or one per action."""
    logged, _, _ = logs
    booster = fit(logged, "goss", 0, design, objective="bopl_s", warm_start="none", n_rounds=15)
    assert np.all(np.diff(booster.history_["train_objective"]) <= 1e-12)
    assert booster.history_["train_objective"][-1] < booster.history_["train_objective"][0]


def test_sampled_fits_are_reproducible_and_as_good(logs):
    logged, X_test, y_test = logs
    rewards = {"goss": [], "none": []}
    for seed in range(3):
        for sampling in rewards:
            booster = fit(logged, sampling, seed, validation_fraction=None, n_rounds=30)
            rewards[sampling].append(np.mean(booster.predict(X_test) == y_test))
    again = fit(logged, "goss", 2, validation_fraction=None, n_rounds=30)
    assert np.mean(again.predict(X_test) == y_test) == rewards["goss"][2]
    gap = np.array(rewards["goss"]) - np.array(rewards["none"])
    assert gap.mean() > -0.02 and min(rewards["goss"]) > 0.8  # the logging policy: about 0.33


def test_a_sampled_tree_that_splits_on_no_action_hands_the_fit_to_every_row():
    """On 1,200 contexts x 4 actions the third round's sampled tree splits on context columns
    only: once its leaves are every row's they are 0 (a context's softmax gradients sum to
    0), the step is 0 and the fit used to stop there. Such a tree is dropped and this round
    and the rest are grown on every row: all 8 rounds run, the risk falling."""
    from sklearn.datasets import make_classification

    from opboost.lgbm.sampling import splits_on_actions

    X, y = make_classification(n_samples=1200, n_features=8, n_informative=5, n_classes=4,
                               random_state=1)  # fmt: skip
    logged = supervised_to_bandit(X, y, n_actions=4, random_state=1).logged
    tree = {"num_leaves": 7, "min_data_in_leaf": 10, "num_threads": 1}
    params = {"objective": "bopl_s", "warm_start": "none", "n_rounds": 8, "random_state": 3}
    sampled = Booster(base_learner_params={**tree, "row_sampling": "goss"}, **params)
    sampled.fit(logged)
    assert sampled.n_rounds_ == 8, sampled.stop_reason_
    risk = sampled.history_["train_objective"]
    assert np.all(np.diff(risk) <= 1e-12)
    # every tree of the fit changes the policy: each splits on the action column (8)
    model = sampled.policy_.ensemble.booster
    for t in range(model.num_trees()):
        text = model.model_to_string(start_iteration=t, num_iteration=1)
        assert splits_on_actions(lgb.Booster(model_str=text), 8), t


@pytest.mark.parametrize("table", [True, False])
def test_each_row_finds_its_leaf_from_its_output(monkeypatch, table):
    """A row's leaf is the one whose value is nearest its output (LightGBM's cached scores
    round it): read off a table of cells (or, for leaf values too unevenly spaced for a
    table of MAX_LEAF_TABLE cells, by bisection), the same leaf either way, with G and H the
    sums of each leaf's rows."""
    from opboost.lgbm import sampling

    if not table:
        monkeypatch.setattr(sampling, "MAX_LEAF_TABLE", 1)
    rng = np.random.default_rng(3)
    values = rng.normal(size=63) * 0.3
    values[5] = values[4] + 1e-5  # two close leaves: a fine grid (still within the table)
    leaf = rng.integers(0, 63, 200_000)
    scores = rng.normal(size=leaf.size) * 20
    outputs = (scores + values[leaf]) - scores  # as a change of cached scores
    grad, hess = rng.normal(size=leaf.size), rng.random(leaf.size)
    G, H, found = sampling.leaf_sums(values, outputs, grad, hess)
    np.testing.assert_array_equal(found, leaf)
    np.testing.assert_allclose(G, np.bincount(leaf, grad, 63), rtol=1e-10)
    np.testing.assert_allclose(H, np.bincount(leaf, hess, 63), rtol=1e-10)
    assert (sampling._sorted_leaves(values)[1].base is None) == (not table)
    # evenly spaced leaves put every midpoint on a cell's edge
    even = np.arange(-3.0, 4.0) * 0.25
    _, _, found = sampling.leaf_sums(even, (scores + even[leaf % 7]) - scores, grad, hess)
    np.testing.assert_array_equal(found, leaf % 7)


def test_the_policy_after_the_hand_over_is_the_fit(monkeypatch):
    """The hand-over to every row rebuilds LightGBM's Booster with the trees so far (here the
    reward-model start's linear tree and trees in front): the fitted policy's softmax scores
    the training logs exactly as the fit's last round did."""
    from opboost.algorithms.learners.lightgbm_commits import CommittedRounds
    from opboost.api.numerics.softmax import softmax

    handed_over = []
    stop = CommittedRounds._stop_sampling
    monkeypatch.setattr(
        CommittedRounds, "_stop_sampling", lambda self: handed_over.append(1) or stop(self)
    )
    rng = np.random.default_rng(1)  # rewards linear in x per action: the linear family wins
    X, weights = rng.normal(size=(1200, 8)), rng.normal(size=(8, 4))
    actions = rng.integers(4, size=1200)
    rewards = (X @ weights)[np.arange(1200), actions] + 0.3 * rng.normal(size=1200)
    logged = LoggedBandit(X, actions, np.full(1200, 0.25), rewards, n_actions=4)
    tree = {"num_threads": 1, "row_sampling": "goss", "num_leaves": 7, "min_data_in_leaf": 10}
    booster = Booster(random_state=0, validation_fraction=None, n_rounds=40,
                      base_learner_params=tree).fit(logged)  # fmt: skip
    assert handed_over and booster.n_rounds_ == 40
    assert booster.reward_start_["family"] == "linear+trees"
    pi = softmax(booster.decision_function(logged.contexts))
    rows = np.arange(len(logged))
    value = np.mean(pi[rows, logged.actions] * logged.rewards / logged.propensities)
    assert value == pytest.approx(booster.history_["train_value"][-1], rel=1e-12)
