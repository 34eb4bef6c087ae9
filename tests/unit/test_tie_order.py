"""Equal scores are broken by the logs, not by the order of the action ids: a fitted policy
records its logs' actions by their value as constant policies (``Policy.tie_order``) and
``predict``, ``rank``, epsilon-greedy ``sample``, the held-out selection and the off-policy
scorer all break ties in that order."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from opboost import Booster, LoggedBandit
from opboost.api.policy import Policy
from opboost.api.serving.exploration import exploration_distribution
from opboost.api.serving.masks import greedy, top_k
from opboost.api.serving.tie_order import (
    constant_action_values,
    constant_tie_order,
    recorded_tie_order,
)
from opboost.core.metrics import off_policy_scorer
from opboost.core.policy_loading import load_policy

IDS = ["base", "rare_a", "rare_b", "gold", "rare_c"]


def pooled_frame(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One action logged 98.4% of the time and four with about 8 rows each, too few for a
    reward model's trees to split them apart (they share every leaf, so every score ties);
    "gold" always clicks, the other rare ones never, "base" one time in ten."""
    rng = np.random.default_rng(seed)
    p = np.array([0.984, 0.004, 0.004, 0.004, 0.004])
    a = rng.choice(len(IDS), size=n, p=p)
    clicks = rng.random(n) < np.array([0.1, 0.0, 0.0, 1.0, 0.0])[a]
    return pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "action": np.array(IDS)[a],
            "propensity": p[a],
            "reward": clicks.astype(float),
        }
    )


def logs_in_order(frame: pd.DataFrame, order: list[str]) -> LoggedBandit:
    return LoggedBandit.from_dataframe(
        frame,
        contexts=["x"],
        action="action",
        propensity="propensity",
        reward="reward",
        actions=order,
    )


ORDERS = [IDS, IDS[::-1], sorted(IDS)]  # gold 4th, 2nd and 2nd; a rare one first in two


def test_greedy_and_top_k_break_equal_scores_in_the_tie_order():
    scores = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-np.inf, 5.0, 5.0, 1.0]])
    order = np.array([2, 0, 3, 1])
    np.testing.assert_array_equal(greedy(scores), [1, 0, 1])
    np.testing.assert_array_equal(greedy(scores, order), [2, 2, 2])
    np.testing.assert_array_equal(top_k(scores, 3, order), [[2, 1, 0], [2, 0, 3], [2, 1, 3]])
    padded = np.array([[1.0, 3.0, 3.0, -np.inf]])
    np.testing.assert_array_equal(top_k(padded, 4, order), [[2, 1, 0, -1]])


@pytest.mark.parametrize(
    "recorded",
    [[0, 0, 1], [0, 1], [0, 1, 3], [0.0, 1.0, 2.0], "012", {"0": 1}],
)
def test_a_recorded_tie_order_that_is_not_a_permutation_is_refused(recorded):
    with pytest.raises(ValueError) as info:
        recorded_tie_order({"tie_order": recorded}, 3)
    assert str(info.value) == (
        f"metadata['tie_order'] must list every action index 0 .. 2 exactly once, "
        f"got {recorded!r:.120}"
    )


def test_epsilon_greedy_gives_the_greedy_mass_to_the_first_tied_action_of_the_order():
    scores = np.array([[1.0, 3.0, 3.0, 0.0]])
    probs = exploration_distribution(scores, epsilon=0.2, tie_order=np.array([2, 0, 3, 1]))
    np.testing.assert_allclose(probs[0], [0.05, 0.05, 0.8 + 0.05, 0.05])


def test_the_tie_order_ranks_actions_by_their_snips_value_then_by_logged_rows():
    frame = pooled_frame()
    logs = logs_in_order(frame, IDS)
    order = constant_tie_order(logs)
    values = constant_action_values(logs)
    assert IDS[order[0]] == "gold" and order[0] == np.nanargmax(values)
    assert (np.diff(values[order]) <= 0).all()
    never = logs_in_order(frame[frame.action != "rare_b"], IDS)  # rare_b never logged: last
    assert IDS[constant_tie_order(never)[-1]] == "rare_b"
    counts = np.bincount(logs.actions, minlength=len(IDS))
    zero = [a for a in order if values[a] == 0.0]  # the never-clicked ones: most logged first
    assert len(zero) == 3 and (np.diff(counts[zero]) <= 0).all()


@pytest.mark.parametrize("settings", [{}, {"n_rounds": 0, "validation_fraction": None}])
def test_where_the_reward_model_pools_actions_the_policy_plays_the_best_logged_one_in_any_id_order(
    settings,
):
    """The rare actions' scores tie exactly; the policy plays gold, the one whose logs click,
    whatever order the ids come in (before the tie order: the first rare id, rare_a, rare_c or
    gold, by the order of ``actions=``)."""
    frame = pooled_frame()
    X = frame[["x"]][:200]
    for order in ORDERS:
        booster = Booster(random_state=0, **settings).fit(logs_in_order(frame, order))
        scores = booster.decision_function(X)
        if not settings:
            assert booster.fallback_ is None and booster.best_round_ == 0, order
        assert (scores[:, order.index("gold")] == scores.max(axis=1)).all(), order
        assert ((scores == scores.max(axis=1, keepdims=True)).sum(axis=1) == 4).all(), order
        served = booster.predict(X, return_ids=True)
        assert (served == "gold").all(), order
        assert [order[a] for a in booster.policy_.tie_order][:1] == ["gold"], order


def test_sample_rank_selection_and_scorer_break_ties_as_predict_does(tmp_path):
    frame = pooled_frame()
    logs = logs_in_order(frame, IDS)
    booster = Booster(random_state=0).fit(logs)
    policy = booster.policy_
    X = frame[["x"]][:200]
    served = policy.predict(X)
    assert (np.asarray(served) == IDS.index("gold")).all()
    actions, propensities = booster.sample(X, epsilon=0.0, random_state=0)
    np.testing.assert_array_equal(actions, served)
    assert (propensities == 1.0).all()
    np.testing.assert_array_equal(policy.rank(X, 1)[:, 0], served)
    assert booster.selection_["constant_action"] == policy.tie_order[0]
    value = off_policy_scorer("snips")(booster, logs)  # the value of what predict plays
    hits = (booster.predict(logs.contexts) == logs.actions) / logs.propensities
    assert value == pytest.approx(np.sum(hits * logs.rewards) / np.sum(hits), rel=1e-12)
    loaded = load_policy(policy.save(tmp_path / "policy.json"))
    np.testing.assert_array_equal(loaded.tie_order, policy.tie_order)
    np.testing.assert_array_equal(loaded.predict(X), served)


def test_a_policy_file_with_a_broken_tie_order_is_refused_at_load(tmp_path):
    policy = Booster(n_rounds=2, random_state=0).fit(logs_in_order(pooled_frame(), IDS)).policy_
    broken = Policy(policy.ensemble, policy.n_actions, {**policy.metadata, "tie_order": [3, 3]})
    path = broken.save(tmp_path / "broken.json")
    with pytest.raises(ValueError) as info:
        load_policy(path)
    assert str(info.value) == (
        f"{path}: corrupted policy file: metadata['tie_order'] must list every action index "
        f"0 .. 4 exactly once, got [3, 3]; re-save the policy."
    )
    assert json.loads(path.read_text())["metadata"]["tie_order"] == [3, 3]


@pytest.mark.parametrize("refit", [True, False])
def test_a_challenger_that_replaces_the_boosted_policy_breaks_ties_in_the_same_order(
    monkeypatch, refit
):
    """The DR reduction, when it wins (forced here), is served with the fit's tie order: the
    training rows' order without a refit, every row's after one."""
    from opboost.core.selection import RoundSelection

    monkeypatch.setattr("opboost.core.resolve.AUTO_CHALLENGER_CONFIDENCE", 0.51)
    gain = RoundSelection._gain

    def challenger_wins(self, differences, confidence=None):
        return (1.0, 1.0) if confidence == 0.51 else gain(self, differences, confidence)

    monkeypatch.setattr(RoundSelection, "_gain", challenger_wins)
    frame = pooled_frame()
    logs = logs_in_order(frame, IDS[::-1])
    booster = Booster(random_state=0, refit=refit).fit(logs)
    assert booster.fallback_ == "dr_reduction"
    order = booster.policy_.tie_order
    assert order is not None and IDS[::-1][order[0]] == "gold"
    if refit:  # refitted on every row: their order
        np.testing.assert_array_equal(order, constant_tie_order(logs))


@pytest.mark.parametrize(
    ("name", "params"), [("reward_regression", {}), ("dr_reduction", {"regressor": "stacked"})]
)
def test_the_built_in_policy_learners_break_pooled_scores_in_the_logs_order_in_any_id_order(
    name, params, tmp_path
):
    """Reward regression and the stacked DR reduction on their own: their stacked trees pool
    the rare actions as the start's do, so their scores tie, and what they serve no longer
    depends on the order of the ids (before: the first tied id of ``actions=``; reward
    regression played rare_a, rare_c or gold by the order, the DR reduction base or rare_c on
    21 of the 200 rows); predict_proba, sample and the saved policy agree with predict."""
    from opboost.algorithms.policy_learners.reward_regression import RewardRegression
    from opboost.compose.dr_reduction import DRReduction

    learner_class = {"reward_regression": RewardRegression, "dr_reduction": DRReduction}[name]
    frame = pooled_frame()
    X = frame[["x"]][:200]
    served_ids = []
    for order in ORDERS:
        logs = logs_in_order(frame, order)
        learner = learner_class(random_state=0, **params).fit(logs)
        scores = learner.decision_function(X)
        tied = (scores == scores.max(axis=1, keepdims=True)).sum(axis=1) > 1
        assert tied.sum() >= 20, order
        np.testing.assert_array_equal(learner.tie_order_, constant_tie_order(logs))
        served = learner.predict(X)
        np.testing.assert_array_equal(served, greedy(scores, constant_tie_order(logs)))
        served_ids.append([order[a] for a in served])
        np.testing.assert_array_equal(learner.predict_proba(X), np.eye(len(IDS))[served])
        actions, propensities = learner.sample(X, epsilon=0.0, random_state=0)
        np.testing.assert_array_equal(actions, served)
        assert (propensities == 1.0).all(), order
        loaded = load_policy(learner.to_policy().save(tmp_path / f"{name}.json"))
        np.testing.assert_array_equal(loaded.tie_order, learner.tie_order_)
        np.testing.assert_array_equal(loaded.predict(X), served)
    assert served_ids[0] == served_ids[1] == served_ids[2]
    if name == "reward_regression":  # every rare score ties with gold's
        assert set(served_ids[0]) == {"gold"}
