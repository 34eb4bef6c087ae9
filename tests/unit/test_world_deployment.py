"""Deployment on a catalogue stream (rows with their own candidates, policies served with
candidates and item features) and on a slate stream (Plackett–Luce slates): exact
propensities, batched refits on their own logs; the ``[data] world = ...`` configs and their
errors."""

from __future__ import annotations

import copy
import tomllib

import numpy as np
import pytest

import opboost
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.api.serving.exploration import draw
from opboost.compose.config import dumps_resolved, parse_config, resolved_config
from opboost.compose.trial.plan import TrialKey, fingerprint
from opboost.compose.trial.world_data import prepare_world_trial
from opboost.core.registry import make
from opboost.simulation.catalogue_deployment import catalogue_stream
from opboost.simulation.deployment import run_batched
from opboost.simulation.items import simulate_catalogue
from opboost.simulation.slate_deployment import run_slates, slate_stream
from opboost.simulation.slate_world import make_slate_world


@pytest.fixture(scope="module")
def world():
    return simulate_catalogue(
        100, n_items=30, n_candidates=5, d_x=3, d_item=2, reward_scale=2.0, random_state=0
    )


class Recorder:
    """fit(logs) -> a small Booster; keeps the logs and the fitted policies."""

    def __init__(self):
        self.seen, self.fitted = [], []

    def __call__(self, logs):
        self.seen.append(logs)
        self.fitted.append(opboost.Booster(n_rounds=3, random_state=0).fit(logs))
        return self.fitted[-1]


def test_the_stream_is_fresh_rows_of_the_world_with_their_candidates(world):
    stream = catalogue_stream(world, batch_size=20, n_batches=3, random_state=4)
    assert len(stream) == 60 and stream.batch_ends() == [20, 40, 60] and stream.n_actions == 30
    rows = stream.rows
    assert np.array_equal(rows.item_features, world.item_features)  # the training catalogue
    table = stream.table()
    items = rows.candidate_items
    assert np.array_equal(np.take_along_axis(table, items, axis=1), rows.candidate_means)
    assert np.count_nonzero(table, axis=1).max() <= 5
    logger = stream.logging_distribution(20, 40)
    assert np.allclose(logger.sum(axis=1), 1.0)
    assert np.array_equal(
        np.take_along_axis(logger, items[20:40], axis=1), rows.candidate_probs[20:40]
    )
    again = catalogue_stream(world, batch_size=20, n_batches=3, random_state=4)
    assert np.array_equal(again.contexts, stream.contexts)
    assert np.array_equal(again.uniforms, stream.uniforms)


def test_batched_play_serves_candidates_and_logs_exact_propensities(world):
    """Batch 0 is the world's logger; every later batch is the previous refit's
    epsilon-greedy draw over the row's candidates (given the items' features); each refit
    sees all the logs so far, with the catalogue's candidates and item features."""
    stream = catalogue_stream(world, batch_size=20, n_batches=3, random_state=1)
    fit = Recorder()
    run = run_batched(stream, fit, epsilon=0.2)
    assert [len(logs) for logs in fit.seen] == [20, 40, 60]
    logs = fit.seen[-1]
    assert np.array_equal(logs.action_features, world.item_features)
    assert (logs.candidates != stream.rows.logged.candidates).nnz == 0
    first = draw(stream.logging_distribution(0, 20), stream.uniforms[:20])
    assert np.array_equal(logs.actions[:20], first[0])
    assert np.array_equal(logs.propensities[:20], first[1])
    for batch, (start, stop) in enumerate(((20, 40), (40, 60))):
        dist = fit.fitted[batch].action_distribution(
            stream.contexts[start:stop], epsilon=0.2, **stream.serving(start, stop)
        )
        actions, propensities = draw(dist, stream.uniforms[start:stop])
        assert np.array_equal(logs.actions[start:stop], actions)
        assert np.array_equal(logs.propensities[start:stop], propensities)
    rows = np.arange(60)
    played = np.asarray(logs.candidates[rows, logs.actions]).ravel()
    assert played.all()  # never an item outside the row's candidates
    means = stream.table()[rows, logs.actions]
    assert np.array_equal(run.rewards, means)  # the curves: the played items' true means
    assert np.array_equal(logs.rewards, (stream.reward_uniforms < means).astype(float))
    reward = run.cumulative_reward(run.batch_ends)
    assert reward == sorted(reward)
    assert run.cumulative_regret([60]) == pytest.approx([np.sum(run.best - means)], abs=1e-9)


def test_the_fixed_logger_and_uniform_play_every_batch(world):
    stream = catalogue_stream(world, batch_size=25, n_batches=2, random_state=2)
    logger = run_batched(stream, None)
    assert logger.policy is None and logger.fit_seconds == []
    assert np.array_equal(
        logger.logs.actions[:25], run_batched(stream, Recorder()).logs.actions[:25]
    )
    seen = []

    def uniform(X, candidates, action_features):
        seen.append(action_features)
        mask = candidates.toarray().astype(float)
        return mask / mask.sum(axis=1, keepdims=True)

    run = run_batched(stream, None, logging_policy=uniform)
    assert len(seen) == 2 and all(np.array_equal(f, world.item_features) for f in seen)
    assert np.allclose(run.logs.propensities, 1 / 5)


def _raw(**changes):
    raw = {
        "data": {"world": "catalogue", "n_items": 20, "n_candidates": 4, "n_test": 50},
        "deployment": {"batch_size": 20, "n_batches": 2},
        "experiment": {"seeds": [0]},
        "algorithms": [
            {"label": "L", "baseline": "logging"},
            {"label": "B", "booster": {"n_rounds": 3}},
        ],
    }
    raw = copy.deepcopy(raw)
    for key, value in changes.items():
        *path, last = key.split("__")
        table = raw
        for part in path:
            table = table[int(part)] if part.isdigit() else table[part]
        last = int(last) if last.isdigit() else last
        if value is None:
            del table[last]
        else:
            table[last] = value
    return raw


def test_a_catalogue_world_config_has_defaults_round_trips_and_fingerprints():
    config = parse_config(_raw(), file="cat.toml")
    assert config.data.params == {
        "n_items": 20,
        "n_candidates": 4,
        "d_x": 5,
        "d_item": 5,
        "logging_beta": 0.5,
        "reward_scale": 2.0,
        "reward_intercept": 0.0,
        "interaction": "bilinear",
        "n_test": 50,
    }
    resolved = resolved_config(config)
    assert resolved["data"] == {"world": "catalogue", **config.data.params}
    again = parse_config(tomllib.loads(dumps_resolved(config)), file="again.toml")
    assert again.data == config.data and resolved_config(again) == resolved
    key = TrialKey("B", 0)
    assert fingerprint(parse_config(_raw(data__n_items=21), file="c"), key, "d") != fingerprint(
        config, key, "d"
    )
    data = prepare_world_trial(config.data, 3)
    assert data.sizes() == {"n_items": 20, "n_candidates": 4, "n_test": 50}
    same = prepare_world_trial(config.data, 3).world.logged.contexts
    assert np.array_equal(same, data.world.logged.contexts)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"data__world": "bandits"},
            'cat.toml [data.world]: the simulated worlds are "catalogue" and "slates". Got '
            "'bandits'.",
        ),
        (
            {"data__n_itmes": 5},
            "cat.toml [data.n_itmes]: unknown key 'n_itmes' in [data] of a catalogue world. Valid "
            "keys: world, n_items, n_candidates, d_x, d_item, logging_beta, reward_scale, "
            "reward_intercept, interaction, n_test. Did you mean 'n_items' or 'n_test' or "
            "'n_candidates'?",
        ),
        (
            {"data__n_candidates": 30},
            "cat.toml [data.n_candidates]: The 'n_candidates' parameter of simulate_catalogue "
            "must be an int >= 1 and <= 20. Got 30 instead.",
        ),
        (
            {"data__n_test": 0},
            "cat.toml [data.n_test]: must be an integer >= 1. Got 0.",
        ),
        (
            {"deployment": None},
            'cat.toml: a catalogue world ([data] world = "catalogue") is played as a stream; add '
            "a [deployment] section (batch_size, n_batches, epsilon, temperature).",
        ),
        (
            {"simulation": {"log_fraction": 0.1}},
            "cat.toml [simulation]: a catalogue world simulates its own logs; remove "
            "[simulation] (the world's parameters are [data] keys).",
        ),
        (
            {"algorithms__1": {"label": "U", "online_learner": {"name": "linucb"}}},
            "cat.toml [algorithms[1]]: algorithm 'U': the online learner 'linucb' takes no "
            "candidates or item features, so it cannot play a catalogue stream; remove it "
            "(batched boosters, policy learners that fit catalogue logs, and the logging, "
            "uniform and reward_regression baselines can).",
        ),
        (
            {"algorithms__1": {"label": "C", "baseline": "best_constant"}},
            "cat.toml [algorithms[1]]: algorithm 'C': the 'best_constant' baseline's one action "
            "is not every row's candidate, so it cannot play a catalogue stream; remove it "
            "(batched boosters, policy learners that fit catalogue logs, and the logging, "
            "uniform and reward_regression baselines can).",
        ),
    ],
)
def test_catalogue_config_errors_name_the_key(changes, message):
    with pytest.raises(ConfigError) as err:
        parse_config(_raw(**changes), file="cat.toml")
    assert str(err.value) == message


def test_slate_play_logs_plackett_luce_slates_with_exact_propensities():
    """Batch 0 is the world's logger; later batches are the previous refit's sample_slate
    draws (with each batch's generator); the logs concatenate every batch; the curves are
    the true expected clicks, the regret against the attractiveness ranking is >= 0."""
    world = make_slate_world(click_model="cascade", n_items=10, n_candidates=5, seed=0)
    stream = slate_stream(world, batch_size=40, n_batches=3, random_state=3)
    fitted = []

    def fit(logs):
        fitted.append(
            make(
                "policy_learner", "slate_boost", n_rounds=2, start_estimators=5, random_state=0
            ).fit(logs)
        )
        return fitted[-1]

    run = run_slates(stream, fit, temperature=0.5)
    logs = run.logs
    assert len(fitted) == 3 and len(logs) == 120 and run.batch_ends == [40, 80, 120]
    first = world.log(
        stream.contexts[:40], stream.candidates[:40], np.random.default_rng([stream.seed, 0])
    )
    assert np.array_equal(logs.slates[:40], first.slates)
    assert np.array_equal(logs.cascade_propensities[:40], first.cascade_propensities)
    for batch, (start, stop) in enumerate(((40, 80), (80, 120))):
        rng = np.random.default_rng([stream.seed, batch + 1])
        slates, marginal, cascade = fitted[batch].sample_slate(
            stream.contexts[start:stop],
            3,
            temperature=0.5,
            random_state=rng,
            candidates=stream.mask(start, stop),
        )
        assert np.array_equal(logs.slates[start:stop], slates)
        assert np.array_equal(logs.marginal_propensities[start:stop], marginal)
        assert np.array_equal(logs.cascade_propensities[start:stop], cascade)
        assert np.array_equal(
            logs.rewards[start:stop], world.draw_clicks(stream.contexts[start:stop], slates, rng)
        )
    assert stream.mask()[np.arange(120)[:, None], logs.slates].all()
    assert np.allclose(run.rewards, world.expected_clicks(stream.contexts, logs.slates))
    assert (run.best - run.rewards >= -1e-12).all()
    reward = run.cumulative_reward(run.batch_ends)
    assert reward == sorted(reward)
    with pytest.raises(
        InvalidParameterError,
        match=r"run_slates: temperature must be a finite "
        r"number > 0 \(Plackett–Luce exploration\); got 0",
    ):
        run_slates(stream, fit, temperature=0)


def _slate_raw(**changes):
    raw = _raw(**changes)
    raw["data"] = {"world": "slates", "n_test": 50, **changes.get("data", {})}
    raw["deployment"] = changes.get(
        "deployment", {"batch_size": 20, "n_batches": 2, "temperature": 0.5}
    )
    raw["algorithms"] = changes.get(
        "algorithms",
        [
            {"label": "L", "baseline": "logging"},
            {"label": "S", "policy_learner": {"name": "slate_boost", "n_rounds": 2}},
        ],
    )
    return raw


def test_a_slate_world_config_has_defaults_and_makes_the_trial_world():
    config = parse_config(_slate_raw(), file="sl.toml")
    assert resolved_config(config)["data"] == {
        "world": "slates",
        "n_items": 20,
        "n_candidates": 8,
        "slate_size": 3,
        "context_dim": 5,
        "item_dim": 4,
        "eta": 1.0,
        "click_model": "pbm",
        "logging_temperature": 2.0,
        "intercept": -1.0,
        "n_test": 50,
    }
    data = prepare_world_trial(config.data, 1)
    assert data.sizes() == {"n_items": 20, "n_candidates": 8, "slate_size": 3, "n_test": 50}
    assert 0.0 < data.test_reward(None) < 3.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"algorithms": [{"label": "B", "booster": {"n_rounds": 3}}]},
            "sl.toml [algorithms[0]]: algorithm 'B' learns one action per context, so it "
            'cannot play a slate stream; use policy_learner = { name = "slate_boost" } (or '
            'the "logging" baseline, the world\'s logger).',
        ),
        (
            {"deployment": {"batch_size": 20, "epsilon": 0.1, "temperature": 0.5}},
            "sl.toml [deployment.epsilon]: a slate stream explores with Plackett–Luce at the "
            "temperature; remove epsilon.",
        ),
        (
            {"deployment": {"batch_size": 20}},
            "sl.toml [deployment.temperature]: a slate stream explores with Plackett–Luce: set "
            "[deployment] temperature > 0 (e.g. 0.5; lower is greedier).",
        ),
        (
            {"data": {"click_model": "dbn"}},
            "sl.toml [data.click_model]: make_slate_world: click_model='dbn' is not one of "
            "('cascade', 'pbm').",
        ),
    ],
)
def test_slate_config_errors_name_the_key(changes, message):
    with pytest.raises(ConfigError) as err:
        parse_config(_slate_raw(**changes), file="sl.toml")
    assert str(err.value) == message


def test_a_fixed_action_stream_needs_a_logging_policy():
    from opboost.simulation.deployment import deployment_stream

    X, y = np.zeros((10, 2)), np.zeros(10, dtype=np.int64)
    stream = deployment_stream(X, y, n_actions=2, batch_size=5, n_batches=2, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"run_batched: this stream has no logger "
                       r"of its own; pass logging_policy"):  # fmt: skip
        run_batched(stream, None)
