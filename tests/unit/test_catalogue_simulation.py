"""opboost.simulation.items (issue 19, item 6): a catalogue with item features, candidate sets,
a softmax logger restricted to them and Bernoulli rewards with known means; held-out rows on
new items."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from opboost.algorithms.estimators.ips import IPS
from opboost.api.data.candidates import is_candidate
from opboost.api.exceptions import InvalidParameterError
from opboost.simulation import SimulatedCatalogue, simulate_catalogue
from opboost.simulation.catalogue_world import categorical_codes
from opboost.simulation.items import distinct_draws

N, ITEMS, C, DX, DI = 400, 30, 5, 3, 4


def _sim(seed=0, **params) -> SimulatedCatalogue:
    return simulate_catalogue(N, ITEMS, C, DX, DI, random_state=seed, **params)


def _all_scores(sim: SimulatedCatalogue) -> np.ndarray:
    """s(x_i, a) for every row and every item, by hand: x^T W phi(a) + b^T phi(a)."""
    w = sim.world
    x, phi = sim.logged.contexts, sim.item_features
    return x @ w.reward_weights @ phi.T + phi @ w.reward_bias


def _restricted_softmax(sim: SimulatedCatalogue) -> np.ndarray:
    """(n, K) softmax(beta s) over each row's candidates, 0 elsewhere."""
    mask = sim.logged.candidates.toarray()
    logits = np.where(mask, sim.world.logging_beta * _all_scores(sim), -np.inf)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_shapes_and_fields():
    sim = _sim()
    data = sim.logged
    assert data.contexts.shape == (N, DX) and data.n_actions == ITEMS
    assert data.action_features.shape == (ITEMS, DI)
    assert sp.issparse(data.candidates) and data.candidates.shape == (N, ITEMS)
    np.testing.assert_array_equal(data.n_candidates, np.full(N, C))
    assert data.logging_probs is None
    for field in (sim.candidate_items, sim.candidate_probs, sim.candidate_means):
        assert field.shape == (N, C)
    assert sim.new_items.size == 0
    assert set(np.unique(data.rewards)) <= {0.0, 1.0}


def test_reproducible_with_a_seed():
    a, b, other = _sim(7), _sim(7), _sim(8)
    for field in ("contexts", "actions", "propensities", "rewards", "action_features"):
        np.testing.assert_array_equal(getattr(a.logged, field), getattr(b.logged, field))
    assert (a.logged.candidates != b.logged.candidates).nnz == 0
    np.testing.assert_array_equal(a.world.reward_weights, b.world.reward_weights)
    assert not np.array_equal(a.logged.contexts, other.logged.contexts)
    # held-out rows: the same without a seed (derived from the simulation's), or with one
    t1, t2 = a.test_rows(50), a.test_rows(50)
    np.testing.assert_array_equal(t1.logged.contexts, t2.logged.contexts)
    np.testing.assert_array_equal(t1.item_features, t2.item_features)
    np.testing.assert_array_equal(
        a.test_rows(50, random_state=3).candidate_items,
        b.test_rows(50, random_state=3).candidate_items,
    )
    assert not np.array_equal(t1.logged.contexts, a.test_rows(50, random_state=3).logged.contexts)


def test_candidates_are_distinct_sorted_and_hold_the_logged_action():
    sim = _sim()
    items = sim.candidate_items
    assert (np.diff(items, axis=1) > 0).all()  # distinct, ascending
    np.testing.assert_array_equal(sim.logged.candidates.toarray().nonzero()[1], items.ravel())
    rows = np.arange(N)
    assert is_candidate(sim.logged.candidates, rows, sim.logged.actions).all()
    assert (items == sim.logged.actions[:, None]).sum(axis=1).tolist() == [1] * N


@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0, -2.0])
def test_propensities_are_the_softmax_restricted_to_the_candidates(beta):
    sim = _sim(logging_beta=beta)
    expected = _restricted_softmax(sim)
    rows = np.arange(N)
    np.testing.assert_allclose(sim.logged.propensities, expected[rows, sim.logged.actions])
    np.testing.assert_allclose(
        sim.candidate_probs, np.take_along_axis(expected, sim.candidate_items, axis=1)
    )
    if beta == 0.0:
        np.testing.assert_allclose(sim.logged.propensities, 1 / C)


def test_mean_rewards_are_the_known_function():
    sim = _sim(reward_intercept=-1.0, reward_scale=2.0)
    full = expit(-1.0 + _all_scores(sim))
    np.testing.assert_allclose(sim.mean_reward(sim.logged.contexts, sim.item_features), full)
    np.testing.assert_allclose(
        sim.candidate_means, np.take_along_axis(full, sim.candidate_items, axis=1)
    )
    per_row = sim.mean_reward(sim.logged.contexts, sim.item_features[sim.candidate_items])
    np.testing.assert_allclose(per_row, sim.candidate_means)
    flat = _sim(reward_scale=0.0, reward_intercept=0.5)
    np.testing.assert_allclose(flat.candidate_means, expit(0.5))


def test_actions_and_rewards_follow_the_logger_and_the_means():
    """Over 20,000 rows: each candidate slot is logged as often as its probabilities say, and
    rewards average the logged actions' means (within 4 standard errors)."""
    n = 20_000
    sim = simulate_catalogue(n, 12, 4, 2, 3, random_state=1, logging_beta=2.0)
    slot = (sim.candidate_items == sim.logged.actions[:, None]).argmax(axis=1)
    counts = np.bincount(slot, minlength=4)
    expected = sim.candidate_probs.sum(axis=0)
    sd = np.sqrt((sim.candidate_probs * (1 - sim.candidate_probs)).sum(axis=0))
    assert (np.abs(counts - expected) < 4 * sd).all()
    means = sim.candidate_means[np.arange(n), slot]
    se = np.sqrt((means * (1 - means)).sum()) / n
    assert abs(sim.logged.rewards.mean() - means.mean()) < 4 * se


def test_policy_values_and_ips():
    sim = simulate_catalogue(5000, 40, 6, 3, 3, random_state=2)
    rows = np.arange(5000)
    greedy = sim.candidate_items[rows, sim.candidate_means.argmax(axis=1)]
    value = sim.policy_value(greedy)
    assert value == pytest.approx(sim.candidate_means.max(axis=1).mean(), abs=1e-12)
    one_hot = np.zeros((5000, 40))
    one_hot[rows, greedy] = 1.0
    assert sim.policy_value(one_hot) == pytest.approx(value, abs=1e-12)
    logger = np.zeros((5000, 40))
    np.put_along_axis(logger, sim.candidate_items, sim.candidate_probs, axis=1)
    assert sim.policy_value(logger) == pytest.approx(sim.logging_value, abs=1e-12)
    assert value > sim.logging_value
    interval = IPS().estimate_interval(sim.logged, greedy)
    assert interval.low < value < interval.high
    # the logger's own IPS weights are 1: IPS is the mean reward
    assert IPS().estimate_value(sim.logged, logger) == pytest.approx(sim.logged.rewards.mean())


def test_policy_value_rejects_a_non_candidate():
    sim = _sim()
    actions = np.array(sim.logged.actions)
    outside = np.flatnonzero(~sim.logged.candidates.toarray()[0])[0]
    actions[0] = outside
    with pytest.raises(InvalidParameterError, match=f"action {outside} at row 0 is not one"):
        sim.policy_value(actions)


def test_test_rows_on_new_items_are_disjoint_from_training():
    sim = _sim()
    test = sim.test_rows(300, n_new_items=20, random_state=5)
    assert test.logged.n_actions == ITEMS + 20
    np.testing.assert_array_equal(test.new_items, np.arange(ITEMS, ITEMS + 20))
    np.testing.assert_array_equal(test.item_features[:ITEMS], sim.item_features)
    assert test.candidate_items.min() >= ITEMS
    assert not set(test.candidate_items.ravel()) & set(sim.candidate_items.ravel())
    assert not set(test.logged.actions) & set(sim.logged.actions)
    assert test.candidate_items.shape == (300, C)
    # the same world: reward parameters and the logger's softmax on the new features
    assert test.world is sim.world
    expected = _restricted_softmax(test)
    np.testing.assert_allclose(
        test.logged.propensities, expected[np.arange(300), test.logged.actions]
    )
    np.testing.assert_allclose(
        test.candidate_means,
        expit(np.take_along_axis(_all_scores(test), test.candidate_items, axis=1)),
    )


def test_test_rows_on_training_items():
    sim = _sim()
    test = sim.test_rows(100, new_items=False, n_candidates=3)
    assert test.logged.n_actions == ITEMS and test.new_items.size == 0
    assert test.candidate_items.max() < ITEMS and test.candidate_items.shape == (100, 3)
    np.testing.assert_array_equal(test.item_features, sim.item_features)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: simulate_catalogue(5, 10, 11, 2, 2, random_state=0),
            "The 'n_candidates' parameter of simulate_catalogue must be an int >= 1 and <= 10. "
            "Got 11 instead.",
            id="too-many-candidates",
        ),
        pytest.param(
            lambda: simulate_catalogue(5, 10, 3, 2, 2, random_state=0, logging_beta=np.inf),
            "The 'logging_beta' parameter of simulate_catalogue must be finite. Got inf instead.",
            id="infinite-beta",
        ),
        pytest.param(
            lambda: _sim().test_rows(10, n_new_items=2),
            "The 'n_candidates' parameter of SimulatedCatalogue.test_rows must be an int >= 1 "
            "and <= 2. Got 5 instead.",
            id="too-few-new-items",
        ),
    ],
)
def test_bad_parameters(call, message):
    with pytest.raises(InvalidParameterError) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize(("n", "pool", "c"), [(2000, 8, 3), (3000, 5000, 4)])
def test_distinct_draws_are_uniform_subsets(n, pool, c):
    """Both paths (sorted random keys for small pools, Floyd's algorithm for large ones)."""
    picks = distinct_draws(np.random.default_rng(0), n, pool, c)
    assert picks.shape == (n, c) and picks.min() >= 0 and picks.max() < pool
    assert (np.diff(picks, axis=1) > 0).all()
    if pool < 100:
        counts = np.bincount(picks.ravel(), minlength=pool)
        expected = n * c / pool
        assert (np.abs(counts - expected) < 5 * np.sqrt(expected)).all()
    else:  # the pool's halves are hit about equally often
        low = (picks < pool // 2).sum()
        assert abs(low - n * c / 2) < 5 * np.sqrt(n * c / 4)


def test_a_hundred_thousand_rows_are_fast():
    start = time.perf_counter()
    sim = simulate_catalogue(100_000, 2000, 10, 8, 8, random_state=0)
    elapsed = time.perf_counter() - start
    assert len(sim.logged) == 100_000
    assert elapsed < 20, f"{elapsed:.1f} s: a per-row loop?"


# --- options for other shapes of log (issue 34) -----------------------------------------------


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


def _fields(sim: SimulatedCatalogue) -> tuple:
    d = sim.logged
    return (
        d.contexts, d.actions, d.propensities, d.rewards, d.action_features,
        d.candidates.toarray(), sim.candidate_items, sim.candidate_probs, sim.candidate_means,
    )  # fmt: skip


def test_the_default_world_is_unchanged_by_the_options():
    """Digests of the outputs of main 2a064fa (before the options): logs, held-out rows on new
    and on training items, and a large pool (Floyd's draws)."""
    sim = simulate_catalogue(
        300, 40, 6, 3, 4, random_state=11, logging_beta=1.5, reward_scale=2.0,
        reward_intercept=-1.0,
    )  # fmt: skip
    assert _digest(*_fields(sim)) == (
        "4ef75ed4d3fcb156e4ab3681e7babc62658fc6d8ab91ff5a0ce96c0180c093b8"
    )
    assert _digest(*_fields(sim.test_rows(100))) == (
        "b881bea1c0f0d9054e59f0339355d0f3b5bb5e71278a32644b6afa535f72ad62"
    )
    seen = sim.test_rows(100, new_items=False, random_state=2)
    assert _digest(*_fields(seen)) == (
        "6c0cc91d2128ecf6add2408008082b5249c4df434ba4751c8ad8d03e2099507c"
    )
    big = simulate_catalogue(3000, 6000, 5, 2, 2, random_state=3)
    assert _digest(*_fields(big)[:4], big.candidate_items) == (
        "c17038de1a9b2e269d797f03c608b0902c8a547d343701f1e15327cdc4315907"
    )
    assert sim.logged.positions is None and sim.logged.item_schema is None


def test_popularity_scale_sets_the_context_free_term():
    same = _sim(3, reward_scale=1.5, popularity_scale=1.5)
    np.testing.assert_array_equal(same.candidate_means, _sim(3, reward_scale=1.5).candidate_means)
    sim = _sim(3, reward_scale=0.0, popularity_scale=2.0)  # popularity only: no context term
    w = sim.world
    assert not w.reward_weights.any()
    phi = sim.item_features[sim.candidate_items]
    np.testing.assert_allclose(sim.candidate_means, expit(phi @ w.reward_bias))
    # b's entries have standard deviation popularity_scale / sqrt(d_item)
    wide = simulate_catalogue(50, 10, 2, 2, 4000, random_state=0, popularity_scale=3.0)
    assert wide.world.reward_bias.std() == pytest.approx(3.0 / np.sqrt(4000), rel=0.05)


def _categorical_sim(seed=0, **params) -> SimulatedCatalogue:
    return _sim(seed, item_categories=(6, 3), **params)


def test_categorical_item_columns_follow_their_model():
    sim = _categorical_sim(reward_intercept=-0.5)
    w, phi = sim.world, sim.item_features
    assert phi.shape == (ITEMS, DI + 2) and w.n_numeric == DI
    codes = phi[:, DI:].astype(int)
    np.testing.assert_array_equal(phi[:, DI:], codes)
    assert codes[:, 0].max() < 6 and codes[:, 1].max() < 3 and codes.min() >= 0
    schema = sim.logged.item_schema
    assert schema.categorical_features == (DI, DI + 1)
    assert schema.categories == {"category0": tuple(range(6)), "category1": tuple(range(3))}
    x = sim.logged.contexts
    by_hand = x @ w.reward_weights @ phi[:, :DI].T + phi[:, :DI] @ w.reward_bias
    for j, (u, v) in enumerate(zip(w.category_weights, w.category_bias, strict=True)):
        assert u.shape == (len(v), DX)
        by_hand += (x @ u.T)[:, codes[:, j]] + v[codes[:, j]]
    full = expit(-0.5 + by_hand)
    np.testing.assert_allclose(sim.mean_reward(x, phi), full)
    np.testing.assert_allclose(
        sim.candidate_means, np.take_along_axis(full, sim.candidate_items, axis=1)
    )
    # new items: codes from the same categories, the schema kept
    test = sim.test_rows(200, n_new_items=25, random_state=4)
    new_codes = test.item_features[ITEMS:, DI:]
    assert new_codes.shape == (25, 2) and new_codes[:, 0].max() < 6 and new_codes.min() >= 0
    assert test.logged.item_schema == schema


def test_category_codes_have_a_long_tail():
    """Code k is drawn with probability proportional to 1 / (k + 1)."""
    codes = categorical_codes(np.random.default_rng(0), 60_000, (5,))[:, 0]
    expected = 1 / np.arange(1, 6)
    expected /= expected.sum()
    counts = np.bincount(codes, minlength=5)
    sd = np.sqrt(60_000 * expected * (1 - expected))
    assert (np.abs(counts - 60_000 * expected) < 4 * sd).all()


def test_one_hot_contexts():
    sim = simulate_catalogue(500, 20, 4, 7, 2, random_state=1, context_categories=(3, 4))
    x = sim.logged.contexts
    assert set(np.unique(x)) == {0.0, 1.0}
    np.testing.assert_array_equal(x[:, :3].sum(axis=1), 1.0)
    np.testing.assert_array_equal(x[:, 3:].sum(axis=1), 1.0)
    test = sim.test_rows(100)
    np.testing.assert_array_equal(test.logged.contexts.sum(axis=1), 2.0)


def test_positions_scale_the_means_by_their_examination_probability():
    bias = (1.0, 0.5, 0.25)
    sim = _sim(5, position_bias=bias, reward_intercept=1.0)
    positions = sim.logged.positions
    assert sim.logged.n_positions == 3
    np.testing.assert_array_equal(np.unique(positions), [0, 1, 2])
    clicks = expit(1.0 + np.take_along_axis(_all_scores(sim), sim.candidate_items, axis=1))
    np.testing.assert_allclose(sim.candidate_means, clicks * np.asarray(bias)[positions][:, None])
    rows = np.arange(N)
    greedy = sim.candidate_items[rows, sim.candidate_means.argmax(axis=1)]
    one_hot = np.zeros((N, ITEMS))
    one_hot[rows, greedy] = 1.0
    value = sim.candidate_means.max(axis=1).mean()
    assert sim.policy_value(greedy) == pytest.approx(value, abs=1e-12)
    assert sim.policy_value(one_hot) == pytest.approx(value, abs=1e-12)
    test = sim.test_rows(300, new_items=False, random_state=1)
    assert test.logged.positions.shape == (300,) and test.logged.positions.max() <= 2


def test_positions_lower_the_click_rate_as_said():
    """Over 30,000 rows, positions (1, 0.2) leave about 0.6 of the clicks."""
    base = simulate_catalogue(30_000, 50, 5, 2, 2, random_state=2, reward_intercept=-1.0)
    shown = simulate_catalogue(
        30_000, 50, 5, 2, 2, random_state=2, reward_intercept=-1.0, position_bias=(1.0, 0.2)
    )
    ratio = shown.logged.rewards.mean() / base.logged.rewards.mean()
    assert ratio == pytest.approx(0.6, abs=0.05)


def test_options_are_seeded():
    params = {
        "item_categories": (4, 9), "context_categories": (2, 3), "position_bias": (1.0, 0.7),
        "popularity_scale": 2.0,
    }  # fmt: skip
    a, b = (simulate_catalogue(200, 30, 5, 5, 2, random_state=9, **params) for _ in range(2))
    other = simulate_catalogue(200, 30, 5, 5, 2, random_state=10, **params)
    assert _digest(*_fields(a), a.logged.positions) == _digest(*_fields(b), b.logged.positions)
    assert _digest(*_fields(a)) != _digest(*_fields(other))
    t1, t2 = a.test_rows(50), b.test_rows(50)
    assert _digest(*_fields(t1), t1.logged.positions) == _digest(*_fields(t2), t2.logged.positions)


#: Bad options -> the exact message of simulate_catalogue's InvalidParameterError.
BAD_OPTIONS = {
    "one-category": (
        {"item_categories": (4, 1)},
        "The 'item_categories[1]' parameter of simulate_catalogue must be an int >= 2. "
        "Got 1 instead.",
    ),
    "context-categories-and-d_x": (
        {"context_categories": (2, 2)},
        "The 'context_categories' parameter of simulate_catalogue must sum to d_x=3 (one "
        "one-hot column per category). Got (2, 2), which sums to 4; pass d_x=4.",
    ),
    "position-never-examined": (
        {"position_bias": (1.0, 0.0)},
        "The 'position_bias' parameter of simulate_catalogue must be a non-empty sequence "
        "of examination probabilities in (0, 1], one per position. Got (1.0, 0.0) instead.",
    ),
    "negative-popularity": (
        {"popularity_scale": -1.0},
        "The 'popularity_scale' parameter of simulate_catalogue must be a float >= 0.0. "
        "Got -1.0 instead.",
    ),
}


@pytest.mark.parametrize(("params", "message"), BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_bad_options(params, message):
    with pytest.raises(InvalidParameterError) as info:
        _sim(**params)
    assert str(info.value) == message


def test_a_cosine_world_shares_the_draws_and_bends_the_interaction():
    """interaction="cosine" keeps every draw of the bilinear world (items, weights, contexts)
    and scores c cos(pi x^T W phi / c) + b^T phi instead of x^T W phi + b^T phi."""

    kw = {"random_state": 3, "reward_scale": 2.0}
    plain = simulate_catalogue(50, 20, 4, 3, 2, **kw)
    bent = simulate_catalogue(50, 20, 4, 3, 2, interaction="cosine", **kw)
    np.testing.assert_array_equal(bent.logged.contexts, plain.logged.contexts)
    np.testing.assert_array_equal(bent.candidate_items, plain.candidate_items)
    world = bent.world
    x, phi = bent.logged.contexts, bent.item_features[bent.candidate_items]
    u = np.einsum("md,de,mce->mc", x, world.reward_weights, phi)
    expected = expit(2.0 * np.cos(np.pi * u / 2.0) + phi @ world.reward_bias)
    np.testing.assert_allclose(bent.candidate_means, expected, rtol=1e-12)
    assert not np.allclose(bent.candidate_means, plain.candidate_means)
    with pytest.raises(InvalidParameterError, match=r"must be 'bilinear' or 'cosine'\. Got 'sin'"):
        simulate_catalogue(50, 20, 4, 3, 2, interaction="sin", **kw)
