"""Slate worlds (opboost.simulation.slate_world), the Plackett–Luce position probabilities
(opboost.api.numerics.plackett_luce) and the Open Bandit reader as slates, on a tiny CSV
tree in obp's layout (no test reads the real data)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from opboost.algorithms.estimators.slate import SlateIndependentIPS, SlateRewardInteractionIPS
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.plackett_luce import (
    conditional_distributions,
    marginal_distributions,
    prefix_probabilities,
    sample_plackett_luce,
)
from opboost.api.slates import SlatePolicy
from opboost.simulation.datasets.open_bandit_slates import open_bandit_slates
from opboost.simulation.slate_world import make_slate_world


def _pl_ranking_probability(w, ranking):
    """Plackett–Luce probability of the ordered ``ranking`` from weights ``w``, by hand."""
    prob, left = 1.0, float(sum(w))
    for a in ranking:
        prob *= w[a] / left
        left -= w[a]
    return prob


def test_plackett_luce_probabilities_equal_the_formula():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(3, 5))
    scores[2, 1] = -np.inf  # an item row 2 cannot show
    temperature, length = 0.7, 3
    marg = marginal_distributions(scores, length, temperature)
    rankings = np.array([[0, 1, 2], [4, 3, 0], [3, 0, 4]])
    prefix = prefix_probabilities(scores, rankings, temperature)
    cond = conditional_distributions(scores, rankings, temperature)
    for i in range(3):
        w = np.exp(scores[i] / temperature)
        hand = np.zeros((length, 5))
        for ranking in itertools.permutations(range(5), length):
            p = _pl_ranking_probability(w, ranking)
            for k, a in enumerate(ranking):
                hand[k, a] += p
        np.testing.assert_allclose(marg[i], hand, rtol=0, atol=1e-12)
        for k in range(length):
            expected = _pl_ranking_probability(w, rankings[i, : k + 1])
            assert prefix[i, k] == pytest.approx(expected, abs=1e-12)
            rest = w.copy()
            rest[rankings[i, :k]] = 0.0
            np.testing.assert_allclose(cond[i, k], rest / rest.sum(), rtol=0, atol=1e-12)
    assert marg[2, :, 1].max() == 0.0


def test_plackett_luce_probabilities_hold_with_a_dominant_item():
    """A low temperature makes one weight dominate (1 against e^-100): once it is placed,
    the next position's probabilities come from the small weights left, not from a total
    less the placed weight, which cancels to 0 (inf prefixes, zero marginals before)."""
    scores = np.array([[0.0, -20.0, -20.5, -np.inf]])
    temperature = 0.2
    prefix = prefix_probabilities(scores, np.array([[0, 1, 2]]), temperature)
    w = np.exp(scores[0] / temperature)
    second = w[1] / (w[1] + w[2])  # the 1 of the top item placed; e^-100 vanishes beside it
    np.testing.assert_allclose(prefix[0], [1.0, second, second], rtol=1e-12)
    marg = marginal_distributions(scores, 3, temperature)[0]
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(marg[1, :3], [0.0, second, 1 - second], atol=1e-12)
    world = make_slate_world(click_model="cascade", logging_temperature=0.2, seed=100)
    logs = world.simulate(300, seed=1100)  # raised on an inf cascade propensity before
    assert np.isfinite(logs.cascade_propensities).all()


def test_sampled_rankings_follow_the_marginals():
    scores = np.tile(np.array([[1.0, 0.0, -0.5, 0.5]]), (40_000, 1))
    draws = sample_plackett_luce(scores, 3, np.random.default_rng(1), temperature=1.0)
    marg = marginal_distributions(scores[:1], 3)[0]
    for k in range(3):
        freq = np.bincount(draws[:, k], minlength=4) / len(draws)
        np.testing.assert_allclose(freq, marg[k], atol=0.01)


def test_simulation_is_deterministic_from_the_seed():
    a = make_slate_world(seed=4).simulate(300, seed=7)
    b = make_slate_world(seed=4).simulate(300, seed=7)
    c = make_slate_world(seed=4).simulate(300, seed=8)
    for field in ("contexts", "slates", "rewards", "marginal_propensities", "candidates"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.slates, c.slates)
    assert not np.array_equal(
        make_slate_world(seed=4).item_features, make_slate_world(seed=5).item_features
    )


def test_logged_propensities_are_the_loggers_plackett_luce_probabilities():
    world = make_slate_world(n_items=7, n_candidates=5, logging_temperature=0.5, seed=2)
    logs = world.simulate(6, seed=3)
    logits = world.logits(logs.contexts)
    for i in range(len(logs)):
        w = np.where(logs.candidates[i], np.exp(logits[i] / 0.5), 0.0)
        for k in range(logs.slate_size):
            marginal = sum(
                _pl_ranking_probability(w, r)
                for r in itertools.permutations(np.flatnonzero(w), k + 1)
                if r[k] == logs.slates[i, k]
            )
            assert logs.marginal_propensities[i, k] == pytest.approx(marginal, abs=1e-12)
            cascade = _pl_ranking_probability(w, logs.slates[i, : k + 1])
            assert logs.cascade_propensities[i, k] == pytest.approx(cascade, abs=1e-12)
    # the policy builder gives the same numbers from the logger's scores
    logger = SlatePolicy.plackett_luce(logs, world.logging_scores(logs), 0.5)
    np.testing.assert_allclose(logger.marginal, logs.marginal_propensities, atol=1e-12)
    np.testing.assert_allclose(logger.cascade, logs.cascade_propensities, atol=1e-12)


@pytest.mark.parametrize("click_model", ["cascade", "pbm"])
def test_true_value_is_the_mean_of_simulated_clicks(click_model):
    world = make_slate_world(click_model=click_model, eta=0.5, intercept=0.0, seed=1)
    contexts, candidates = world.sample_contexts(50, np.random.default_rng(0))
    ranking = candidates[:, : world.slate_size]
    truth = world.click_probabilities(contexts, ranking)  # (n, L)
    repeats = 4000
    clicks = world.draw_clicks(
        np.repeat(contexts, repeats, axis=0), np.repeat(ranking, repeats, axis=0), seed=2
    )
    mean = clicks.reshape(50, repeats, -1).mean(axis=1)
    assert np.abs(mean - truth).max() < 0.035  # 4.5 binomial SEs at p = 0.5
    assert abs(mean.sum(axis=1).mean() - truth.sum(axis=1).mean()) < 0.01
    if click_model == "cascade":
        assert clicks.sum(axis=1).max() == 1  # the scan stops after a click
    # the logger's exact value and its logs' mean clicks
    logs = world.simulate(20_000, seed=5)
    exact = world.plackett_luce_value(
        logs.contexts, world.logging_scores(logs), world.logging_temperature
    )
    se = logs.rewards.sum(axis=1).std() / np.sqrt(len(logs))
    assert abs(logs.rewards.sum(axis=1).mean() - exact.mean()) < 4 * se


def test_cascade_and_position_based_models_differ_below_the_top():
    cascade = make_slate_world(click_model="cascade", seed=6)
    pbm = make_slate_world(click_model="pbm", seed=6)
    contexts, candidates = cascade.sample_contexts(100, np.random.default_rng(0))
    ranking = candidates[:, :3]
    c = cascade.click_probabilities(contexts, ranking)
    p = pbm.click_probabilities(contexts, ranking)
    np.testing.assert_allclose(c[:, 0], p[:, 0], rtol=0, atol=1e-15)  # the top: the same
    assert np.all(c[:, 1:] < p[:, 1:])  # below it a cascade loses the clicks above
    # examination 1/(k+1)^eta: no position bias at eta = 0
    flat = make_slate_world(click_model="pbm", eta=0.0, seed=6)
    theta = np.take_along_axis(flat.attractiveness(contexts), ranking, axis=1)
    np.testing.assert_allclose(flat.click_probabilities(contexts, ranking), theta, atol=1e-15)
    np.testing.assert_allclose(pbm.examination, [1.0, 1 / 2, 1 / 3])


def test_world_errors_name_the_value():
    with pytest.raises(InvalidParameterError, match=r"click_model='dbn' is not one of"):
        make_slate_world(click_model="dbn")
    with pytest.raises(InvalidParameterError, match="need slate_size <= n_candidates <= n_items"):
        make_slate_world(slate_size=5, n_candidates=4)
    world = make_slate_world(seed=0)
    with pytest.raises(InvalidParameterError, match=r"must be an \(n, L\) = \(2, 3\) integer"):
        world.expected_clicks(np.zeros((2, 5)), np.zeros((2, 2), dtype=int))


# --- the Open Bandit Dataset as slates ------------------------------------------------------

ITEMS = pd.DataFrame({"item_id": [0, 1, 2, 3], "item_feature_0": [0.1, 0.2, 0.3, 0.4],
                      "item_feature_1": ["a", "b", "a", "b"]})  # fmt: skip
# impressions: A at t1 with all 3 positions (rows out of order), B at t2 with position 2
# only, C at t1 too but another user, and a repeated position 1 at t3 (two impressions)
LOG = pd.DataFrame(
    {
        "timestamp": ["t1", "t2", "t1", "t1", "t1", "t3", "t3"],
        "item_id": [2, 0, 1, 3, 0, 1, 2],
        "position": [3, 2, 1, 2, 1, 1, 1],
        "click": [1, 0, 0, 1, 1, 0, 1],
        "propensity_score": [0.5, 0.25, 0.125, 0.75, 0.3, 0.2, 0.1],
        "user_feature_0": ["u", "u", "u", "u", "v", "u", "u"],
        "user_feature_1": ["x", "x", "x", "x", "x", "x", "x"],
    }
)


def test_open_bandit_read_as_slates(tmp_path, monkeypatch):
    folder = tmp_path / "open_bandit" / "random" / "all"
    folder.mkdir(parents=True)
    LOG.to_csv(folder / "all.csv")
    ITEMS.to_csv(folder / "item_context.csv")
    monkeypatch.setenv("OPBOOST_DATA", str(tmp_path))
    logs = open_bandit_slates("random")
    # first rows in time order: A (row 0), C (row 4), B (row 1), t3's two impressions
    np.testing.assert_array_equal(
        logs.slates, [[1, 3, 2], [0, -1, -1], [-1, 0, -1], [1, -1, -1], [2, -1, -1]]
    )
    np.testing.assert_array_equal(
        logs.rewards, [[0, 1, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]]
    )
    np.testing.assert_allclose(
        logs.marginal_propensities,
        [[0.125, 0.75, 0.5], [0.3, 1, 1], [1, 0.25, 1], [0.2, 1, 1], [0.1, 1, 1]],
    )
    assert logs.n_items == 4 and logs.item_features.shape == (4, 3)
    assert logs.contexts.shape[0] == 5 and logs.cascade_propensities is None
    np.testing.assert_array_equal(logs.contexts[:, 0], [0, 1, 0, 0, 0])  # user v is C
    # the logger evaluated on its own log: IIPS sums each impression's clicks
    logger = SlatePolicy(logs.marginal_propensities, logs.marginal_propensities)
    np.testing.assert_allclose(SlateIndependentIPS().round_values(logs, logger), [2, 1, 0, 0, 1])
    with pytest.raises(InvalidParameterError, match="the logs have no cascade_propensities"):
        SlateRewardInteractionIPS().round_values(logs, logger)
    assert open_bandit_slates("random", data_dir=tmp_path).slates.shape == (5, 3)


def test_per_position_rows_are_obps_convention():
    logs = make_slate_world(n_items=6, n_candidates=4, seed=0).simulate(5, seed=1)
    rows, impression = logs.per_position_rows()
    assert len(rows) == 15 and rows.n_positions == 3
    np.testing.assert_array_equal(impression, np.repeat(np.arange(5), 3))
    np.testing.assert_array_equal(rows.positions, np.tile(np.arange(3), 5))
    np.testing.assert_array_equal(rows.actions, logs.slates.ravel())
    np.testing.assert_array_equal(rows.rewards, logs.rewards.ravel())
    np.testing.assert_array_equal(rows.propensities, logs.marginal_propensities.ravel())
    np.testing.assert_array_equal(np.asarray(rows.contexts), np.repeat(logs.contexts, 3, axis=0))
    # the per-position IPS of the package, summed per impression, is IIPS
    from opboost.algorithms.estimators.ips import IPS

    target = np.where(logs.candidates, 0.0, -np.inf)  # uniform over each row's candidates
    policy = SlatePolicy.plackett_luce(logs, target, 1.0)
    dist = policy.marginal_dist[impression].transpose(0, 2, 1)  # obp's (m, K, L)
    per_row = IPS().round_values(rows, dist)
    iips = SlateIndependentIPS().round_values(logs, policy)
    np.testing.assert_allclose(np.bincount(impression, per_row), iips, rtol=0, atol=1e-12)


def test_a_bad_ranking_is_refused_naming_its_owner_shape_and_ids():
    """One check serves the world's truth and the deterministic slate policy."""
    import re

    from opboost.api.exceptions import InvalidParameterError
    from opboost.api.slates import check_ranking

    message = (
        "SlateWorld: a ranking must be an (n, L) = (2, 3) integer array of item ids; got "
        "shape (2, 2) and dtype int64."
    )
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        check_ranking(np.zeros((2, 2), dtype=np.int64), (2, 3), 5, "SlateWorld")
    with pytest.raises(
        InvalidParameterError,
        match=re.escape("SlatePolicy: a ranking's item ids must lie in [0, n_items=5); got 0..5."),
    ):
        check_ranking(np.array([[0, 5, 1]]), (1, 3), 5, "SlatePolicy")
    assert check_ranking([[4, 0, 1]], (1, 3), 5, "SlatePolicy").tolist() == [[4, 0, 1]]
