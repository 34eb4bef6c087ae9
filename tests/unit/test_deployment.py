"""The deployment runner (opboost.simulation.deployment) and the [deployment] config section:
one stream per seed, batch 0 logged by the logging policy, refits on all the logs so far with
the propensities of the policies that logged them, online learners on the same rows in the
same order; config errors name the key."""

from __future__ import annotations

import copy
import json
from typing import ClassVar

import numpy as np
import pytest

from opboost.api.bandit import BanditLearner
from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.api.policy import ConstantPolicy
from opboost.api.serving.exploration import draw
from opboost.compose.config import dumps_resolved, parse_config, resolved_config
from opboost.compose.trial.plan import TrialKey, fingerprint
from opboost.simulation.deployment import deployment_stream, run_batched, run_online
from opboost.simulation.supervised import reward_table

K = 3


@pytest.fixture(scope="module")
def labelled():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.7).astype(np.int64)
    return X, y


def _logging(X):
    """A fixed stochastic logging policy: (m, K) distributions that depend on x."""
    z = np.column_stack([X[:, 0], -X[:, 0], X[:, 1]])
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _best(logs) -> int:
    """The constant action with the highest IPS value on ``logs``."""
    values = np.bincount(logs.actions, weights=logs.rewards / logs.propensities, minlength=K)
    return int(np.argmax(values))


class Recorder:
    """fit(logs) -> the best constant action of the logs (as a ConstantPolicy); keeps the logs."""

    def __init__(self):
        self.seen = []

    def __call__(self, logs):
        self.seen.append(logs)
        return ConstantPolicy(_best(logs), K)


def test_the_stream_plays_every_row_before_repeating_one(labelled):
    X, y = labelled
    stream = deployment_stream(X, y, n_actions=K, batch_size=30, n_batches=3, random_state=4)
    assert len(stream) == 90 and stream.batch_ends() == [30, 60, 90]
    assert sorted(stream.rows[:50]) == list(range(50))
    assert np.array_equal(stream.contexts, X[stream.rows])
    assert np.array_equal(stream.table(), reward_table(y[stream.rows], "multiclass", K))
    again = deployment_stream(X, y, n_actions=K, batch_size=30, n_batches=3, random_state=4)
    assert np.array_equal(again.rows, stream.rows)
    assert np.array_equal(again.uniforms, stream.uniforms)
    assert stream.batch_ends(40) == [40, 80, 90]


def test_batched_refits_on_all_logs_with_the_propensities_of_their_loggers(labelled):
    """Batch 0 is the logging policy's draw from the stream's uniforms; every later batch is
    the previous refit's epsilon-greedy draw; each refit sees all the logs so far, and each
    row's propensity is the probability the policy that logged it gave the action."""
    X, y = labelled
    stream = deployment_stream(X, y, n_actions=K, batch_size=20, n_batches=3, random_state=1)
    fit = Recorder()
    run = run_batched(stream, fit, logging_policy=_logging, epsilon=0.3)
    assert [len(logs) for logs in fit.seen] == [20, 40, 60] == run.batch_ends
    logs = fit.seen[-1]
    assert run.logs is logs and len(run.fit_seconds) == 3
    first = draw(_logging(stream.contexts[:20]), stream.uniforms[:20])
    assert np.array_equal(logs.actions[:20], first[0])
    assert np.array_equal(logs.propensities[:20], first[1])
    for batch, (start, stop) in enumerate(((20, 40), (40, 60))):
        policy = ConstantPolicy(_best(fit.seen[batch]), K)
        dist = policy.action_distribution(stream.contexts[start:stop], epsilon=0.3)
        assert np.array_equal(logs.logging_probs[start:stop], dist)
        actions, propensities = draw(dist, stream.uniforms[start:stop])
        assert np.array_equal(logs.actions[start:stop], actions)
        assert np.array_equal(logs.propensities[start:stop], propensities)
    table = stream.table()
    assert np.array_equal(logs.rewards, table[np.arange(60), logs.actions])
    assert np.array_equal(run.rewards, logs.rewards)
    assert run.cumulative_reward([20, 60]) == [logs.rewards[:20].sum(), logs.rewards.sum()]
    assert run.cumulative_regret([60]) == [float(np.sum(table.max(axis=1) - logs.rewards))]
    assert run.policy.action == _best(logs)


def test_every_learner_gets_the_same_first_batch_and_a_fixed_policy_plays_throughout(labelled):
    X, y = labelled
    stream = deployment_stream(X, y, n_actions=K, batch_size=25, n_batches=2, random_state=2)
    a = run_batched(stream, Recorder(), logging_policy=_logging, epsilon=0.1)
    b = run_batched(stream, Recorder(), logging_policy=_logging, temperature=0.5)
    fixed = run_batched(stream, None, logging_policy=_logging)
    assert np.array_equal(a.logs.actions[:25], b.logs.actions[:25])
    assert np.array_equal(a.logs.actions[:25], fixed.logs.actions[:25])
    assert fixed.policy is None and fixed.fit_seconds == []
    assert np.array_equal(fixed.logs.logging_probs, _logging(stream.contexts))
    reward = fixed.cumulative_reward(stream.batch_ends())
    assert reward == sorted(reward)


class Remember(BanditLearner):
    """A bandit learner that plays action 0 and remembers what it was shown."""

    name: ClassVar[str] = "remember_test"

    def __init__(self, *, n_actions: int = K, random_state=None):
        self.n_actions = n_actions
        self.random_state = random_state
        self.shown, self.rewards = [], []

    def action_probs_one(self, x):
        return np.eye(self.n_actions)[0]

    def predict_one(self, x):
        self.shown.append(np.array(x))
        return 0

    def learn_one(self, x, action, reward):
        self.rewards.append(reward)


def test_online_learners_play_the_same_rows_in_the_same_order(labelled):
    X, y = labelled
    stream = deployment_stream(X, y, n_actions=K, batch_size=20, n_batches=4, random_state=3)
    learner = Remember()
    run = run_online(stream, learner)
    assert np.array_equal(np.array(learner.shown), stream.contexts)
    assert np.array_equal(run.rewards, stream.table()[:, 0]) and learner.rewards == list(
        run.rewards
    )
    assert run.batch_ends == [20, 40, 60, 80] and run.policy is learner
    with pytest.raises(InvalidParameterError) as err:
        run_online(stream, Recorder())
    assert str(err.value) == (
        "run_online: learner must be a BanditLearner (feedback='bandit'). Got Recorder."
    )


# --- the [deployment] section --------------------------------------------------------------

RAW = {
    "data": {"name": "wine"},
    "simulation": {"log_fraction": 0.15},
    "deployment": {"batch_size": 20, "n_batches": 3, "epsilon": 0.2},
    "experiment": {"seeds": [0]},
    "algorithms": [
        {"label": "logging", "baseline": "logging"},
        {"label": "B", "booster": {"n_rounds": 3}, "deployment": {"batch_size": 30}},
        {"label": "LinUCB", "online_learner": {"name": "linucb"}},
    ],
}


def _config(**changes):
    raw = copy.deepcopy(RAW)
    for path, value in changes.items():
        *head, last = path.split("__")
        table = raw
        for part in head:
            table = table[int(part)] if isinstance(table, list) else table[part]
        if value is None:
            del table[last]
        else:
            table[last] = value
    return parse_config(raw, file="dep.toml")


def test_deployment_section_has_defaults_and_round_trips():
    config = _config()
    assert config.deployment == {
        "batch_size": 20,
        "n_batches": 3,
        "epsilon": 0.2,
        "temperature": 0.0,
    }
    assert config.algorithm("B").deployment == {"batch_size": 30}
    resolved = resolved_config(config)
    assert list(resolved) == ["data", "simulation", "experiment", "deployment", "algorithms"]
    assert resolved["algorithms"][1]["deployment"] == {"batch_size": 30}
    import tomllib

    again = parse_config(tomllib.loads(dumps_resolved(config)), file="again.toml")
    assert again.deployment == config.deployment
    assert again.algorithm("B").deployment == {"batch_size": 30}
    assert "deployment" not in resolved_config(
        _config(deployment=None, algorithms__1__deployment=None)
    )


def test_the_fingerprint_follows_the_deployment_settings():
    key = TrialKey("B", 0)
    base = fingerprint(_config(), key)
    assert fingerprint(_config(deployment__n_batches=4), key) != base
    assert fingerprint(_config(algorithms__1__deployment={"epsilon": 0.3}), key) != base
    assert fingerprint(_config(), key) == base


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"deployment__batch_sise": 5},
            "dep.toml [deployment.batch_sise]: unknown key 'batch_sise' in [deployment]. Valid "
            "keys: batch_size, n_batches, epsilon, temperature. Did you mean 'batch_size' or "
            "'n_batches'?",
        ),
        (
            {"deployment__epsilon": 1.5},
            "dep.toml [deployment.epsilon]: The 'epsilon' parameter of [deployment] must be a "
            "float >= 0.0 and <= 1.0. Got 1.5 instead.",
        ),
        (
            {"deployment__n_batches": 0},
            "dep.toml [deployment.n_batches]: The 'n_batches' parameter of [deployment] must "
            "be an int >= 1. Got 0 instead.",
        ),
        (
            {"deployment__temperature": float("inf")},
            "dep.toml [deployment.temperature]: The 'temperature' must be finite. Got inf.",
        ),
        (
            {"deployment": None},
            "dep.toml [algorithms[1].deployment]: an algorithm's deployment table needs a "
            "[deployment] section (batch_size, n_batches, epsilon, temperature) that makes the "
            "config a deployment study.",
        ),
        (
            {"algorithms__2__deployment": {"epsilon": 0.1}},
            "dep.toml [algorithms[2].deployment]: an online learner explores and updates by "
            "itself at every interaction; remove its deployment table (set its exploration "
            "among the learner's parameters).",
        ),
        (
            {"algorithms__0__deployment": {"epsilon": 0.1}},
            "dep.toml [algorithms[0].deployment]: the 'logging' baseline plays a fixed policy in "
            "a deployment study and is never refitted; remove its deployment table.",
        ),
        (
            {"algorithms__1__deployment": {"n_batches": 2}},
            "dep.toml [algorithms[1].deployment.n_batches]: unknown key 'n_batches' in "
            "[algorithms[1].deployment]. Valid keys: batch_size, epsilon, temperature. Did you "
            "mean 'batch_size'?",
        ),
        (
            {"algorithms__2__n_passes": 2},
            "dep.toml [algorithms[2].n_passes]: a deployment study plays one stream once; online "
            "learners take n_passes = 1 (the stream is [deployment] batch_size x n_batches "
            "interactions). Got 2.",
        ),
    ],
)
def test_deployment_config_errors_name_the_key(changes, message):
    with pytest.raises(ConfigError) as err:
        _config(**changes)
    assert str(err.value) == message


def test_stored_trials_may_hold_lists_of_seconds_in_timings(tmp_path):
    """A deployment trial's timings.batch_fit_seconds (one per refit) is a list: a stored
    record with it is resumed; a list holding a non-number is not a complete record."""
    from opboost.compose.trial.store import MALFORMED, load_stored_trials

    key = TrialKey("B", 0)
    result = {
        "label": "B",
        "family": "offline",
        "seed": 0,
        "candidate": None,
        "overrides": {},
        "metrics": {"test_reward": 0.5},
        "curves": {"interactions": [20, 40]},
        "info": {},
        "timings": {"total_seconds": 1.0, "batch_fit_seconds": [0.25, 0.5]},
        "fallback": None,
    }
    record = {"fingerprint": "f", "data_hash": "d", "versions": {}, "result": result}
    path = tmp_path / key.filename
    path.write_text(json.dumps(record))
    done, stale = load_stored_trials(tmp_path, [key], {key: "f"}, "d", {key: {}})
    assert done == {key: result} and stale == {}
    result["timings"]["batch_fit_seconds"] = [0.25, "x"]
    path.write_text(json.dumps(record))
    done, stale = load_stored_trials(tmp_path, [key], {key: "f"}, "d", {key: {}})
    assert done == {} and stale == {
        MALFORMED: [
            "B__s0.json ('result.timings' has a value that is not a number (or a list of numbers))"
        ]
    }
