"""PolicyChoice: label-free choice among policy learners on held-out logs (DR scores), the
constant action where only the action matters, a learned policy where contexts matter, and a
chosen policy that saves and loads with every candidate's scores."""

from __future__ import annotations

import re

import numpy as np
import pytest
from action_only_data import action_only_log
from sklearn.model_selection import train_test_split

from opboost import Booster, PolicyChoice, load_policy
from opboost.api.exceptions import InvalidParameterError
from opboost.api.policy import ConstantPolicy, Policy
from opboost.simulation.supervised import expected_reward, supervised_to_bandit

FAST = {"n_rounds": 30, "base_learner_params": {"num_threads": 1}}


@pytest.fixture(scope="module")
def digits_logs(digits):
    X_train, X_test, y_train, y_test = train_test_split(
        digits.X, digits.y, test_size=0.3, random_state=0, stratify=digits.y
    )
    sim = supervised_to_bandit(X_train, y_train, n_actions=10, random_state=0)
    return sim.logged, X_test, y_test


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constant_action_chosen_where_only_the_action_matters(seed):
    """Nothing beyond action 2 is learnable: the choice keeps the constant action."""
    logged = action_only_log(seed=seed, n=800)
    choice = PolicyChoice(booster_params=FAST, random_state=seed).fit(logged)
    assert choice.chosen_ == "constant"
    assert isinstance(choice.policy_, ConstantPolicy) and choice.policy_.action == 2
    assert np.all(choice.predict(logged.contexts[:5]) == 2)


def test_learned_policy_chosen_where_contexts_matter(digits_logs, tmp_path):
    """On digits a learned candidate wins, clearly beats the constant action, and the saved
    policy reloads with every candidate's held-out scores in its metadata."""
    logged, X_test, y_test = digits_logs
    choice = PolicyChoice(booster_params=FAST, random_state=0).fit(logged)
    assert choice.chosen_ != "constant"
    assert list(choice.scores_) == ["constant", "bopl_s_ips", "bopl_s_dr", "reward_regression"]
    assert choice.challenges_["bopl_s_ips"]["won"]  # the boosted policy beat the constant
    reward = expected_reward(np.eye(10)[choice.predict(X_test)], y_test)
    assert reward > expected_reward(np.full((len(y_test), 10), 0.1), y_test) + 0.5
    choice.save(tmp_path / "chosen")
    loaded = load_policy(tmp_path / "chosen")
    np.testing.assert_array_equal(loaded.predict(X_test), choice.predict(X_test))
    record = loaded.metadata["choice"]
    assert record["chosen"] == choice.chosen_ and set(record["scores"]) == set(choice.scores_)


def test_reward_regression_exports_a_saveable_policy(digits_logs, tmp_path):
    """A chosen reward model is an ordinary Policy whose scores are the predicted rewards."""
    logged, X_test, _ = digits_logs
    choice = PolicyChoice(candidates=["reward_regression"], random_state=0)
    choice.fit(logged)
    assert isinstance(choice.policy_, Policy)
    np.testing.assert_array_equal(choice.policy_.predict(X_test), choice.predict(X_test))
    loaded = load_policy(choice.save(tmp_path / "rr.json"))
    np.testing.assert_allclose(
        loaded.decision_function(X_test), choice.decision_function(X_test), rtol=0, atol=0
    )


def test_user_candidates_are_challenged_in_order(digits_logs):
    """A dict of the user's own learners: the first is the incumbent, a later one replaces it
    only when its paired lower bound is above 0; a 2-round booster loses to a 30-round one."""
    logged, _, _ = digits_logs
    paper = {"warm_start": "none"}  # from F_0 = 0: 2 rounds are clearly fewer than 30
    candidates = {
        "few_rounds": Booster(n_rounds=2, **paper),
        "more_rounds": Booster(**FAST, **paper),
    }
    choice = PolicyChoice(candidates=candidates, random_state=0).fit(logged)
    challenge = choice.challenges_["more_rounds"]
    assert challenge["incumbent"] == "few_rounds" and challenge["won"]
    assert challenge["low"] > 0 and choice.chosen_ == "more_rounds"
    reverse = dict(reversed(list(candidates.items())))
    choice = PolicyChoice(candidates=reverse, random_state=0).fit(logged)
    assert choice.chosen_ == "more_rounds" and not choice.challenges_["few_rounds"]["won"]
    assert candidates["more_rounds"].__dict__.get("policy_") is None  # cloned, not fitted


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"candidates": ["bopl_s_ips", "xgb"]}, r"unknown candidate\(s\) \['xgb'\]"),
        ({"candidates": []}, r"'candidates' parameter of PolicyChoice must be"),
        ({"candidates": "bopl_s_ips"}, r"'candidates' parameter of PolicyChoice must be"),
        ({"confidence": 1.0}, r"'confidence' parameter"),
        ({"validation_fraction": 1.0}, r"'validation_fraction' parameter"),
    ],
)
def test_bad_parameters_name_the_parameter(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        PolicyChoice(**params).fit(action_only_log(n=100))


def test_logs_with_item_features_are_refused_up_front_with_the_fix():
    """Item features (action_features) were accepted, then the held-out scoring died on
    "pass the catalogue action_features=" from the Booster candidate; PolicyChoice serves
    fixed action indices, so it refuses such logs by name and points at Booster()."""
    from opboost.simulation import simulate_catalogue

    logs = simulate_catalogue(600, 12, 4, 3, 2, random_state=0).logged
    message = (
        "PolicyChoice.fit: these logs give the items features (action_features), but "
        "PolicyChoice chooses among policies of fixed actions and serves no action_features=; "
        "fit Booster() on them"
    )
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        PolicyChoice(random_state=0).fit(logs)
