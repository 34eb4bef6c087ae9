"""The reward-model start of fits on candidate pairs (issue 34, item 1): F_0 is the cross-fitted
reward model on [x; phi(a)] (and the bilinear interaction column when it clearly predicts),
DR and DM reuse its cross-fitted q instead of fitting a model of their own, and the policy
scores items it never saw."""

from __future__ import annotations

import numpy as np
import pytest

from opboost import Booster, LoggedBandit, OpboostWarning
from opboost.algorithms.estimators.direct import DoublyRobust, dr_coefficients
from opboost.algorithms.learners.lightgbm_tree import LightGBMTree
from opboost.api.data.pair_interaction import PairInteraction
from opboost.api.data.pairs import ActionSchema, PairRows
from opboost.api.data.slots import SlotView
from opboost.core.fit.warm_start import reward_temperature
from opboost.core.policy_loading import load_policy
from opboost.simulation import simulate_catalogue

FAST = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}


def _bilinear_world(seed: int = 0, n: int = 1500):
    return simulate_catalogue(n, 60, 6, 4, 3, random_state=seed, reward_scale=3.0, logging_beta=0.3)


def _pairs(logs) -> PairRows:
    view = SlotView.from_candidates(logs.candidates, len(logs), logs.n_actions)
    return PairRows(logs.contexts, logs.action_features, view)


def _started(logs, **params):
    """A learner prepared on the logs' pairs and started from their rewards: (learner,
    pairs, F_0 (n, C), the factor)."""
    learner = LightGBMTree(**{**FAST, **params})
    pairs = _pairs(logs)
    learner.prepare_pairs(pairs, random_state=0)
    factors = []

    def scale(q):
        factors.append(1.0 / reward_temperature(q, 0.7))
        return factors[-1]

    start = learner.start_from_pair_rewards(pairs, logs.actions, logs.rewards, scale)
    return learner, pairs, start, factors[0]


def _item_effect_rewards(logs, bilinear: float = 1.0, seed: int = 1) -> np.ndarray:
    """Clicks of a ``bilinear`` x bilinear score plus an item effect no bilinear model
    expresses (3|phi_1|): (n,) 0/1 rewards of the logged pairs."""
    rng = np.random.default_rng(seed)
    phi = logs.action_features[logs.actions]
    W = bilinear * rng.normal(size=(logs.contexts.shape[1], phi.shape[1]))
    score = np.einsum("nd,de,ne->n", logs.contexts, W, phi) + 3.0 * np.abs(phi[:, 1]) - 2.0
    return (rng.random(len(logs)) < 1.0 / (1.0 + np.exp(-score))).astype(float)


#: the family each reward signal's start must choose
FAMILIES = {
    "bilinear": "bilinear",
    "item_effect": "bilinear+trees",
    "mostly_item_effect": "trees",
    "none": "trees",
}


@pytest.mark.parametrize("signal", list(FAMILIES))
def test_the_start_is_the_reward_model_on_the_pairs_before_round_1(signal):
    """F_0 on every training pair is factor times the start's own model on the designed pairs
    [x; phi(a)] (plus the cross-fitted interaction column when chosen, or that column alone):
    the ensemble after the start, with no round, scores the training pairs exactly as F_0.
    The family is the one whose held-out predictions order the logged rewards best: clicks
    of a bilinear score serve the column alone (the trees on it fit the click link's curve
    and order the pairs no better), an item effect the column cannot express keeps the trees
    on it, and with a weak bilinear part the trees alone win although the column beats the
    mean reward."""
    sim = _bilinear_world()
    logs = sim.logged
    if signal == "none":  # rewards that nothing predicts: no interaction column
        rng = np.random.default_rng(1)
        logs = logs.with_rewards(rng.random(len(logs)).round())
    elif signal != "bilinear":
        strength = 1.0 if signal == "item_effect" else 0.15
        logs = logs.with_rewards(_item_effect_rewards(logs, strength))
    learner, pairs, start, factor = _started(logs)
    report = learner.reward_start_
    assert report["family"] == FAMILIES[signal]
    assert (learner.pair_interaction_ is None) == (FAMILIES[signal] == "trees")
    assert (report["trees"] == 0) == (signal == "bilinear")
    if signal != "none":  # the column beat the mean reward: all three families were fitted
        ranks = report["held_out_rank_agreement"]
        assert max(ranks, key=ranks.get) == FAMILIES[signal]
    designed = pairs
    if learner.pair_interaction_ is not None:  # the training pairs carry the cross-fitted s
        values = learner.pair_interaction_values_
        assert values.shape == (pairs.n_pairs,)
        designed = pairs.with_interaction(learner.pair_interaction_, values)
    ensemble = learner.ensemble()
    assert ensemble.n_rounds == 0
    scores = pairs.view.scatter(ensemble.score_pairs(designed), 0.0)
    np.testing.assert_allclose(scores, start, rtol=1e-9, atol=1e-9)
    assert learner.reward_start_["scale"] == pytest.approx(factor)


def test_dr_on_pairs_reuses_the_starts_cross_fitted_model(monkeypatch):
    """estimator="dr" on a catalogue takes q from the start's cross-fitted model: its own
    reward model is never fitted, and Gamma is the DR formula on that q."""
    sim = _bilinear_world()

    def refuse(*args, **kwargs):
        raise AssertionError("DR fitted a reward model of its own")

    monkeypatch.setattr(DoublyRobust, "pair_reward_predictions", refuse)
    seen = {}
    original = DoublyRobust.pair_coefficients

    def record(self, data, pairs, **options):
        seen["q"] = options.get("reward_predictions")
        seen["gamma"] = original(self, data, pairs, **options)
        seen["slots"] = pairs.view.slot_of(data.actions)
        seen["data"] = data
        return seen["gamma"]

    monkeypatch.setattr(DoublyRobust, "pair_coefficients", record)
    booster = Booster(n_rounds=3, estimator="dr", base_learner_params=FAST, random_state=0)
    booster.fit(sim.logged)
    assert seen["q"] is not None
    expected = dr_coefficients(seen["data"], seen["q"], actions=seen["slots"])
    np.testing.assert_array_equal(seen["gamma"], expected)
    assert booster.reward_start_["cross_fitted"] is True


def test_without_a_start_dr_fits_its_own_pair_model(monkeypatch):
    """With warm_start="none" there is no start to reuse: DR fits its model as before."""
    sim = _bilinear_world()
    calls = []
    original = DoublyRobust.pair_reward_predictions

    def count(self, data, pairs):
        calls.append(1)
        return original(self, data, pairs)

    monkeypatch.setattr(DoublyRobust, "pair_reward_predictions", count)
    Booster(n_rounds=2, estimator="dr", warm_start="none", base_learner_params=FAST,
            random_state=0).fit(sim.logged)  # fmt: skip
    assert calls == [1]


def test_a_policy_on_item_features_scores_unseen_items_and_saves(tmp_path):
    """The default policy serves a catalogue of items never logged, only among each row's
    candidates, well above the logger; saved and loaded, it serves the same items."""
    sim = _bilinear_world(n=2000)
    booster = Booster(n_rounds=5, base_learner_params=FAST, random_state=0).fit(sim.logged)
    assert booster.reward_start_["family"] == "bilinear"
    test = sim.test_rows(800, new_items=True)
    kw = {"action_features": test.item_features, "candidates": test.logged.candidates}
    actions = booster.predict(test.logged.contexts, **kw)
    assert set(actions) <= set(test.new_items)
    assert test.logged.candidates[np.arange(len(actions)), actions].all()
    assert test.policy_value(actions) > test.logging_value + 0.1
    booster.save(tmp_path / "policy")
    loaded = load_policy(tmp_path / "policy")
    np.testing.assert_array_equal(loaded.predict(test.logged.contexts, **kw), actions)


def test_the_served_interaction_is_the_bilinear_formula():
    """s(x, a) = [x_c; 1]^T W [phi~(a); 1] with one-hot codes of categorical item columns (an
    unseen code -1 is all zeros), and the record survives JSON."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(3, 1 + 3 + 1))  # [x0, x2, 1] x [phi1, onehot(phi0), 1]
    interaction = PairInteraction((0, 2), (1,), ((0, 3),), W)
    phi = np.array([[2.0, 0.5], [0.0, -1.0], [-1.0, 2.0]])  # column 0: codes (-1 unseen)
    X = rng.normal(size=(4, 3))
    rows, items = np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4)
    got = interaction.scores(X, phi, rows, items)
    for p, (i, a) in enumerate(zip(rows, items, strict=True)):
        x = np.array([X[i, 0], X[i, 2], 1.0])
        onehot = np.zeros(3)
        if phi[a, 0] >= 0:
            onehot[int(phi[a, 0])] = 1.0
        t = np.concatenate([[phi[a, 1]], onehot, [1.0]])
        assert got[p] == pytest.approx(x @ W @ t)
    again = PairInteraction.from_json(interaction.to_json())
    np.testing.assert_array_equal(again.scores(X, phi, rows, items), got)
    schema = ActionSchema("features", 2, 3, interaction=interaction)
    assert ActionSchema.from_json(schema.to_json()).interaction is not None


@pytest.mark.parametrize(
    "record",
    [
        {"context_columns": [0], "item_columns": [], "item_categories": [], "weights": [[1.0]]},
        {"context_columns": [-1], "item_columns": [0], "item_categories": [], "weights": []},
        {
            "context_columns": [0],
            "item_columns": [0],
            "item_categories": [],
            "weights": [[1.0, float("nan")], [0.0, 0.0]],
        },
        "not a record",
    ],
)
def test_a_malformed_interaction_record_is_refused(record):
    with pytest.raises(ValueError, match="malformed 'interaction' record"):
        PairInteraction.from_json(record)


def test_the_temperature_ignores_padded_slots():
    """reward_temperature on slot scores with NaN padding equals the temperature found on the
    rows' own candidates (brute force over the same bisection target)."""
    rng = np.random.default_rng(0)
    q = rng.normal(size=(50, 6))
    counts = rng.integers(2, 7, size=50)
    padded = np.where(np.arange(6)[None, :] < counts[:, None], q, np.nan)
    tau = reward_temperature(padded, 0.6)
    top = np.mean([1.0 / np.exp((row[:c] - row[:c].max()) / tau).sum()
                   for row, c in zip(q, counts, strict=True)])  # fmt: skip
    assert top == pytest.approx(0.6, abs=1e-9)


@pytest.mark.parametrize("name", ["bopl", "bopl_s", "poem", "snips"])
def test_rows_of_zero_coefficients_are_inert_exactly_where_the_objective_says(name):
    """``Objective.inert_zero_rows``: BOPL, BOPL-S and POEM give the rows whose coefficient
    is 0 zero weight (hence zero gradient) whatever F; SNIPS, whose normaliser weighs every
    row, does not claim it (and does weigh them)."""
    from opboost.core.registry import make

    rng = np.random.default_rng(0)
    sim = _bilinear_world(n=300)
    logs = SlotView.from_candidates(
        sim.logged.candidates, len(sim.logged), sim.logged.n_actions
    ).slot_logs(sim.logged)
    objective = make("objective", name)
    coef = logs.rewards / logs.propensities
    zero = coef == 0
    assert zero.any() and not zero.all()
    scores = rng.normal(scale=3.0, size=(len(logs), logs.n_actions))
    state = objective.round_state(scores, logs, coef)
    problem = objective.problem_at(state, "regression")
    inert = bool(np.all(problem.weights[zero] == 0))
    assert objective.inert_zero_rows == inert


def test_the_rounds_learn_on_the_rows_that_carry_a_gradient_only(monkeypatch):
    """Under IPS with 0/1 rewards (BOPL, BOPL-S, POEM) only the clicked rows' candidate pairs
    are the learner's rows, and the rounds still lower the training risk."""
    from opboost.core.fit.slot_fit import SlotFit

    logs = _bilinear_world().logged
    seen = {}
    original = SlotFit.begin

    def record(self):
        original(self)
        seen["active"] = self.active
        seen["rows"] = self.learner.booster_.train_set.num_data()

    monkeypatch.setattr(SlotFit, "begin", record)
    booster = Booster(n_rounds=5, base_learner_params=FAST, random_state=0).fit(logs)
    clicked = logs.rewards != 0
    np.testing.assert_array_equal(seen["active"], clicked)
    assert seen["rows"] == np.diff(logs.candidates.indptr)[clicked].sum()
    objective = booster.history_["train_objective"]
    assert objective[-1] < objective[0]


def test_rank_agreement_ignores_a_link_and_is_0_for_a_constant():
    """The choice of the trees on the column reads only the order of the predictions: a
    monotone link (exp, a logistic curve) leaves it unchanged, the reversed order negates it,
    and a constant prediction (or reward) agrees with nothing."""
    from opboost.algorithms.learners.lightgbm_pair_start import rank_agreement

    rng = np.random.default_rng(0)
    p = rng.normal(size=500)
    r = (rng.random(500) < 1.0 / (1.0 + np.exp(-2.0 * p))).astype(float)
    base = rank_agreement(p, r)
    assert 0.2 < base < 1.0
    assert rank_agreement(np.exp(p), r) == pytest.approx(base, abs=1e-12)
    assert rank_agreement(1.0 / (1.0 + np.exp(-3.0 * p)), r) == pytest.approx(base, abs=1e-12)
    assert rank_agreement(-p, r) == pytest.approx(-base, abs=1e-12)
    assert rank_agreement(p, p) == pytest.approx(1.0)
    assert rank_agreement(np.zeros(500), r) == 0.0 and rank_agreement(p, np.ones(500)) == 0.0


def test_item_features_too_large_for_the_bilinear_ridge_are_named_not_a_linalg_error():
    """Issue 52 item 5: item features of 1e200 made numpy's eigh fail ("Eigenvalues did not
    converge") in the bilinear start; the start now skips the bilinear column, saying which
    item column is how large and to rescale it, and the trees fit (finite scores). Item
    features of 1e8 still get the bilinear column."""
    rng = np.random.default_rng(0)
    n, k = 600, 20
    X, phi = rng.normal(size=(n, 3)), rng.normal(size=(k, 2))
    actions = rng.integers(0, k, n)
    rewards = (X[:, :2] * phi[actions]).sum(axis=1) + 0.1 * rng.normal(size=n)
    big = phi.copy()
    big[:, 1] *= 1e200
    logs = LoggedBandit(X, actions, np.full(n, 1 / k), rewards, k, action_features=big)
    with pytest.warns(
        OpboostWarning, match=r"reward-model start: item feature column 1 .* rescale"
    ):
        booster = Booster(n_rounds=2, random_state=0, base_learner_params=FAST).fit(logs)
    size = np.abs(big[:, 1]).max()
    assert booster.reward_start_["bilinear_skipped"] == (
        f"item feature column 1 reaches |phi| = {size:.3g} (contexts |x| = "
        f"{np.abs(X).max():.3g}): products of the terms above 1e+10 leave the bilinear ridge no "
        f"float64 precision (from about 1e154 its sums of squares overflow); rescale the item "
        f"features (e.g. divide column 1 by {size:.3g}) to let the start use them"
    )
    assert np.isfinite(booster.decision_function(X[:5], action_features=big)).all()
    # item features of 1e8 (products below 1e10) still get the bilinear column
    fine = phi.copy()
    fine[:, 1] *= 1e8
    logs = LoggedBandit(X, actions, np.full(n, 1 / k), rewards, k, action_features=fine)
    booster = Booster(n_rounds=1, random_state=0, base_learner_params=FAST).fit(logs)
    assert booster.reward_start_["bilinear_skipped"] is None
