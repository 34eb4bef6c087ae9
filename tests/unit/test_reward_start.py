"""The reward model behind ``warm_start="reward_model"``: ridge with leave-one-out penalties, a
per-action linear model as one LightGBM linear tree, and the family chosen on held-out logs."""

from __future__ import annotations

import functools

import lightgbm as lgb
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Ridge, RidgeCV

from opboost.algorithms.learners.lightgbm_linear_tree import linear_tree_model
from opboost.algorithms.learners.lightgbm_reward_start import (
    CLEAR_GAIN_SE,
    HELD_OUT_TREES,
    MIN_HOLDOUT_ROWS_FOR_COUNT,
    MOST_COUNTED_TREES,
    REWARD_MODEL_PARAMS,
    action_split_params,
    choose_family,
    fit_reward_model,
    refit_choice,
)
from opboost.algorithms.learners.linear_reward import ALPHAS, fit_linear_rewards, ridge_loo
from opboost.api.numerics.design import action_rows
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.model_text import check_model_text
from opboost.lgbm.rows import design_rows

# --- ridge with the leave-one-out penalty ---------------------------------------------------


@pytest.mark.parametrize("n, d", [(120, 15), (25, 60)])  # the primal (n >= d) and dual paths
def test_ridge_matches_scikit_learns_leave_one_out_choice_and_coefficients(n, d):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, size=d) + 2.0
    y = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n)
    fit = ridge_loo(X, y)
    assert fit.alpha == RidgeCV(alphas=ALPHAS).fit(X, y).alpha_  # exact LOO, as scikit-learn's
    reference = Ridge(alpha=fit.alpha).fit(X, y)
    np.testing.assert_allclose(fit.coef, reference.coef_, rtol=1e-8, atol=1e-10)
    assert fit.intercept == pytest.approx(reference.intercept_, rel=1e-8, abs=1e-10)


@pytest.mark.parametrize("n, d", [(300, 40), (30, 80)])
def test_ridge_on_sparse_contexts_equals_ridge_on_their_dense_copy(n, d):
    rng = np.random.default_rng(d)
    dense = (rng.random((n, d)) < 0.1).astype(float)
    y = dense[:, :3].sum(axis=1) + 0.1 * rng.normal(size=n)
    on_sparse, on_dense = ridge_loo(sp.csr_matrix(dense), y), ridge_loo(dense, y)
    assert on_sparse.alpha == on_dense.alpha
    np.testing.assert_allclose(on_sparse.coef, on_dense.coef, rtol=1e-9, atol=1e-12)


def test_per_action_linear_rewards_recover_each_actions_own_slope():
    """r = x . w_a + b_a + noise: the shared-plus-per-action ridge recovers w_a and b_a, and an
    action with fewer than 3 rows keeps the shared model."""
    rng = np.random.default_rng(0)
    n, d, K = 3000, 5, 4
    X = rng.normal(size=(n, d))
    W, b = rng.normal(size=(d, K)), rng.normal(size=K)
    actions = rng.integers(0, K - 1, n)  # action K-1 never logged ...
    actions[:2] = K - 1  # ... but twice
    rewards = (X @ W + b)[np.arange(n), actions] + 0.05 * rng.normal(size=n)
    model = fit_linear_rewards(X, actions, rewards, K)
    np.testing.assert_allclose(model.weights[:, : K - 1], W[:, : K - 1], atol=0.02)
    np.testing.assert_allclose(model.intercepts[: K - 1], b[: K - 1], atol=0.02)
    assert np.isnan(model.alphas[K]) and not np.isnan(model.alphas[:K]).any()
    shared = ridge_loo(X, rewards)
    np.testing.assert_allclose(model.weights[:, K - 1], shared.coef)
    assert model.predict(X[:7]).shape == (7, K)


# --- the linear tree ------------------------------------------------------------------------


def _header(n_columns: int) -> str:
    data = lgb.Dataset(
        np.random.default_rng(0).normal(size=(50, n_columns)), params={"verbose": -1}
    )
    return lgb.Booster({"objective": "none", "verbose": -1}, data).model_to_string()


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("sparse", [False, True])
def test_linear_tree_predicts_each_actions_linear_model_exactly(design, K, sparse):
    rng = np.random.default_rng(K)
    d = 6
    W, b = rng.normal(size=(d, K)), rng.normal(size=K)
    W[:, 0] = 0.0  # a leaf with no features: its constant
    W[2, :] = 0.0  # a column no action uses
    n_columns = d + (K if design == "stacked_onehot" else 1)
    model = linear_tree_model(W, b, design, _header(n_columns))
    X = rng.normal(size=(9, d))
    X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)) if sparse else X
    got = model.predict(design_rows(X, K, design), raw_score=True).reshape(-1, K)
    np.testing.assert_allclose(got, np.asarray(X @ W) + b, rtol=1e-13, atol=1e-13)
    text = model.model_to_string()
    check_model_text(text, n_features=n_columns, trees_per_round=1)
    again = lgb.Booster(model_str=text).predict(design_rows(X, K, design), raw_score=True)
    np.testing.assert_array_equal(again, got.ravel())


def test_linear_tree_row_with_a_missing_value_gets_its_actions_constant():
    W, b = np.ones((3, 2)), np.array([0.25, -0.5])
    model = linear_tree_model(W, b, "stacked", _header(4))
    X = np.array([[1.0, np.nan, 2.0]])
    got = model.predict(design_rows(X, 2, "stacked"), raw_score=True)
    np.testing.assert_array_equal(got, b)


def test_linear_tree_refuses_one_action_and_candidate_pairs():
    with pytest.raises(ValueError, match="K >= 2"):
        linear_tree_model(np.ones((3, 1)), np.ones(1), "stacked", _header(4))
    with pytest.raises(ValueError, match="no linear tree for action_design='pairs'"):
        linear_tree_model(np.ones((3, 2)), np.ones(2), "pairs", _header(3))


# --- the family chosen on held-out logs -----------------------------------------------------


def test_linear_family_is_chosen_only_on_a_clear_paired_gain():
    rng = np.random.default_rng(0)
    trees = rng.normal(size=400)
    assert choose_family({"trees": trees, "linear+trees": trees}) == "trees"
    assert choose_family({"trees": trees, "linear+trees": 0.5 * trees}) == "linear+trees"
    # squared errors lower by 0.05 on average, with a paired spread of 1 (z = 1): the trees stay
    noise = rng.standard_normal(400)
    gain = 0.05 + (noise - noise.mean()) / noise.std(ddof=1)
    trees = np.full(400, 3.0)
    linear = np.sqrt(9.0 - gain)
    z = gain.mean() / (gain.std(ddof=1) / np.sqrt(400))
    assert z == pytest.approx(1.0) and z < CLEAR_GAIN_SE
    assert choose_family({"trees": trees, "linear+trees": linear}) == "trees"
    stronger = np.sqrt(9.0 - (gain + 0.06))  # z = 2.2
    assert choose_family({"trees": trees, "linear+trees": stronger}) == "linear+trees"


def _logs(kind: str, n: int = 2000, d: int = 30, K: int = 5, seed: int = 0):
    """Contexts and logged (action, reward): rewards linear in sparse binary features per
    action ("linear", bag-of-words like), or an interaction trees find and a linear model
    cannot ("xor")."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.15).astype(float)
    actions = rng.integers(0, K, n)
    if kind == "linear":
        W = rng.normal(size=(d, K)) * 0.3
        mean = X @ W
    else:
        mean = np.zeros((n, K))
        mean[:, 0] = np.logical_xor(X[:, 0] > 0, X[:, 1] > 0) * 2.0
    rewards = mean[np.arange(n), actions] + 0.3 * rng.normal(size=n)
    return X, actions, rewards, mean


@pytest.mark.parametrize("sparse", [False, True])
def test_linear_rewards_choose_the_linear_family(sparse):
    X, actions, rewards, mean = _logs("linear")
    X = sp.csr_matrix(X) if sparse else X
    model = fit_reward_model(X, actions, rewards, 5, "stacked", "auto", seed=0, num_threads=1)
    report = model.report
    assert report["family"] == "linear+trees" and report["holdout_rows"] == 400
    assert report["holdout_mse"]["linear+trees"] < report["holdout_mse"]["trees"]
    assert model.q.shape == (2000, 5)
    assert np.corrcoef(model.q.ravel(), mean.ravel())[0, 1] > 0.9
    # q on the training rows is what the model (trees + linear part) predicts
    trees = model.trees.predict(design_rows(X, 5, "stacked"), raw_score=True).reshape(-1, 5)
    np.testing.assert_allclose(model.q, trees + model.linear.predict(X), rtol=1e-12)
    assert model.trees.num_trees() == report["trees"]


def test_an_interaction_only_trees_find_keeps_reward_regressions_trees():
    """When the trees win on fewer than 1,000 held-out rows, the reward model is
    reward_regression's: 200 trees at learning rate 0.05 on EVERY logged row, the same model
    as without a choice (the action column split one against the rest, as reward regression's
    one-hot columns are)."""
    X, actions, rewards, _ = _logs("xor")
    model = fit_reward_model(X, actions, rewards, 5, "stacked", "auto", seed=0, num_threads=1)
    assert model.report["family"] == "trees" and model.linear is None
    assert model.report["holdout_mse"]["trees"] < model.report["holdout_mse"]["linear+trees"]
    assert model.report["holdout_rows"] < MIN_HOLDOUT_ROWS_FOR_COUNT
    rows = action_rows(X, actions, 5, action_encoding="index")
    params = dict(REWARD_MODEL_PARAMS, seed=0, num_threads=1, **action_split_params(5))
    data = lgb.Dataset(rows, rewards, categorical_feature=[30], params=params)
    reference = lgb.train(params, data)
    assert model.trees.num_trees() == model.report["trees"] == 200
    pairs = design_rows(X[:50], 5, "stacked")
    np.testing.assert_array_equal(
        model.trees.predict(pairs, raw_score=True), reference.predict(pairs, raw_score=True)
    )


@pytest.mark.parametrize(("n", "held_out_count"), [(6_000, True), (3_000, False)])
def test_noisy_rewards_get_as_few_trees_as_their_held_out_fit_kept(n, held_out_count):
    """Rewards that are noise around an action effect: the held-out fit stops after a few
    trees at learning rate 0.1. On 1,000 held-out rows or more the refit on every row has twice
    as many at 0.05, not reward_regression's 200 (which fitted the noise, and cost time, on the
    tuning worlds of docs/benchmarks/defaults.md); on fewer, the count is too noisy to follow
    (letter@2000 lost half its value) and the trees are 200."""
    rng = np.random.default_rng(0)
    K = 4
    X = rng.normal(size=(n, 6))
    actions = rng.integers(0, K, n)
    rewards = 0.2 * actions + rng.normal(scale=3.0, size=n)
    model = fit_reward_model(X, actions, rewards, K, "stacked", "auto", seed=0, num_threads=1)
    kept = model.report["holdout_trees"]["trees"]
    assert model.report["family"] == "trees" and kept < 50
    assert (model.report["holdout_rows"] >= MIN_HOLDOUT_ROWS_FOR_COUNT) == held_out_count
    assert model.trees.num_trees() == model.report["trees"] == (2 * kept if held_out_count else 200)


def test_rich_rewards_get_more_trees_than_reward_regression_where_their_held_out_fit_does():
    """Smooth rewards with little noise: the held-out fit goes on past 150 trees (the old
    cap) at learning rate 0.1, and the counted start takes twice its count at 0.05, past
    reward_regression's 200 (which left 0.037 of value on letter and up to 0.10 on tables of
    100,000 rows), at most MOST_COUNTED_TREES."""
    rng = np.random.default_rng(0)
    n, K = 8_000, 4
    X = rng.normal(size=(n, 6))
    actions = rng.integers(0, K, n)
    rewards = (
        np.sin(3 * X[:, 0])
        + np.cos(2 * X[:, 1]) * (actions == 1)
        + np.sin(X[:, 2] * X[:, 3]) * (actions >= 2)
        + np.abs(X[:, 4]) * (actions == 3)
        + rng.normal(scale=0.1, size=n)
    )
    model = fit_reward_model(X, actions, rewards, K, "stacked", "auto", seed=0, num_threads=1)
    kept = model.report["holdout_trees"]["trees"]
    assert model.report["family"] == "trees" and 150 < kept <= HELD_OUT_TREES
    assert model.trees.num_trees() == model.report["trees"] == 2 * kept > 200
    assert 2 * kept <= MOST_COUNTED_TREES


def test_a_repeat_fits_its_family_and_follows_the_count_where_it_says():
    """``repeat`` (what ``Booster``'s refit passes): "auto" chooses the family as without a
    repeat, and its trees follow the held-out count where ``count`` says, whatever the number
    of held-out rows (600 here, below the rule's 1,000); a named family is fitted alone on the
    held-out rows for its count; without a count there is no held-out fit: 200 trees."""
    X, actions, rewards, _ = _logs("linear", n=3000)
    noise = np.random.default_rng(1).normal(scale=3.0, size=len(rewards))
    fit = functools.partial(fit_reward_model, X, actions, n_actions=5, design="stacked",
                            categorical="auto", seed=0, num_threads=1)  # fmt: skip
    chosen = fit(rewards=noise)
    assert chosen.report["family"] == "trees" and chosen.trees.num_trees() == 200
    assert chosen.report["holdout_rows"] == 600 < MIN_HOLDOUT_ROWS_FOR_COUNT
    assert refit_choice(chosen.report) == {"family": "auto", "count": False}
    counted = fit(rewards=noise, repeat={"family": "auto", "count": True})
    kept = counted.report["holdout_trees"]["trees"]
    assert counted.report["family"] == "trees" and set(counted.report["holdout_trees"]) == {
        "trees",
        "linear+trees",
    }
    assert counted.trees.num_trees() == counted.report["trees"] == 2 * kept < 200
    assert refit_choice(counted.report) == {"family": "auto", "count": True}
    trees = fit(rewards=rewards, repeat={"family": "trees", "count": True})  # linear logs
    assert trees.report["family"] == "trees" and trees.linear is None
    assert list(trees.report["holdout_trees"]) == ["trees"]
    fixed = fit(rewards=rewards, repeat={"family": "trees", "count": False})
    assert fixed.trees.num_trees() == 200 and "holdout_trees" not in fixed.report
    linear = fit(rewards=noise, repeat={"family": "linear+trees", "count": True})
    assert list(linear.report["holdout_trees"]) == ["linear+trees"] and linear.linear is not None
    assert linear.report["repeated"] == {"family": "linear+trees", "count": True}
    count = linear.report["holdout_trees"]["linear+trees"]
    assert linear.trees.num_trees() == 2 * count  # no race with the trees: none were fitted


def test_few_logs_fit_reward_regressions_trees_on_every_row():
    """Under 20 held-out rows (here 18 of 90) nothing is held out: reward_regression's trees."""
    X, actions, rewards, _ = _logs("linear", n=90)
    rewards = rewards + 3.0 * (actions < 2)  # a split LightGBM can make on 90 rows
    model = fit_reward_model(X, actions, rewards, 5, "stacked", "auto", seed=0, num_threads=1)
    assert model.report["family"] == "trees" and model.linear is None
    assert model.report["linear_skipped"] == "fewer than 20 rows to hold out"
    assert "holdout_mse" not in model.report
    assert model.report["trees"] == model.trees.num_trees() > 1


def test_linear_family_leaves_out_columns_with_missing_values():
    """A NaN in column 2 keeps that column out of the linear model (weight 0, never read:
    q stays finite) while the other columns still carry it; the trees route the NaN."""
    X, actions, rewards, _ = _logs("linear")
    X[3, 2] = np.nan
    model = fit_reward_model(X, actions, rewards, 5, "stacked", "auto", seed=0, num_threads=1)
    assert model.report["family"] == "linear+trees" and model.report["linear_skipped"] is None
    assert np.all(model.linear.weights[2] == 0.0) and np.any(model.linear.weights[0] != 0.0)
    assert np.all(np.isfinite(model.q)) and np.all(np.isfinite(model.linear.predict(X)))
    X[:, :] = np.nan  # no column left
    model = fit_reward_model(X, actions, rewards, 5, "stacked", "auto", seed=0, num_threads=1)
    assert model.report["family"] == "trees" and "holdout_mse" not in model.report
    assert model.report["linear_skipped"] == "every numeric context column has missing values"


def test_categorical_columns_stay_out_of_the_linear_model():
    X, actions, rewards, _ = _logs("linear")
    X[:, 5] = np.random.default_rng(1).integers(0, 4, len(X))  # codes of a category
    model = fit_reward_model(X, actions, rewards, 5, "stacked", [5], seed=0, num_threads=1)
    assert model.report["family"] == "linear+trees"
    assert np.all(model.linear.weights[5] == 0.0)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
def test_the_start_model_is_factor_times_q_and_saves_bit_identically(design):
    X, actions, rewards, _ = _logs("linear", n=800)
    model = fit_reward_model(X, actions, rewards, 5, design, "auto", seed=0, num_threads=1)
    assert model.report["family"] == "linear+trees"
    q = model.q.copy()
    start = model.start_model(2.5)
    rows = design_rows(X, 5, design)
    np.testing.assert_allclose(
        start.predict(rows, raw_score=True).reshape(-1, 5), 2.5 * q, rtol=1e-10, atol=1e-10
    )
    ensemble = LightGBMEnsemble(start, n_actions=5, action_design=design, n_features=30, n_rounds=0)
    loaded = LightGBMEnsemble.loads(ensemble.dumps())
    np.testing.assert_array_equal(loaded.decision_function(X), ensemble.decision_function(X))


def test_a_held_out_fit_that_never_stalls_keeps_every_tree():
    """A held-out fit whose error falls at every tree runs to its last tree and reports all of
    them, with the held-out errors of that model (LightGBM's best_iteration stays 0 when no
    stop is raised; reading it gave one tree's errors and chose the wrong family)."""
    from opboost.algorithms.learners.lightgbm_reward_start import (
        SELECTION_PARAMS,
        LoggedRows,
        _held_out_fit,
    )

    rng = np.random.default_rng(0)
    n = 4000
    X = rng.uniform(size=(n, 3))
    rewards = np.sin(6 * X[:, 0]) + X[:, 1] ** 2  # smooth: every tree helps a little
    held = np.zeros(n, dtype=bool)
    held[rng.permutation(n)[:800]] = True
    data = LoggedRows(X, rewards, None, [])
    params = dict(SELECTION_PARAMS, num_iterations=40, seed=0, num_threads=1)
    count, errors = _held_out_fit(params, data, ~held, held)
    assert count == 40
    reference = lgb.train(params, lgb.Dataset(X[~held], rewards[~held], params=params))
    np.testing.assert_allclose(errors, rewards[held] - reference.predict(X[held]), rtol=1e-10)


@pytest.mark.parametrize("design", ["stacked", "stacked_onehot"])
@pytest.mark.parametrize("kind", ["linear", "xor"])
def test_q_read_from_the_policys_pairs_is_the_models_prediction(design, kind):
    """With the policy's Dataset of every pair, q comes from the final trees' scores on it
    (LightGBM's validation scores on the binned pairs, no predict): it equals the model's own
    prediction on the designed pairs, for either family."""
    from opboost.algorithms.learners.lightgbm_tree import LightGBMTree

    X, actions, rewards, _ = _logs(kind, n=1000)
    learner = LightGBMTree(num_threads=1, action_design=design)
    learner.prepare(X, 5, random_state=0)
    pairs = learner.booster_.train_set
    model = fit_reward_model(X, actions, rewards, 5, design, "auto", 0, 1, pairs=pairs)
    assert model.report["family"] == ("linear+trees" if kind == "linear" else "trees")
    predicted = model.trees.predict(design_rows(X, 5, design), raw_score=True).reshape(-1, 5)
    if model.linear is not None:
        predicted += model.linear.predict(X)
    np.testing.assert_allclose(model.q, predicted, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "bad",
    [
        {"family": "linear+trees", "count": False},  # the linear family always follows its count
        {"family": "oak", "count": True},
        {"family": "trees"},
        {"family": "trees", "count": 1},
    ],
)
def test_a_bad_reward_start_is_refused_with_what_it_takes(bad):
    from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
    from opboost.api.exceptions import InvalidParameterError

    message = (
        "The 'reward_start' parameter of LightGBMTree must be None or a dict "
        '{"family": "auto" or "trees", "count": true or false} or {"family": "linear+trees", '
        f'"count": true}}. Got {bad!r} instead.'
    )
    with pytest.raises(InvalidParameterError) as caught:
        LightGBMTree(reward_start=bad).validate_params()
    assert str(caught.value) == message


def test_huge_contexts_of_both_signs_have_no_missing_value_and_warn_nothing():
    """The missing-value check sums the contexts once; values near 1e308 of both signs overflow
    to inf - inf = NaN, which is no missing value: it says so, without numpy's overflow and
    invalid-value warnings (they showed in every run of the 1e308 reliability test)."""
    import warnings

    import scipy.sparse as sp

    from opboost.algorithms.learners.lightgbm_reward_start import _has_missing

    huge = np.tile([1e308, -1e308], (64, 1))  # numpy's pairwise sum: inf + (-inf) = NaN
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _has_missing(huge) and not _has_missing(sp.csr_matrix(huge))
        huge[5, 1] = np.nan
        assert _has_missing(huge) and _has_missing(sp.csr_matrix(huge))
        assert not _has_missing(np.ones((3, 2)))
