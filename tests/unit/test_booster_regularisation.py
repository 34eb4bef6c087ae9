"""Booster regularisation: learning-rate shrinkage, the L2-penalised step (London et al.,
appendix E), the best-constant warm start, variance-aware objectives end to end, and the
parameter errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opboost import Booster
from opboost.algorithms.estimators.direct import DirectMethod
from opboost.algorithms.learners.lightgbm_reward_start import fit_reward_model
from opboost.algorithms.objectives import softmax
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.serving.tie_order import constant_action_values
from opboost.api.validation import check_random_state
from opboost.core.fit.warm_start import (
    LOGGING_WARM_MEMBERS,
    REWARD_WARM_MEMBERS,
    reward_temperature,
)
from opboost.lgbm.rows import design_rows
from opboost.simulation.supervised import expected_reward, supervised_to_bandit

LGB = {"num_threads": 1, "num_leaves": 8}


@pytest.fixture(scope="module")
def digits_log(digits):
    """Logged feedback on the first 1,200 digits rows; the rest labelled for true rewards."""
    sim = supervised_to_bandit(digits.X[:1200], digits.y[:1200], n_actions=10, random_state=0)
    return sim.logged, digits.X[1200:], digits.y[1200:]


def first_round_f(booster, data):
    """f_1 on the training rows, recovered from F_1 = alpha_1 f_1."""
    return booster.decision_function(data.contexts) / booster.history_["alpha"][0]


def test_learning_rate_multiplies_every_step(digits_log):
    """nu = 0.5 halves the first step and the first-round scores (same f_1)."""
    logged, _, _ = digits_log
    full = Booster(n_rounds=1, base_learner_params=LGB, warm_start="none", random_state=0).fit(
        logged
    )
    half = Booster(
        n_rounds=1, base_learner_params=LGB, warm_start="none", learning_rate=0.5, random_state=0
    )
    half.fit(logged)
    assert half.history_["alpha"][0] == pytest.approx(0.5 * full.history_["alpha"][0], rel=1e-12)
    np.testing.assert_allclose(
        half.decision_function(logged.contexts),
        0.5 * full.decision_function(logged.contexts),
        rtol=1e-6,
        atol=1e-9,
    )


def test_l2_step_is_closed_form_penalised_alpha(digits_log):
    """alpha_l2 = N / (D + 2 n l2) = alpha_0 D / (D + 2 n l2) for the same first tree."""
    logged, _, _ = digits_log
    plain = Booster(
        objective="bopl", n_rounds=1, base_learner_params=LGB, warm_start="none", random_state=0
    )
    plain.fit(logged)
    l2 = 0.05
    penalised = Booster(
        objective="bopl",
        n_rounds=1,
        base_learner_params=LGB,
        warm_start="none",
        l2=l2,
        random_state=0,
    ).fit(logged)
    f = first_round_f(plain, logged)
    objective, estimator, _ = plain.resolve_components()
    state = objective.round_state(
        np.zeros_like(f), logged, estimator.coefficients(logged).astype(float)
    )
    d = objective.step_denominator_at(state, f)
    expected = plain.history_["alpha"][0] * d / (d + 2 * len(logged) * l2)
    assert penalised.history_["alpha"][0] == pytest.approx(expected, rel=1e-5)
    assert abs(penalised.history_["alpha"][0]) < abs(plain.history_["alpha"][0])


def test_warm_start_round_zero_is_best_constant_mixture(digits_log):
    """F_0 = log(K - 1) e_{a*}: softmax puts 1/2 on a*, and the round-0 true value is
    q V(a*) + (1 - q) mean_{a != a*} V(a) on labelled rows."""
    logged, X_test, y_test = digits_log
    booster = Booster(
        n_rounds=3, base_learner_params=LGB, warm_start="best_constant", random_state=0
    ).fit(logged)
    best = int(np.nanargmax(constant_action_values(logged)))
    f0 = next(booster.policy_.ensemble.staged_decision_function(X_test))
    offset = np.zeros(10)
    offset[best] = math.log(9)
    np.testing.assert_allclose(f0, np.tile(offset, (len(X_test), 1)), atol=1e-6)
    probs = softmax(f0)
    np.testing.assert_allclose(probs[:, best], 0.5, atol=1e-6)
    values = np.array(
        [expected_reward(np.eye(10)[np.full(len(y_test), a)], y_test) for a in range(10)]
    )
    expected = 0.5 * values[best] + 0.5 * (values.sum() - values[best]) / 9
    assert expected_reward(probs, y_test) == pytest.approx(expected, abs=1e-6)
    assert booster.n_rounds_ == 3 and booster.policy_.n_rounds == 4


def test_warm_start_prob_sets_the_offset(digits_log):
    """q = 0.8 gives pi_0(a*) = 0.8."""
    logged, X_test, _ = digits_log
    booster = Booster(
        n_rounds=1,
        base_learner_params=LGB,
        warm_start="best_constant",
        warm_start_prob=0.8,
        random_state=0,
    ).fit(logged)
    best = int(np.nanargmax(constant_action_values(logged)))
    f0 = next(booster.policy_.ensemble.staged_decision_function(X_test[:5]))
    np.testing.assert_allclose(softmax(f0)[:, best], 0.8, atol=1e-6)


@pytest.mark.parametrize("design", ["stacked", "per_action"])
def test_warm_start_logging_starts_from_the_logging_policy(design):
    """F_0 regressed on the logged log-propensities recovers a context-dependent logger
    pi_0 = softmax(x W): on new contexts softmax(F_0) is far closer to pi_0 than uniform."""
    rng = np.random.default_rng(0)
    n, d, k = 3000, 4, 3
    X, W = rng.normal(size=(n, d)), 1.5 * rng.normal(size=(d, k))
    probs = softmax(X @ W)
    actions = (rng.uniform(size=(n, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    rewards = (rng.uniform(size=n) < 0.5).astype(float)
    logged = LoggedBandit(X, actions, probs[np.arange(n), actions], rewards, k)
    params = {"num_threads": 1, "action_design": design}
    booster = Booster(
        n_rounds=1, base_learner_params=params, warm_start="logging", random_state=0
    ).fit(logged)
    X_new = rng.normal(size=(1000, d))
    logger = softmax(X_new @ W)
    f0 = list(booster.policy_.ensemble.staged_decision_function(X_new))[LOGGING_WARM_MEMBERS - 1]
    tv_warm = 0.5 * np.abs(softmax(f0) - logger).sum(axis=1).mean()
    tv_uniform = 0.5 * np.abs(1.0 / k - logger).sum(axis=1).mean()
    assert tv_warm < 0.4 * tv_uniform
    assert booster.n_rounds_ == 1 and booster.policy_.n_rounds == LOGGING_WARM_MEMBERS + 1


@pytest.mark.parametrize("prob", [0.3, 0.5, 0.9])
def test_reward_temperature_hits_the_target_probability(prob):
    """softmax(q / tau) puts ``prob`` on each row's best action on average; rows with equal
    predictions are ignored."""
    rng = np.random.default_rng(1)
    q = rng.uniform(size=(200, 5))
    q[:3] = 0.4  # no information in these rows
    tau = reward_temperature(q, prob)
    assert softmax(q[3:] / tau).max(axis=1).mean() == pytest.approx(prob, abs=1e-9)
    assert reward_temperature(np.zeros((4, 3)), prob) == 1.0


def test_warm_start_reward_model_is_the_reward_models_own_trees(digits_log):
    """With lightgbm_tree, F_0 IS the chosen reward model (its trees, and its linear tree when
    the linear family wins, scaled by 1/tau; not a distillation): on new contexts the policy's
    stage before its one round equals that model's q / tau, and on the training rows
    softmax(F_0) puts 1/K + q (1 - 1/K) on the best action."""
    logged, X_test, _ = digits_log
    booster = Booster(
        n_rounds=1,
        base_learner_params={"num_threads": 1},
        warm_start="reward_model",
        validation_fraction=None,  # the round kept
        warm_start_prob=0.5,
        random_state=0,
    ).fit(logged)
    fit_seed = int(check_random_state(0).integers(2**31 - 1))  # the fit's seed, as drawn
    seed = int(check_random_state(fit_seed).integers(2**31 - 1))  # the learner's, from it
    K = logged.n_actions
    model = fit_reward_model(
        logged.contexts,
        logged.actions,
        logged.rewards,
        K,
        "stacked",
        "auto",
        seed=seed,
        num_threads=1,
    )
    assert booster.reward_start_["family"] == model.report["family"] == "linear+trees"
    tau = reward_temperature(model.q, 0.1 + 0.5 * 0.9)
    q_test = model.trees.predict(design_rows(X_test, K, "stacked"), raw_score=True)
    q_test = q_test.reshape(-1, K) + model.linear.predict(X_test)
    stages = list(booster.policy_.ensemble.staged_decision_function(X_test))
    assert len(stages) == model.trees.num_trees() + 2  # + the linear tree, + the round
    np.testing.assert_allclose(stages[-2], q_test / tau, rtol=1e-9, atol=1e-9)
    f0_train = list(booster.policy_.ensemble.staged_decision_function(logged.contexts))[-2]
    assert softmax(f0_train).max(axis=1).mean() == pytest.approx(0.1 + 0.5 * 0.9, abs=1e-9)
    assert booster.n_rounds_ == 1 and booster.policy_.n_rounds == 1
    assert booster.policy_.metadata["reward_start"] == booster.reward_start_


def test_warm_start_reward_model_distils_when_the_learner_has_no_reward_trees(digits_log):
    """A learner without ``start_from_rewards`` (here scikit-learn's per-action trees) gets
    F_0 distilled from the cross-fitted reward model q / tau: its argmax mostly agrees with
    q's on the training rows (30 trees only approximate q) and its average best-action
    probability is the target 1/K + q (1 - 1/K)."""
    logged, _, _ = digits_log
    booster = Booster(
        estimator="dm",
        n_rounds=1,
        validation_fraction=None,  # the round kept
        base_learner="sklearn_tree",
        base_learner_params={"action_design": "per_action"},
        warm_start="reward_model",
        warm_start_prob=0.5,
        random_state=0,
    ).fit(logged)
    seed = int(
        check_random_state(0).integers(2**31 - 1)
    )  # the fit's seed, as the in-memory fit draws it
    q = DirectMethod(random_state=seed).reward_predictions(logged)
    stages = list(booster.policy_.ensemble.staged_decision_function(logged.contexts))
    f0 = stages[REWARD_WARM_MEMBERS - 1]
    assert np.mean(f0.argmax(axis=1) == q.argmax(axis=1)) > 0.65
    assert softmax(f0).max(axis=1).mean() == pytest.approx(0.1 + 0.5 * 0.9, abs=0.05)
    assert booster.n_rounds_ == 1 and booster.policy_.n_rounds == REWARD_WARM_MEMBERS + 1


@pytest.mark.parametrize("objective", ["snips", "poem"])
def test_variance_objectives_learn_on_digits(digits_log, objective):
    """Both variance-aware objectives beat the logging policy's mean reward by > 0.1 and
    their (line-searched) training risk never increases."""
    logged, X_test, y_test = digits_log
    booster = Booster(
        objective=objective, n_rounds=60, base_learner_params=LGB, random_state=0
    ).fit(logged)
    value = expected_reward(np.eye(10)[booster.predict(X_test)], y_test)
    logger = float(np.mean(logged.rewards))
    assert value > logger + 0.1
    assert np.all(np.diff(booster.history_["train_objective"]) <= 1e-12)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"learning_rate": 0.0},
            r"The 'learning_rate' parameter of Booster must be a float > 0\.0\. Got 0\.0 "
            r"instead; use a shrinkage factor such as 0\.1",
        ),
        (
            {"l2": -1.0},
            r"The 'l2' parameter of Booster must be a float >= 0\.0\. Got -1\.0 instead; use "
            r"0\.0 \(no penalty\)",
        ),
        (
            {"l2": math.inf},
            r"The 'l2' parameter of Booster must be finite\. Got inf instead",
        ),
        (
            {"warm_start": "zero"},
            r"The 'warm_start' parameter of Booster must be one of \{'auto', 'none', "
            r"'best_constant', 'logging', 'reward_model'\}\. "
            r"Got 'zero' instead\.",
        ),
        (
            {"warm_start": "best_constant", "warm_start_prob": 1.0},
            r"The 'warm_start_prob' parameter of Booster must be a float > 0\.0 and < 1\.0\. "
            r"Got 1\.0 instead",
        ),
        (
            {"warm_start": "best_constant", "base_learner": "sklearn_stump"},
            r"The 'warm_start' parameter of Booster needs a regression base learner",
        ),
    ],
)
def test_invalid_regularisation_parameters(synthetic_log, params, message):
    with pytest.raises(InvalidParameterError, match=message):
        Booster(n_rounds=2, **params).fit(synthetic_log.data)


def test_defaults_keep_the_papers_algorithm(synthetic_log):
    """learning_rate=1, l2=0, no warm start: identical to a Booster without them."""
    data = synthetic_log.data
    a = Booster(n_rounds=5, base_learner="sklearn_tree", random_state=0).fit(data)
    b = Booster(
        n_rounds=5, base_learner="sklearn_tree", random_state=0, learning_rate=1.0, l2=0.0
    ).fit(data)
    np.testing.assert_array_equal(a.history_["alpha"], b.history_["alpha"])
    np.testing.assert_array_equal(
        a.decision_function(data.contexts), b.decision_function(data.contexts)
    )


@pytest.mark.parametrize(
    ("warm_start", "learner", "params", "expected"),
    [
        ("auto", "lightgbm_tree", {}, "reward_model"),
        ("auto", "lightgbm_tree", {"action_design": "per_action"}, None),
        ("auto", "sklearn_stump", {}, None),
        ("none", "lightgbm_tree", {}, None),
        (None, "lightgbm_tree", {}, None),
        ("logging", "lightgbm_tree", {}, "logging"),
    ],
)
def test_auto_warm_start_is_the_reward_model_where_the_learner_fits_one(
    synthetic_log, warm_start, learner, params, expected
):
    """ "auto" starts from the reward model only with a learner that fits its own (stacked
    LightGBM trees) and otherwise from F_0 = 0; "none" is None. The saved policy records the
    start actually used."""
    params = {"num_threads": 1, **params} if learner == "lightgbm_tree" else params
    booster = Booster(
        n_rounds=2,
        base_learner=learner,
        base_learner_params=params,
        warm_start=warm_start,
        random_state=0,
    ).fit(synthetic_log.data)
    assert booster.policy_.metadata["warm_start"] == expected
