"""dr_reduction (issue 48, item 2): LightGBM regressors on the cross-fitted doubly robust
pseudo-rewards, a built-in policy learner and a PolicyChoice candidate by name."""

from __future__ import annotations

import re

import numpy as np
import pytest

import opboost
from opboost import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.compose.choice import PolicyChoice
from opboost.compose.dr_reduction import DRReduction, dr_pseudo_rewards
from opboost.core.registry import make
from opboost.simulation.items import simulate_catalogue
from opboost.simulation.tabular_worlds import tabular_world


def _tiny(n: int = 40, k: int = 3, seed: int = 0) -> LoggedBandit:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    actions = (rng.random(n)[:, None] > probs.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
    return LoggedBandit(
        contexts=rng.normal(size=(n, 2)),
        actions=actions,
        propensities=probs[np.arange(n), actions],
        rewards=rng.random(n),
        n_actions=k,
    )


def test_the_pseudo_rewards_are_the_formula_by_hand():
    data = _tiny()
    gamma, q = dr_pseudo_rewards(data, random_state=0)
    assert gamma.shape == q.shape == (40, 3)
    for i in range(len(data)):  # by hand, row by row and action by action
        for k in range(3):
            a, r, p = data.actions[i], data.rewards[i], data.propensities[i]
            expected = q[i, k] + (k == a) * (r - q[i, a]) / p
            assert abs(gamma[i, k] - expected) <= 1e-12


def test_the_reward_model_is_cross_fitted():
    """Rewards are noise: a model that saw a row fits its noise (q correlates with r), an
    out-of-fold model cannot."""
    rng = np.random.default_rng(1)
    n = 400
    data = LoggedBandit(
        contexts=rng.normal(size=(n, 3)),
        actions=rng.integers(0, 2, size=n),
        propensities=np.full(n, 0.5),
        rewards=rng.normal(size=n),
        n_actions=2,
    )
    logged = np.arange(n), data.actions

    def fit_to_noise(n_folds: int) -> float:
        _, q = dr_pseudo_rewards(data, n_folds=n_folds, random_state=0)
        return float(np.corrcoef(q[logged], data.rewards)[0, 1])

    assert fit_to_noise(1) > 0.5  # in sample: the model learned the rows' noise
    assert abs(fit_to_noise(2)) < 0.15  # cross-fitted: each row's q never saw it
    assert abs(fit_to_noise(3)) < 0.15


@pytest.mark.parametrize("regressor", ["per_action", "stacked"])
def test_the_learned_policy_beats_the_logging_policy(regressor):
    world = tabular_world(1, max_rows=3000, n_test=3000)  # 10 offers, clicks on string ids
    learner = DRReduction(regressor=regressor, random_state=0, num_threads=1)
    learner.fit(world.logged_bandit())
    actions = learner.predict(world.test_contexts)  # a DataFrame, encoded with the schema
    assert learner.models_[0] is not None and len(learner.models_) == (
        10 if regressor == "per_action" else 1
    )
    logging = world.value(world.logging_probs(world.test_contexts))
    assert world.value(actions) > logging + 0.5  # the logger's value is -0.43 here
    scores = learner.decision_function(world.test_contexts)
    assert scores.shape == (3000, 10)
    np.testing.assert_array_equal(scores.argmax(axis=1), actions)


def test_the_per_action_regressors_share_one_dataset_and_each_learns_its_own_targets():
    """Without candidate sets the K regressors share one Dataset of the contexts, binned
    once; each must equal a LightGBM regressor fitted alone on its action's pseudo-rewards
    (a label left over from the previous action would make two columns alike)."""
    import lightgbm as lgb

    from opboost.api.validation import check_random_state

    world = tabular_world(3, max_rows=1500, n_test=500)  # categorical context columns
    logs = world.logged_bandit()
    learner = DRReduction(random_state=0, n_estimators=30, num_threads=1).fit(logs)
    q_seed, seed = (int(s) for s in check_random_state(0).integers(2**31 - 1, size=2))
    gamma, _ = dr_pseudo_rewards(logs, random_state=q_seed)
    X = logs.schema.encode(world.test_contexts, "test")
    categorical = list(logs.schema.categorical_features)
    alone = [
        lgb.LGBMRegressor(n_estimators=30, num_leaves=7, learning_rate=0.05,
                          min_child_samples=200, random_state=seed, n_jobs=1, verbose=-1,
                          deterministic=True)
        .fit(logs.contexts, gamma[:, a], categorical_feature=categorical)
        .predict(X)
        for a in range(logs.n_actions)
    ]  # fmt: skip
    np.testing.assert_allclose(
        learner.decision_function(X), np.column_stack(alone), rtol=0, atol=1e-12
    )
    assert len({tuple(np.round(column, 9)) for column in alone}) == logs.n_actions


def _root_rows(model) -> int:
    """The rows a fitted regressor (a lightgbm.Booster) learned from: its first tree's root
    count."""
    root = model.dump_model()["tree_info"][0]["tree_structure"]
    return int(root.get("internal_count", root.get("leaf_count")))


def test_a_per_action_regressor_learns_only_where_its_action_is_a_candidate():
    data = _tiny(n=60)
    mask = np.ones((60, 3), dtype=bool)
    mask[30:, 2] = False  # action 2 is a candidate in the first 30 rows only
    mask[np.arange(60), data.actions] = True
    data = LoggedBandit(
        contexts=data.contexts, actions=data.actions, propensities=data.propensities,
        rewards=data.rewards, n_actions=3, candidates=mask,
    )  # fmt: skip
    learner = DRReduction(random_state=0, n_estimators=2, min_child_samples=1, num_threads=1)
    learner.fit(data)
    assert [_root_rows(m) for m in learner.models_] == list(mask.sum(axis=0))
    assert mask.sum(axis=0)[2] < 60
    stacked = DRReduction(regressor="stacked", random_state=0, n_estimators=2, num_threads=1)
    assert _root_rows(stacked.fit(data).models_[0]) == mask.sum()  # the candidate pairs


def test_on_item_features_it_scores_new_items_within_their_candidates():
    sim = simulate_catalogue(1500, 40, 5, 3, 4, random_state=0, logging_beta=0.0)
    learner = DRReduction(random_state=0, num_threads=1).fit(sim.logged)
    assert learner.action_schema_.kind == "features" and len(learner.models_) == 1
    test = sim.test_rows(1000)  # 40 new items, never logged
    served = {"candidates": test.logged.candidates, "action_features": test.item_features}
    scores = learner.decision_function(test.logged.contexts, **served)
    assert scores.shape == (1000, 80)
    actions = learner.predict(test.logged.contexts, **served)
    assert test.logged.candidates[np.arange(1000), actions].all()
    probs = learner.predict_proba(test.logged.contexts, **served)
    assert test.policy_value(probs) > test.logging_value + 0.05  # uniform logger


def test_action_features_for_a_learner_fitted_without_them_are_refused():
    learner = DRReduction(random_state=0, n_estimators=2).fit(_tiny())
    message = (
        "DRReduction: this learner was fitted without action features (its actions are the 3 "
        "logged action indices); drop action_features=."
    )
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        learner.predict(np.zeros((2, 2)), action_features=np.eye(3))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"regressor": "forest"},
            "The 'regressor' parameter of DRReduction must be one of {'per_action', "
            "'stacked'}. Got 'forest' instead.",
        ),
        (
            {"n_folds": 1},
            "The 'n_folds' parameter of DRReduction must be an int >= 2. Got 1 instead; use "
            "2 to 5 folds.",
        ),
    ],
)
def test_bad_parameters_name_themselves(params, message):
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        DRReduction(**params).fit(_tiny())


def test_too_few_rows_for_the_folds():
    with pytest.raises(InvalidParameterError, match=r"3 logged rows are too few for n_folds=2"):
        DRReduction().fit(_tiny(n=3))


def test_it_is_registered_and_a_policy_choice_candidate_by_name():
    assert isinstance(make("policy_learner", "dr_reduction"), DRReduction)
    data = tabular_world(6, max_rows=1500, n_test=10).logged_bandit()
    choice = PolicyChoice(candidates=["constant", "dr_reduction"], random_state=0).fit(data)
    assert set(choice.scores_) == {"constant", "dr_reduction"}
    assert choice.predict(data.contexts[:5]).shape == (5,)


@pytest.mark.parametrize("regressor", ["per_action", "stacked"])
def test_the_policy_saves_and_loads_with_the_learners_scores(regressor, tmp_path):
    world = tabular_world(2, max_rows=2000, n_test=500)  # categorical and string columns
    data = world.logged_bandit()
    learner = DRReduction(regressor=regressor, random_state=0, n_estimators=30).fit(data)
    X = data.schema.encode(world.test_contexts, "test")
    policy = learner.to_policy()
    assert policy.ensemble.action_design == (
        "per_action" if regressor == "per_action" else "stacked_onehot"
    )
    np.testing.assert_allclose(
        policy.decision_function(X), learner.decision_function(X), rtol=0, atol=1e-12
    )
    loaded = opboost.load_policy(policy.save(tmp_path / "policy"))
    np.testing.assert_allclose(
        loaded.decision_function(X), learner.decision_function(X), rtol=0, atol=1e-12
    )
    ids = loaded.predict(world.test_contexts, return_ids=True)  # a DataFrame, action ids
    expected = np.asarray(world.action_ids, dtype=object)[learner.predict(world.test_contexts)]
    np.testing.assert_array_equal(ids, expected)


def test_a_per_action_policy_pads_short_and_missing_regressors():
    """Action 2 is never a candidate (no regressor: scores 0); action 1 is one in 6 rows, too
    few for a split of 5 rows a leaf, so its regressor stops after one tree, shorter than
    action 0's: the policy still scores as the regressors do."""
    data = _tiny(n=60)
    mask = np.zeros((60, 3), dtype=bool)
    mask[:, 0], mask[:6, 1] = True, True
    actions = np.where(np.arange(60) < 6, data.actions % 2, 0)
    data = LoggedBandit(
        contexts=data.contexts, actions=actions, propensities=np.full(60, 0.5),
        rewards=data.rewards, n_actions=3, candidates=mask,
    )  # fmt: skip
    learner = DRReduction(random_state=0, n_estimators=10, min_child_samples=5).fit(data)
    assert learner.models_[2] is None
    trees = [m.num_trees() for m in learner.models_[:2]]
    assert trees[1] < trees[0]  # padded
    policy = learner.to_policy()
    X = np.random.default_rng(3).normal(size=(20, 2))
    np.testing.assert_allclose(
        policy.decision_function(X), learner.decision_function(X), rtol=0, atol=1e-12
    )
    assert policy.ensemble.booster.num_trees() == 3 * max(trees)
    np.testing.assert_array_equal(policy.decision_function(X)[:, 2], 0.0)


def test_a_policy_choice_that_chooses_it_saves(tmp_path):
    data = tabular_world(1, max_rows=1500, n_test=10).logged_bandit()
    choice = PolicyChoice(candidates=["dr_reduction"], random_state=0).fit(data)
    assert choice.chosen_ == "dr_reduction"
    loaded = opboost.load_policy(choice.save(tmp_path / "choice"))
    assert loaded.metadata["policy_learner"] == "dr_reduction"
    np.testing.assert_array_equal(loaded.predict(data.contexts), choice.predict(data.contexts))


def test_per_action_regressors_beyond_the_limit_are_refused_up_front(monkeypatch):
    """One LightGBM fit per action: a catalogue past MAX_PER_ACTION_MODELS is refused before
    q is fitted (10**6 actions ran one fit each), naming the count and the fixes; the
    stacked regressor takes the same logs."""
    import opboost.compose.dr_reduction as module

    monkeypatch.setattr(module, "MAX_PER_ACTION_MODELS", 2)
    data = _tiny(k=3)
    message = (
        "DRReduction.fit: regressor='per_action' fits one LightGBM model per action, 3 models "
        "(at most 2); use regressor='stacked', or give the items their features "
        "(LoggedBandit(action_features=...))."
    )
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        DRReduction(random_state=0).fit(data)
    in_choice = message.replace("DRReduction.fit", "PolicyChoice.fit")
    with pytest.raises(InvalidParameterError, match=re.escape(in_choice)):
        PolicyChoice(candidates=["constant", "dr_reduction"], random_state=0).fit(data)
    assert DRReduction(regressor="stacked", random_state=0).fit(data).predict(
        data.contexts
    ).shape == (len(data),)
