"""Booster: parameter validation, component resolution, stopping, history and prediction."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from opboost import Booster, NotFittedError
from opboost.algorithms.learners.sklearn import SklearnTree
from opboost.algorithms.objectives import BOPL, BOPLS
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import Estimator
from opboost.api.exceptions import InvalidParameterError


class EvalOnlyEstimator(Estimator):
    """An estimator with values but no training coefficients."""

    name: ClassVar[str] = "eval_only"

    def __init__(self) -> None:
        pass


class RegressionOnlyObjective(BOPL):
    """BOPL restricted to the regression reduction."""

    name: ClassVar[str] = "regression_only"
    reductions: ClassVar[frozenset[str]] = frozenset({"regression"})


def fit(data, **params):
    defaults = {"base_learner": "sklearn_tree", "n_rounds": 5, "random_state": 0}
    return Booster(**{**defaults, **params}).fit(data)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        pytest.param(
            {"n_rounds": -1},
            r"'n_rounds' parameter of Booster must be an int >= 0 and <= 1000000. "
            r"Got -1 instead; use a number of boosting rounds such as 100 \(0: the start alone\)",
            id="negative-one-round",
        ),
        pytest.param({"n_rounds": -3}, r"'n_rounds' .* Got -3", id="negative-rounds"),
        pytest.param(
            {"n_rounds": 2.5}, r"'n_rounds' parameter of Booster must be an int", id="float-rounds"
        ),
        pytest.param({"reward_shift": float("nan")}, r"'reward_shift'", id="nan-shift"),
        pytest.param(
            {"scale": 0.0},
            r"'scale' parameter of Booster must be a float > 0.0. "
            r"Got 0.0 instead; use None",
            id="zero-scale",
        ),
        pytest.param(
            {"objective": "bopx"},
            r"'objective' parameter of Booster: Unknown "
            r"objective 'bopx'. Known: bopl .*Did you mean",
            id="unknown-objective",
        ),
        pytest.param(
            {"base_learner": "no_such"}, r"Unknown base_learner 'no_such'", id="unknown-learner"
        ),
        pytest.param(
            {"estimator": EvalOnlyEstimator()},
            r"'eval_only' gives no training "
            r"coefficients.*use estimator='ips'",
            id="no-coefficients",
        ),
        pytest.param(
            {"objective": RegressionOnlyObjective(), "base_learner": "sklearn_stump"},
            r"The base learner 'sklearn_stump' solves the classification reduction, "
            r"which objective 'regression_only' does not support; use a regression "
            r"base learner such as 'lightgbm_tree'",
            id="classification-mismatch",
        ),
        pytest.param(
            {"objective": BOPL(), "estimator": BOPL()},
            r"'estimator' parameter of "
            r"Booster must be a registered estimator name or an estimator instance",
            id="wrong-kind",
        ),
        pytest.param(
            {"base_learner_params": {"depth": 3}},
            r"'base_learner_params' .* "
            r"'sklearn_tree'.*Valid parameters: .*max_depth",
            id="bad-learner-param",
        ),
        pytest.param(
            {"estimator_params": [1]},
            r"'estimator_params' parameter of Booster must "
            r"be a dict",
            id="params-not-dict",
        ),
    ],
)
def test_bad_parameters_name_parameter_and_fix(synthetic_log, params, match):
    """Each invalid setting raises InvalidParameterError naming the parameter."""
    with pytest.raises(InvalidParameterError, match=match):
        fit(synthetic_log.data, **params)


def test_init_only_stores_parameters():
    """Construction validates nothing; get_params round-trips."""
    booster = Booster(n_rounds=-1, objective="nope")
    assert booster.get_params()["n_rounds"] == -1
    assert Booster(**booster.get_params()).get_params() == booster.get_params()


def test_default_components():
    """Defaults: the objective that follows the start ("auto"), IPS, lightgbm_tree, and the
    rounds that follow the logs ("auto": 100, none after a start on candidate pairs)."""
    params = Booster().get_params()
    assert (
        params["objective"],
        params["estimator"],
        params["base_learner"],
        params["n_rounds"],
    ) == ("auto", "ips", "lightgbm_tree", "auto")


_SMALL = {"n_rounds": 3, "random_state": 0}
_FAST_TREES = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param({}, "poem", id="reward-model-start"),
        pytest.param({"warm_start": "none"}, "bopl_s", id="no-start"),
        pytest.param({"warm_start": "logging"}, "bopl_s", id="logging-start"),
        pytest.param({"estimator": "dr"}, "bopl_s", id="per-action-coefficients"),
        pytest.param({"base_learner": "sklearn_tree"}, "bopl_s", id="learner-without-start"),
    ],
)
def test_auto_objective_follows_the_start(synthetic_log, params, expected):
    """objective="auto" is POEM exactly when the fit starts from the learner's own reward
    model with per-row coefficients; otherwise BOPL-S (docs/benchmarks/defaults.md)."""
    learner = {} if "base_learner" in params else {"base_learner_params": _FAST_TREES}
    booster = Booster(**_SMALL, **learner, **params).fit(synthetic_log.data)
    assert booster.policy_.metadata["objective"] == expected
    same = Booster(**_SMALL, **learner, **{**params, "objective": expected})
    np.testing.assert_array_equal(
        booster.decision_function(synthetic_log.data.contexts),
        same.fit(synthetic_log.data).decision_function(synthetic_log.data.contexts),
    )


@pytest.mark.parametrize(("warm_start", "expected"), [("auto", "bopl_s"), ("reward_model", "poem")])
def test_per_action_trees_start_from_zero_unless_asked_and_the_objective_follows(
    synthetic_log, warm_start, expected
):
    """Per-action trees: "auto" starts at F_0 = 0 with BOPL-S; asked for the reward model they
    start from it (not a distillation) and boost with POEM, as the stacked default does
    (with BOPL-S after that start they lost 0.024 and 0.031 on large logs: docs/scaling.md)."""
    learner = {**_FAST_TREES, "action_design": "per_action"}
    booster = Booster(**_SMALL, warm_start=warm_start, base_learner_params=learner)
    booster.fit(synthetic_log.data)
    assert booster.policy_.metadata["objective"] == expected
    assert (booster.reward_start_ is not None) == (warm_start == "reward_model")


def test_candidate_logs_start_from_the_pair_reward_model_and_auto_rounds_stop_there():
    """Logs with candidate sets and item features start from the learner's reward model on
    [x; phi(a)]: n_rounds="auto" runs no round after it (docs/defaults.md, "Catalogue logs"),
    while an explicit n_rounds boosts from it with POEM ("auto" objective)."""
    from opboost.simulation import simulate_catalogue

    sim = simulate_catalogue(200, 20, 5, 3, 2, random_state=0, reward_scale=3.0)
    auto = Booster(random_state=0, base_learner_params=_FAST_TREES).fit(sim.logged)
    assert auto.n_rounds_ == 0 and auto.reward_start_["cross_fitted"]
    assert auto.policy_.metadata["warm_start"] == "reward_model"
    boosted = Booster(**_SMALL, base_learner_params=_FAST_TREES).fit(sim.logged)
    assert boosted.n_rounds_ == 3 and boosted.policy_.metadata["objective"] == "poem"
    bopl_s = Booster(**_SMALL, warm_start="none", base_learner_params=_FAST_TREES)
    assert bopl_s.fit(sim.logged).policy_.metadata["objective"] == "bopl_s"
    assert bopl_s.n_rounds_ == 3  # F_0 = 0: "auto" rounds would be 100


def test_auto_objective_names_its_choice_when_params_do_not_fit(synthetic_log):
    """POEM's parameters on a fit where "auto" chose BOPL-S: the error says so."""
    booster = Booster(**_SMALL, warm_start="none", objective_params={"variance_penalty": 0.3})
    with pytest.raises(
        InvalidParameterError,
        match=r"does not fit objective 'bopl_s'.*\(objective='auto' chose 'bopl_s' for this "
        r"fit; name the objective that takes these parameters.\)",
    ):
        booster.fit(synthetic_log.data)
    X = synthetic_log.data.contexts
    every = {**_SMALL, "validation_fraction": None}  # every round kept: POEM's rounds differ
    tuned = Booster(**every, base_learner_params=_FAST_TREES, objective_params={
        "variance_penalty": 0.3}).fit(synthetic_log.data)  # fmt: skip
    plain = Booster(**every, base_learner_params=_FAST_TREES).fit(synthetic_log.data)
    assert tuned.policy_.metadata["objective"] == "poem"  # the parameters reached POEM
    assert not np.allclose(tuned.decision_function(X), plain.decision_function(X))


def test_instances_are_cloned_not_mutated(synthetic_log):
    """Component instances are cloned; *_params apply to the clone only."""
    learner = SklearnTree(max_depth=2)
    booster = fit(synthetic_log.data, base_learner=learner, base_learner_params={"max_depth": 3})
    assert learner.max_depth == 2 and not hasattr(learner, "_ensemble")
    assert booster.policy_.metadata["base_learner_params"]["max_depth"] == 3


def test_fitted_attributes_and_history(synthetic_log):
    """n_rounds_, stop_reason_, and one history entry per round for every metric."""
    booster = fit(synthetic_log.data, n_rounds=7)
    assert booster.n_rounds_ == 7 and booster.stop_reason_ == "n_rounds reached"
    assert set(booster.history_) == {"alpha", "gradient_norm", "train_objective", "train_value"}
    assert all(v.shape == (7,) for v in booster.history_.values())
    assert booster.policy_.n_rounds == 7


def test_eval_metrics_in_history(synthetic_log, log_factory):
    """eval_data adds IPS/SNIPS of the softmax and argmax policies per round."""
    eval_log = log_factory(seed=5).data
    booster = Booster(base_learner="sklearn_tree", n_rounds=4, random_state=0).fit(
        synthetic_log.data, eval_data=eval_log
    )
    for key in ("eval_ips_softmax", "eval_snips_softmax", "eval_ips_argmax", "eval_snips_argmax"):
        assert booster.history_[key].shape == (4,)
    probs = booster.predict_proba(eval_log.contexts)
    rows = np.arange(len(eval_log))
    ips = np.mean(eval_log.rewards * probs[rows, eval_log.actions] / eval_log.propensities)
    assert booster.history_["eval_ips_softmax"][-1] == pytest.approx(ips, rel=1e-9)


def test_eval_data_must_match(synthetic_log, log_factory):
    """eval_data with another number of actions is rejected."""
    other = log_factory(n_actions=3).data
    with pytest.raises(InvalidParameterError, match=r"eval_data has 3 actions .* data has 4"):
        Booster(base_learner="sklearn_tree").fit(synthetic_log.data, eval_data=other)


def test_data_must_be_logged_bandit():
    """Passing an array instead of LoggedBandit says how to build one."""
    with pytest.raises(InvalidParameterError, match=r"data must be an opboost.LoggedBandit"):
        Booster().fit(np.zeros((3, 2)))


def test_zero_rewards_stop_on_gradient(synthetic_log):
    """All-zero rewards give a zero gradient: the fit stops at round 1 with the reason."""
    data = synthetic_log.data.with_rewards(np.zeros(len(synthetic_log.data)))
    booster = fit(data)
    assert booster.stop_reason_ == "gradient norm < 1e-10 at round 1"
    assert booster.n_rounds_ == 0
    np.testing.assert_array_equal(booster.decision_function(data.contexts), 0.0)


def test_single_leaf_stops_on_zero_f(synthetic_log):
    """A single-leaf tree fits the mean target, which is 0 (sum_a g_ia = 0): max|f| stop."""
    booster = fit(
        synthetic_log.data,
        base_learner="sklearn_tree",
        base_learner_params={"max_depth": 1, "min_samples_leaf": 10_000},
    )
    assert booster.stop_reason_ == "max|f| < 1e-10 at round 1"
    assert booster.n_rounds_ == 0


class OnesLearner(SklearnTree):
    """Returns f = 1 for every action: g_i^T f = 0, so alpha = 0."""

    name: ClassVar[str] = "ones"

    def fit_round(self, problem):
        super().fit_round(problem)
        return np.ones_like(problem.targets)


def test_constant_f_stops_on_alpha(synthetic_log):
    """f constant across actions cannot change the policy: alpha = 0 stops the fit."""
    booster = fit(synthetic_log.data, base_learner=OnesLearner(), n_rounds=3)
    assert booster.stop_reason_ == "|alpha| < 1e-10 at round 1"
    assert booster.n_rounds_ == 0 and booster.policy_.n_rounds == 0


def test_reward_shift_equals_shifting_the_data(synthetic_log):
    """reward_shift=d trains exactly like fitting rewards r + d with no shift."""
    data = synthetic_log.data
    shifted = fit(data, reward_shift=-0.4, n_rounds=6)
    manual = fit(data.with_rewards(data.rewards - 0.4), n_rounds=6)
    np.testing.assert_array_equal(
        shifted.decision_function(data.contexts), manual.decision_function(data.contexts)
    )
    assert not np.array_equal(shifted.history_["alpha"], fit(data, n_rounds=6).history_["alpha"])


def test_predictions_are_consistent(synthetic_log):
    """predict is the argmax of decision_function; predict_proba rows sum to one."""
    booster = fit(synthetic_log.data)
    X = synthetic_log.data.contexts
    scores = booster.decision_function(X)
    assert scores.shape == (len(X), 4)
    np.testing.assert_array_equal(booster.predict(X), scores.argmax(axis=1))
    np.testing.assert_allclose(booster.predict_proba(X).sum(axis=1), 1.0)


def test_training_scores_match_the_ensemble(synthetic_log):
    """The loop's accumulated F equals the ensemble's prediction on the training rows."""
    data = synthetic_log.data
    booster = fit(data, objective=BOPLS(), n_rounds=8)
    coef = data.rewards / data.propensities
    risk = BOPLS().risk(booster.decision_function(data.contexts), data, coef)
    assert risk == booster.history_["train_objective"][-1]


def test_same_seed_same_model(synthetic_log):
    """Two fits with the same random_state give identical scores."""
    a = fit(synthetic_log.data, base_learner_params={"max_features": 0.5})
    b = fit(synthetic_log.data, base_learner_params={"max_features": 0.5})
    X = synthetic_log.data.contexts
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_not_fitted_error():
    """Predicting before fit says to call fit."""
    with pytest.raises(NotFittedError, match=r"Call 'fit'"):
        Booster().predict(np.zeros((2, 3)))


def test_decision_function_checks_feature_count(synthetic_log):
    """X with the wrong number of features names the expected shape."""
    booster = fit(synthetic_log.data)
    with pytest.raises(InvalidParameterError, match=r"X must have shape \(m, 4\)"):
        booster.decision_function(np.zeros((2, 7)))


def test_save_writes_loadable_policy(synthetic_log, tmp_path):
    """Booster.save writes a policy load_policy reads back with identical scores."""
    from opboost import load_policy

    booster = fit(synthetic_log.data)
    booster.save(tmp_path / "p.json")
    X = synthetic_log.data.contexts
    np.testing.assert_array_equal(
        load_policy(tmp_path / "p.json").decision_function(X), booster.decision_function(X)
    )


def test_sparse_contexts(synthetic_log):
    """CSR contexts train and predict like the dense ones (up to summation order)."""
    import scipy.sparse as sp

    data = synthetic_log.data
    sparse = LoggedBandit(
        sp.csr_matrix(data.contexts), data.actions, data.propensities, data.rewards, data.n_actions
    )
    dense_b, sparse_b = fit(data), fit(sparse)
    np.testing.assert_allclose(
        sparse_b.decision_function(sparse.contexts),
        dense_b.decision_function(data.contexts),
        rtol=1e-12,
        atol=1e-12,
    )


def test_per_action_estimator_with_per_row_objective_names_the_fix(synthetic_log):
    """DR's per-action coefficients need BOPL or BOPL-S; the error says so."""
    booster = Booster(objective="snips", estimator="dr", n_rounds=2, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"SNIPSObjective takes one training coef"):
        booster.fit(synthetic_log.data)


def test_doubly_robust_fit_is_reproducible(synthetic_log):
    """The DR reward model takes the booster's seed: same seed, same coefficients and model
    (an unseeded estimator used to draw a fresh fold split and LightGBM seed every fit)."""
    params = {"estimator": "dr", "n_rounds": 5, "random_state": 3}
    params["base_learner_params"] = {"num_threads": 1}
    first = Booster(**params).fit(synthetic_log.data)
    second = Booster(**params).fit(synthetic_log.data)
    np.testing.assert_array_equal(first.history_["train_value"], second.history_["train_value"])
    X = synthetic_log.data.contexts
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    assert Booster(estimator="dr").get_params()["estimator"] == "dr"  # the booster is untouched
