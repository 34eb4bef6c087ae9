"""Boosting on candidate sets and action features (issue 19, item 2): the slot view, the
learner's rows [x_i; phi(a)] over candidate pairs only, a Booster policy that never serves a
non-candidate, catalogues given at prediction time (new items), the saved action schema and
the errors that name what to fix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from opboost import Booster
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.api.data.logged import LoggedBandit
from opboost.api.data.pairs import PairRows
from opboost.api.data.slots import SlotView
from opboost.api.exceptions import InvalidParameterError
from opboost.core.policy_loading import load_policy
from opboost.simulation import simulate_catalogue

FAST = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}


@pytest.fixture(scope="module")
def sim():
    return simulate_catalogue(600, 40, 5, 3, 2, random_state=0, reward_scale=3.0)


@pytest.fixture(scope="module")
def fitted(sim):
    return Booster(n_rounds=8, base_learner_params=FAST, random_state=0).fit(sim.logged)


def _serving(sim, n=50, **kw):
    test = sim.test_rows(n, n_candidates=4, **kw)
    return test, test.logged.contexts, test.item_features, test.logged.candidates


# --- the slot view ---------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
def test_slot_view_lists_each_rows_candidates(sparse):
    mask = np.array([[1, 0, 1, 1], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=bool)
    view = SlotView.from_candidates(sp.csr_matrix(mask) if sparse else mask, 3, 4)
    assert view.n_slots == 4 and view.n_pairs == 8
    np.testing.assert_array_equal(view.valid.sum(axis=1), [3, 1, 4])
    np.testing.assert_array_equal(view.items[0, :3], [0, 2, 3])
    np.testing.assert_array_equal(view.items[2], [0, 1, 2, 3])
    assert view.items[1, 0] == 1
    np.testing.assert_array_equal(view.slot_of(np.array([3, 1, 0])), [2, 0, 0])
    values = np.arange(8.0)
    slots = view.scatter(values, -1.0)
    full = view.to_actions(slots, np.nan)
    np.testing.assert_array_equal(np.isnan(full), ~mask)
    np.testing.assert_array_equal(full[0, [0, 2, 3]], [0.0, 1.0, 2.0])


def test_slot_logs_keep_the_feedback_in_slot_coordinates(sim):
    data = sim.logged
    view = SlotView.from_candidates(data.candidates, len(data), data.n_actions)
    slot = view.slot_logs(data)
    assert slot.n_actions == 5 and len(slot) == len(data)
    np.testing.assert_array_equal(view.items[np.arange(len(data)), slot.actions], data.actions)
    np.testing.assert_array_equal(slot.propensities, data.propensities)
    np.testing.assert_array_equal(slot.rewards, data.rewards)


def test_the_learner_rows_are_the_candidate_pairs_only(sim):
    """P = sum_i C_i rows [x_i; phi(a)], never n * K."""
    data = sim.logged
    view = SlotView.from_candidates(data.candidates, len(data), data.n_actions)
    learner = LightGBMTree(**FAST)
    learner.prepare_pairs(PairRows(data.contexts, data.action_features, view), random_state=0)
    assert learner.booster_ is None  # built when first needed (a start may add a column)
    assert learner.ensemble().n_rounds == 0
    train = learner.booster_.train_set
    assert train.num_data() == 600 * 5
    assert train.num_feature() == data.n_features + data.action_features.shape[1]
    rows = PairRows(data.contexts, data.action_features, view).matrix(0, 5)
    np.testing.assert_array_equal(rows[:, :3], np.repeat(data.contexts[:1], 5, axis=0))
    np.testing.assert_array_equal(rows[:, 3:], data.action_features[view.items[0]])


@pytest.mark.parametrize("categorical", [False, True])
def test_a_pair_round_is_its_tree_on_the_designed_pairs(sim, categorical):
    """The round's (n, C) outputs, read from LightGBM's cached training scores, equal the
    committed tree predicting the designed pairs [x_i; phi(a)]: the Dataset's rows are the
    pairs, in pair order (rows of 1 to 5 candidates, so with padded slots)."""
    from opboost.api.data.slots import MASKED_SCORE
    from opboost.api.learner import BaseProblem

    d = sim.logged
    rng = np.random.default_rng(1)
    mask = d.candidates.toarray() & (rng.random((len(d), d.n_actions)) < 0.6)
    mask[np.arange(len(d)), d.actions] = True
    view = SlotView.from_candidates(sp.csr_matrix(mask), len(d), d.n_actions)
    phi = np.arange(d.n_actions, dtype=float)[:, None] if categorical else d.action_features
    pairs = PairRows(d.contexts, phi, view, (0,) if categorical else ())
    learner = LightGBMTree(**FAST)
    learner.prepare_pairs(pairs, random_state=0)
    targets = np.where(view.valid, rng.normal(size=view.valid.shape), 0.0)
    f = learner.fit_round(BaseProblem("regression", targets, np.ones_like(targets)))
    assert np.all(f[~view.valid] == 0.0) and np.abs(f).max() > 0
    learner.commit_round(1.0)
    ensemble = learner.ensemble()
    np.testing.assert_allclose(f[view.valid], ensemble.score_pairs(pairs), rtol=1e-12)
    np.testing.assert_allclose(learner.predict_round(pairs), f, rtol=1e-12)
    scores = view.scatter(ensemble.score_pairs(pairs), MASKED_SCORE)
    np.testing.assert_array_equal(scores[~view.valid], MASKED_SCORE)


# --- the never-a-non-candidate rule ----------------------------------------------------


@pytest.mark.parametrize("new_items", [True, False])
def test_booster_policy_never_serves_a_non_candidate(sim, fitted, new_items):
    _, X, catalogue, candidates = _serving(sim, new_items=new_items)
    mask = candidates.toarray()
    kw = {"action_features": catalogue, "candidates": candidates}
    actions = fitted.predict(X, **kw)
    assert mask[np.arange(len(X)), actions].all()
    probs = fitted.predict_proba(X, **kw)
    assert probs.shape == mask.shape
    assert np.all(probs[~mask] == 0.0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert np.isneginf(fitted.decision_function(X, **kw)[~mask]).all()
    slates = fitted.policy_.rank(X, 6, **kw)
    np.testing.assert_array_equal(slates[:, 4:], -1)  # 4 candidates a row
    assert mask[np.arange(len(X))[:, None], slates[:, :4]].all()
    np.testing.assert_array_equal(slates[:, 0], actions)


def test_rows_with_different_numbers_of_candidates(sim):
    """Candidate sets of 1 to 5 items (padded slots): a fit and its policy stay inside them."""
    d = sim.logged
    rng = np.random.default_rng(0)
    mask = d.candidates.toarray() & (rng.random((len(d), d.n_actions)) < 0.6)
    mask[np.arange(len(d)), d.actions] = True
    assert set(mask.sum(axis=1)) >= {1, 5}
    logs = LoggedBandit(
        d.contexts, d.actions, d.propensities, d.rewards, d.n_actions,
        action_features=d.action_features, candidates=sp.csr_matrix(mask),
    )  # fmt: skip
    booster = Booster(n_rounds=5, base_learner_params=FAST, random_state=0).fit(logs)
    probs = booster.predict_proba(d.contexts, action_features=d.action_features, candidates=mask)
    assert np.all(probs[~mask] == 0.0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert np.all(probs[mask.sum(axis=1) == 1].max(axis=1) == 1.0)


def test_training_softmax_is_zero_outside_the_candidates(sim):
    """The fitted scores on the training rows put no mass outside each row's candidates."""
    booster = Booster(n_rounds=5, base_learner_params=FAST, random_state=0).fit(sim.logged)
    data = sim.logged
    probs = booster.predict_proba(
        data.contexts, action_features=data.action_features, candidates=data.candidates
    )
    assert np.all(probs[~data.candidates.toarray()] == 0.0)
    assert booster.history_["train_value"][-1] > booster.history_["train_value"][0]


def test_candidates_without_action_features_use_the_action_index(sim):
    """Logs with candidates but no action features boost on [x; a] (a categorical) over the
    candidate pairs, and serve the trained actions."""
    d = sim.logged
    logs = LoggedBandit(
        d.contexts, d.actions, d.propensities, d.rewards, d.n_actions, candidates=d.candidates
    )
    booster = Booster(n_rounds=5, base_learner_params=FAST, random_state=0).fit(logs)
    assert booster.policy_.action_schema.kind == "index"
    mask = d.candidates.toarray()[:40]
    probs = booster.predict_proba(d.contexts[:40], candidates=mask)
    assert probs.shape == (40, d.n_actions) and np.all(probs[~mask] == 0.0)
    assert booster.predict_proba(d.contexts[:3]).shape == (3, d.n_actions)
    with pytest.raises(ValueError, match="trained without action features"):
        booster.predict(d.contexts[:3], action_features=d.action_features)


def test_action_features_without_candidates_score_every_item(sim):
    d = sim.logged
    logs = LoggedBandit(
        d.contexts, d.actions, d.propensities, d.rewards, d.n_actions,
        action_features=d.action_features,
    )  # fmt: skip
    booster = Booster(n_rounds=3, base_learner_params=FAST, random_state=0).fit(logs)
    new = np.random.default_rng(0).normal(size=(7, 2))
    assert booster.decision_function(d.contexts[:4], action_features=new).shape == (4, 7)


# --- doubly robust training on candidate pairs ------------------------------------------


def test_dr_pair_coefficients_use_a_reward_model_on_item_features(sim):
    """DR's Gamma in slot coordinates: q(x_i, a) of a model on [x; phi(a)] at each row's
    candidates, plus (r_i - q_i) / p_i at the logged slot, 0 in padded slots."""
    from sklearn.linear_model import LinearRegression

    from opboost.algorithms.estimators.direct import DirectMethod, DoublyRobust

    d = sim.logged
    rng = np.random.default_rng(2)
    mask = d.candidates.toarray() & (rng.random((len(d), d.n_actions)) < 0.6)
    mask[np.arange(len(d)), d.actions] = True
    logs = LoggedBandit(
        d.contexts, d.actions, d.propensities, d.rewards, d.n_actions,
        action_features=d.action_features, candidates=mask,
    )  # fmt: skip
    view = SlotView.from_candidates(mask, len(d), d.n_actions)
    pairs = PairRows(d.contexts, d.action_features, view)
    model = LinearRegression()
    q = DirectMethod(reward_model=model, n_folds=1).pair_coefficients(logs, pairs)
    fitted = LinearRegression().fit(
        np.hstack([d.contexts, d.action_features[d.actions]]), d.rewards
    )
    np.testing.assert_allclose(q[view.valid], fitted.predict(pairs.matrix()), rtol=1e-10)
    assert np.all(q[~view.valid] == 0.0)
    gamma = DoublyRobust(reward_model=model, n_folds=1).pair_coefficients(logs, pairs)
    rows, slot = np.arange(len(d)), view.slot_of(d.actions)
    correction = np.zeros_like(q)
    correction[rows, slot] = (d.rewards - q[rows, slot]) / d.propensities
    np.testing.assert_allclose(gamma, q + correction, rtol=1e-12)


@pytest.mark.parametrize("estimator", ["dr", "dm"])
def test_reward_model_estimators_train_on_candidate_pairs(sim, estimator):
    booster = Booster(
        n_rounds=5, estimator=estimator, base_learner_params=FAST, random_state=0
    ).fit(sim.logged)
    _, X, catalogue, candidates = _serving(sim)
    probs = booster.predict_proba(X, action_features=catalogue, candidates=candidates)
    assert np.all(probs[~candidates.toarray()] == 0.0)
    assert np.isfinite(booster.history_["train_value"]).all()


# --- held-out selection and evaluation ---------------------------------------------------


def test_validation_fraction_and_eval_data_run_on_candidates(sim):
    booster = Booster(
        n_rounds=6, base_learner_params=FAST, random_state=0, validation_fraction=0.3
    ).fit(sim.logged, eval_data=sim.logged.subset(np.arange(100)))
    assert 0 <= booster.best_round_ <= 6
    assert np.isfinite(booster.history_["select_value"]).all()
    assert np.isfinite(booster.history_["eval_snips_argmax"]).all()
    assert booster.selection_["constant_action"] is None
    _, X, catalogue, candidates = _serving(sim)
    actions = booster.predict(X, action_features=catalogue, candidates=candidates)
    assert candidates.toarray()[np.arange(len(X)), actions].all()


def test_booster_score_reads_the_logs_catalogue_and_candidates(sim, fitted):
    """Booster.score on held-out logs with new items serves their catalogue and candidates."""
    test = sim.test_rows(300, n_candidates=4)
    value = fitted.score(test.logged)
    assert np.isfinite(value) and 0.0 <= value <= 1.0


def test_checkpoints_save_and_resuming_is_refused(sim, tmp_path):
    from opboost.core.callbacks import Checkpoint

    booster = Booster(n_rounds=4, base_learner_params=FAST, random_state=0)
    booster.fit(sim.logged, callbacks=[Checkpoint(tmp_path / "ck", every=2)])
    again = Booster(n_rounds=6, base_learner_params=FAST, random_state=0)
    with pytest.raises(InvalidParameterError, match="resuming from a checkpoint is not supp"):
        again.fit(sim.logged, callbacks=[Checkpoint(tmp_path / "ck", every=2, resume=True)])


# --- saving: the action schema ---------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", ".json"])
def test_saved_policy_predicts_identically_and_records_the_schema(sim, fitted, tmp_path, suffix):
    _, X, catalogue, candidates = _serving(sim)
    path = fitted.save(tmp_path / f"policy{suffix}")
    loaded = load_policy(path)
    assert loaded.action_schema == fitted.policy_.action_schema
    assert loaded.action_schema.n_features == 2
    kw = {"action_features": catalogue, "candidates": candidates}
    np.testing.assert_array_equal(
        loaded.decision_function(X, **kw), fitted.policy_.decision_function(X, **kw)
    )


def test_a_pairs_ensemble_with_a_wrong_header_is_refused(fitted):
    import json

    from opboost.lgbm.ensemble import LightGBMEnsemble

    header, body = fitted.policy_.ensemble.dumps().split("\n", 1)
    meta = json.loads(header)
    # the 2 item features, and the start's interaction column if it chose one
    width = 2 + (fitted.reward_start_["family"] != "trees")
    assert meta["action_design"] == "pairs" and meta["n_action_features"] == width
    for bad in (width + 1, 0):
        text = json.dumps({**meta, "n_action_features": bad}) + "\n" + body
        with pytest.raises(ValueError, match="Corrupted lightgbm_text_v1"):
            LightGBMEnsemble.loads(text)


def test_sparse_contexts_boost_on_candidate_pairs(sim):
    d = sim.logged
    logs = LoggedBandit(
        sp.csr_matrix(d.contexts), d.actions, d.propensities, d.rewards, d.n_actions,
        action_features=d.action_features, candidates=d.candidates,
    )  # fmt: skip
    sparse = Booster(n_rounds=3, base_learner_params=FAST, random_state=0).fit(logs)
    dense = Booster(n_rounds=3, base_learner_params=FAST, random_state=0).fit(d)
    _, X, catalogue, candidates = _serving(sim)
    kw = {"action_features": catalogue, "candidates": candidates}
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X), **kw), dense.decision_function(X, **kw)
    )


def test_a_catalogue_of_another_schema_is_refused(sim, fitted):
    _, X, catalogue, candidates = _serving(sim)
    policy = fitted.policy_
    with pytest.raises(ValueError, match=r"pass the catalogue action_features=, an \(n_items, 2\)"):
        policy.predict(X, candidates=candidates)
    with pytest.raises(ValueError, match=r"shape \(n_items, 2\), the 2 item feature\(s\)"):
        policy.predict(X, action_features=np.hstack([catalogue, catalogue]), candidates=candidates)
    with pytest.raises(ValueError, match=r"candidates must have shape \(50, 3\)"):
        policy.predict(X, action_features=catalogue[:3], candidates=candidates)
    with pytest.raises(ValueError, match="must be finite"):
        policy.predict(X, action_features=np.full_like(catalogue, np.nan))
    with pytest.raises(InvalidParameterError, match="fitted on 3"):
        policy.predict(X[:, :2], action_features=catalogue)


def test_a_fixed_action_policy_refuses_action_features(digits):
    from opboost.simulation import supervised_to_bandit

    logs = supervised_to_bandit(digits.X[:200], digits.y[:200], n_actions=10, random_state=0)
    booster = Booster(n_rounds=2, base_learner_params=FAST, random_state=0).fit(logs.logged)
    with pytest.raises(ValueError, match="fitted on 10 fixed actions, not on action features"):
        booster.predict(digits.X[:3], action_features=np.zeros((10, 2)))


def test_a_constant_policy_refuses_action_features():
    from opboost.api.policy import ConstantPolicy

    policy = ConstantPolicy(1, 3)
    for method in (policy.predict, policy.predict_proba):
        with pytest.raises(ValueError, match="fitted on 3 fixed actions"):
            method(np.zeros((2, 4)), action_features=np.zeros((3, 2)))


def test_pairs_ensemble_needs_the_catalogue(fitted, sim):
    with pytest.raises(InvalidParameterError, match=r"action_features=\.\.\., candidates="):
        fitted.policy_.ensemble.decision_function(sim.logged.contexts[:3])


# --- what a fit on candidates does not support: clear errors ---------------------------


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"warm_start": "best_constant"}, "warm_start='best_constant' is not supported"),
        ({"validation_fraction": 0.2, "safe": True}, "use safe=False"),
        ({"base_learner": "sklearn_tree"}, "cannot boost on"),
        ({"validation_fraction": 0.2, "selection": "dr"}, "use selection='snips' or 'ips'"),
    ],
)
def test_unsupported_settings_are_refused_by_name(sim, params, match):
    with pytest.raises(InvalidParameterError, match=match):
        Booster(n_rounds=2, random_state=0, **params).fit(sim.logged)


# --- reward regression on [x; phi(a)] ---------------------------------------------------


def test_reward_regression_scores_new_items_over_candidates(sim, tmp_path):
    model = RewardRegression(n_estimators=20, random_state=0).fit(sim.logged)
    test, X, catalogue, candidates = _serving(sim)
    kw = {"action_features": catalogue, "candidates": candidates}
    actions = model.predict(X, **kw)
    assert candidates.toarray()[np.arange(len(X)), actions].all()
    means = test.mean_reward(X, catalogue)
    np.testing.assert_allclose(
        model.decision_function(X, **kw)[candidates.toarray()],
        model.model_.predict(
            np.hstack([np.repeat(X, 4, 0), catalogue[test.candidate_items.ravel()]])
        ),
    )
    assert means.shape == (50, catalogue.shape[0])
    policy = load_policy(model.to_policy().save(tmp_path / "rr"))
    np.testing.assert_array_equal(policy.predict(X, **kw), actions)


def _brand_logs(n: int, items: object, seed: int) -> tuple[LoggedBandit, np.ndarray]:
    """Rows preferring brand "a" (x_0 > 0) or "b" (x_0 <= 0): reward 1 for an item of the
    preferred brand, 0 otherwise; 5 candidates of the catalogue per row, uniform logging."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    k = len(items)
    chosen = np.argsort(rng.random((n, k)), axis=1)[:, :5]
    candidates = np.zeros((n, k), dtype=bool)
    candidates[np.arange(n)[:, None], chosen] = True
    actions = chosen[np.arange(n), rng.integers(0, 5, n)]
    preferred = np.where(X[:, 0] > 0, "a", "b")
    rewards = (items["brand"].to_numpy()[actions] == preferred).astype(float)
    logs = LoggedBandit(
        X, actions, np.full(n, 0.2), rewards, k, action_features=items, candidates=candidates
    )
    return logs, preferred


def test_categorical_item_features_are_split_as_categories_and_serve_new_items(tmp_path):
    """A DataFrame catalogue with a string column: stored as codes with an item schema,
    boosted with that column as a LightGBM categorical feature, saved with its categories,
    and a catalogue of NEW items (an unseen brand included) is encoded the same way at
    serving: the policy picks the preferred brand among new items."""
    import pandas as pd

    rng = np.random.default_rng(0)
    brands = np.array(["a", "b", "c", "d"])
    # price (two levels, no effect on reward) cannot single out an item, so a policy that
    # generalises to new items has to read the brand
    price = rng.integers(0, 2, 40).astype(float)
    items = pd.DataFrame({"brand": brands[rng.integers(0, 4, 40)], "price": price})
    logs, _ = _brand_logs(3000, items, seed=1)
    assert logs.item_schema.categories["brand"] == ("a", "b", "c", "d")
    assert logs.action_features.dtype == np.float64 and logs.subset([0, 1]).item_schema
    booster = Booster(n_rounds=30, random_state=0, base_learner_params=FAST).fit(logs)
    text = booster.policy_.ensemble.booster.model_to_string()
    d = logs.n_features
    cat_trees = [t for t in text.split("Tree=")[1:] if "num_cat=0" not in t]
    assert cat_trees and any(
        str(d) in line.split("=")[1].split()
        for t in cat_trees
        for line in t.splitlines()
        if line.startswith("split_feature=")
    )  # categorical splits, on the brand column (phi column 0: feature d)
    new_price = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    new = pd.DataFrame({"brand": ["z", "a", "c", "b", "d", "a", "b"], "price": new_price})
    X = np.array([[1.0, 0, 0], [-1.0, 0, 0]] * 50)
    picked = new["brand"].to_numpy()[booster.predict(X, action_features=new)]
    want = np.array(["a", "b"] * 50)
    assert np.mean(picked == want) > 0.9
    booster.save(tmp_path / "p")
    loaded = load_policy(tmp_path / "p")
    np.testing.assert_array_equal(
        loaded.decision_function(X, action_features=new),
        booster.decision_function(X, action_features=new),
    )
    with pytest.raises(ValueError, match=r"column 'brand' was categorical at fit"):
        booster.predict(X, action_features=new.assign(brand=np.arange(7.0)))
    codes = np.column_stack([[-1, 0, 2, 1, 3, 0, 1], new["price"]])  # encoded by hand
    np.testing.assert_array_equal(
        booster.decision_function(X, action_features=codes),
        booster.decision_function(X, action_features=new),
    )


@pytest.mark.parametrize(
    "categories",
    [7, [["brand"]], [["brand", 3]], [["colour", ["a"]]]],
)
def test_a_malformed_saved_item_schema_is_a_value_error(categories):
    """A saved policy's action schema with broken categories (not pairs, not lists, or a
    column the schema does not have) is refused with a ValueError naming the record."""
    from opboost.api.data.pairs import ActionSchema

    record = {
        "kind": "features",
        "n_features": 2,
        "n_actions": 5,
        "columns": ["brand", "price"],
        "categories": categories,
    }
    with pytest.raises(ValueError, match="malformed 'action_schema' record"):
        ActionSchema.from_json(record)
    good = ActionSchema.from_json({**record, "categories": [["brand", ["a", "b"]]]})
    assert good.categorical == (0,) and good.categories == {"brand": ("a", "b")}
    assert ActionSchema.from_json({**record, "categories": None}).categorical == ()
