"""opboost.simulation.tabular_worlds: random user-like tables drawn from a seed (issue 48)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from opboost.simulation.tabular_worlds import tabular_world


def test_the_same_seed_is_the_same_world_bit_for_bit():
    a, b = tabular_world(3, max_rows=2000), tabular_world(3, max_rows=2000)
    pd.testing.assert_frame_equal(a.logs, b.logs, check_exact=True)
    pd.testing.assert_frame_equal(a.test_contexts, b.test_contexts, check_exact=True)
    np.testing.assert_array_equal(a.test_means, b.test_means)
    other = tabular_world(4, max_rows=2000)
    assert other.description != a.description
    # capping the rows keeps the world: the same reward function on the same test rows
    full = tabular_world(3)
    np.testing.assert_array_equal(full.test_means, a.test_means)
    assert len(full.logs) > len(a.logs) == 2000
    # another log_seed: other logs of the same world
    again = tabular_world(3, max_rows=2000, log_seed=1)
    np.testing.assert_array_equal(again.test_means, a.test_means)
    assert not again.logs["reward"].equals(a.logs["reward"])


def test_the_ranges_over_many_seeds():
    ks, rows, forms, rewards = [], [], set(), set()
    for seed in range(40):
        world = tabular_world(seed, max_rows=1000, n_test=200)
        spec = world._spec
        ks.append(len(world.action_ids))
        if seed < 6:  # the drawn number of rows (up to 100,000)
            rows.append(len(tabular_world(seed, n_test=10).logs))
        forms.add(spec["form"])
        rewards.add(spec["reward"])
        assert world.test_means.shape == (200, len(world.action_ids))
        assert all(isinstance(a, str) for a in world.action_ids)
        assert len(set(world.action_ids)) == len(world.action_ids)
        kinds = {str(world.logs[c].dtype) for c in world.columns["contexts"]}
        assert {"float64", "category"} <= kinds
    assert min(ks) >= 2 and max(ks) <= 20 and len(set(ks)) > 8
    assert all(1000 <= n <= 100_000 for n in rows)
    assert forms == {"linear", "thresholds", "interactions", "categorical", "mixed"}
    assert rewards == {"clicks", "rare_clicks", "real"}


def test_missing_values_are_present():
    world = tabular_world(0, max_rows=3000)
    share = world.logs["num_0"].isna().mean()
    assert 0.03 < share < 0.25
    assert world.test_contexts["num_0"].isna().any()


def test_the_logged_propensities_are_the_logging_policys():
    world = tabular_world(5, max_rows=3000)
    probs = world.logging_probs(world.logs[world.columns["contexts"]])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    index = {a: i for i, a in enumerate(world.action_ids)}
    actions = world.logs["action"].map(index).to_numpy()
    np.testing.assert_allclose(
        world.logs["propensity"], probs[np.arange(len(actions)), actions], rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("seed", [6, 0])  # Bernoulli clicks; real rewards with noise
def test_the_true_means_are_the_simulated_rewards_means(seed):
    world = tabular_world(seed, n_rows=100_000, n_test=10)
    logs = world.logs
    index = {a: i for i, a in enumerate(world.action_ids)}
    actions = logs["action"].map(index).to_numpy()
    means = world.means(logs[world.columns["contexts"]])[np.arange(len(logs)), actions]
    residual = logs["reward"].to_numpy() - means
    assert abs(residual.mean()) < 4 * residual.std() / np.sqrt(len(logs))
    # and per action: the rewards' mean within 4 standard errors of the means' mean
    for a in np.unique(actions)[:5]:
        r = residual[actions == a]
        assert abs(r.mean()) < 4 * max(r.std(), 1e-3) / np.sqrt(len(r)) + 1e-9


def test_from_dataframe_reads_a_world():
    world = tabular_world(1, max_rows=1500)
    data = world.logged_bandit()
    assert len(data) == 1500 and data.n_actions == len(world.action_ids)
    assert data.schema.action_ids == tuple(world.action_ids)
    assert len(data.schema.categorical_features) >= 1
    assert np.isnan(data.contexts).any()
    # a policy by string ids and by indices is worth the same
    best = world.test_means.argmax(axis=1)
    ids = np.asarray(world.action_ids, dtype=object)[best]
    assert world.value(ids) == world.value(best) == pytest.approx(world.test_means.max(1).mean())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seed": -1}, "tabular_world: seed must be a non-negative int; got -1."),
        ({"seed": 0, "n_rows": 0}, "tabular_world: n_rows must be at least 1; got 0."),
        ({"seed": 0, "max_rows": 0}, "tabular_world: max_rows must be at least 1; got 0."),
        ({"seed": 0, "n_test": -5}, "tabular_world: n_test must be at least 1; got -5."),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tabular_world(**kwargs)
