"""vw_cb_adf on catalogue logs (issue 34): each row's candidate items as ADF action lines with
their features, crossed with the context by ``-q sa``; served on new items with the catalogue
``action_features=`` and ``candidates=``."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from opboost_vw._text import item_lines
from opboost_vw.offline import VWOfflinePolicy

from opboost import LoggedBandit
from opboost.api import InvalidParameterError
from opboost.simulation import simulate_catalogue


@pytest.fixture(scope="module")
def catalogue():
    """3,000 logged rows, 60 items with 3 features, 10 candidates a row, a uniform logger;
    500 held-out rows whose 10 candidates are new items."""
    sim = simulate_catalogue(3000, 60, 10, 3, 3, random_state=0, logging_beta=0.0, reward_scale=3.0)
    return sim, sim.test_rows(500, random_state=1)


def _serving(test):
    return {"candidates": test.logged.candidates, "action_features": test.item_features}


def test_item_lines_write_numeric_and_categorical_columns():
    features = np.array([[0.5, 0.0, 2.0], [-1.25, 3.0, 0.0]])
    assert item_lines(features) == ["|a f0:0.5 f2:2", "|a f0:-1.25 f1:3"]
    assert item_lines(features, (2,)) == ["|a f0:0.5 c2=2", "|a f0:-1.25 f1:3 c2=0"]


@pytest.mark.parametrize("cb_type", ["mtr", "dr"])
def test_fits_on_item_features_and_scores_new_items(catalogue, cb_type):
    """True value on rows whose candidates were never logged: well above the uniform logger
    and within 0.05 of the best candidate."""
    sim, test = catalogue
    model = VWOfflinePolicy(cb_type=cb_type, random_state=0).fit(sim.logged)
    assert model.n_action_features_ == 3 and model.categorical_items_ == ()
    actions = model.predict(test.logged.contexts, **_serving(test))
    assert test.logged.candidates[np.arange(500), actions].all()
    best = test.candidate_means.max(axis=1).mean()
    value = test.policy_value(actions)
    assert value > test.logging_value + 0.25, (value, test.logging_value)
    assert value > best - 0.05, (value, best)


def test_scores_only_the_candidates(catalogue):
    sim, test = catalogue
    model = VWOfflinePolicy(n_passes=1, random_state=0).fit(sim.logged)
    X = test.logged.contexts[:20]
    scores = model.decision_function(X, **{**_serving(test), "candidates": None})
    assert scores.shape == (20, test.logged.n_actions) and np.isfinite(scores).all()
    mask = test.logged.candidates[:20].toarray()
    masked = model.decision_function(X, candidates=mask, action_features=test.item_features)
    np.testing.assert_array_equal(masked[mask], scores[mask])  # a line's cost is its own
    assert np.isneginf(masked[~mask]).all()
    probs = model.predict_proba(X, candidates=mask, action_features=test.item_features)
    assert probs.sum(axis=1).tolist() == [1.0] * 20 and not probs[~mask].any()


def test_candidates_of_every_action_give_the_classic_model():
    """A log whose candidates are every action writes the classic examples: same scores."""
    rng = np.random.default_rng(0)
    n, K = 400, 4
    X = rng.normal(size=(n, 3))
    actions = rng.integers(0, K, n)
    rewards = (actions == (X[:, 0] > 0)).astype(float)
    plain = LoggedBandit(X, actions, np.full(n, 0.25), rewards, K)
    masked = LoggedBandit(X, actions, np.full(n, 0.25), rewards, K, candidates=np.ones((n, K)))
    first = VWOfflinePolicy(random_state=2).fit(plain).decision_function(X[:50])
    second = VWOfflinePolicy(random_state=2).fit(masked).decision_function(X[:50])
    np.testing.assert_array_equal(first, second)
    some = np.zeros((50, K), dtype=bool)
    some[:, [1, 3]] = True
    picked = VWOfflinePolicy(random_state=2).fit(masked).predict(X[:50], candidates=some)
    assert set(picked) <= {1, 3}


def test_categorical_item_features_are_indicators():
    """A brand column (categorical in the log's item schema) drives the reward: new items of
    the liked brand are chosen."""
    rng = np.random.default_rng(0)
    items = pd.DataFrame({"brand": rng.choice(["a", "b", "c"], 30), "size": rng.normal(size=30)})
    n = 3000
    X = rng.normal(size=(n, 2))
    cands = np.argsort(rng.random((n, 30)), axis=1)[:, :5]
    mask = np.zeros((n, 30), dtype=bool)
    mask[np.arange(n)[:, None], cands] = True
    acts = cands[np.arange(n), rng.integers(0, 5, n)]
    liked = np.where(X[:, 0] > 0, "a", "b")
    clicks = (items["brand"].to_numpy()[acts] == liked).astype(float)
    logs = LoggedBandit(X, acts, np.full(n, 0.2), clicks, 30, action_features=items,
                        candidates=mask)  # fmt: skip
    model = VWOfflinePolicy(cb_type="mtr", random_state=0).fit(logs)
    assert model.categorical_items_ == (0,)
    new_items = pd.DataFrame({"brand": ["c", "a", "b"], "size": [0.0, 0.0, 0.0]})
    chosen = model.predict([[2.0, 0.0], [-2.0, 0.0]], action_features=new_items)
    assert new_items["brand"][chosen].tolist() == ["a", "b"]


def test_pickles_with_item_features(catalogue):
    sim, test = catalogue
    model = VWOfflinePolicy(n_passes=1, random_state=3).fit(sim.logged)
    X = test.logged.contexts[:30]
    serving = {"candidates": test.logged.candidates[:30], "action_features": test.item_features}
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(
        restored.decision_function(X, **serving), model.decision_function(X, **serving)
    )


def test_catalogue_errors(catalogue):
    sim, test = catalogue
    X = test.logged.contexts[:5]
    model = VWOfflinePolicy(n_passes=1, random_state=0).fit(sim.logged)
    with pytest.raises(InvalidParameterError) as info:
        model.predict(X)
    assert str(info.value) == (
        "VWOfflinePolicy.decision_function: this policy was fitted on item features (d_a = 3); "
        "pass the catalogue action_features=, an (n_items, 3) array, one row per item."
    )
    with pytest.raises(InvalidParameterError) as info:
        model.predict(X, action_features=test.item_features[:, :2])
    assert str(info.value) == (
        "VWOfflinePolicy.decision_function: action_features must be a finite (n_items, 3) "
        "array, one row per item with the training item features. Got shape (120, 2)."
    )
    with pytest.raises(ValueError, match=r"candidates must have shape \(5, 120\)"):
        model.predict(X, candidates=np.ones((5, 60)), action_features=test.item_features)
    rng = np.random.default_rng(0)
    plain = LoggedBandit(rng.normal(size=(50, 3)), rng.integers(0, 3, 50), np.full(50, 1 / 3),
                         rng.random(50), 3)  # fmt: skip
    classic = VWOfflinePolicy(n_passes=1, random_state=0).fit(plain)
    with pytest.raises(InvalidParameterError) as info:
        classic.predict(X, action_features=test.item_features)
    assert str(info.value) == (
        "VWOfflinePolicy.decision_function: this policy was fitted without action_features "
        "(K = 3 fixed actions), so it cannot score a catalogue; leave action_features=None."
    )
