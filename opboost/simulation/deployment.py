"""Closing the loop: a supervised-to-bandit stream played by policies that are deployed,
logged and retrained in batches, or by online learners that update after every interaction.

[`deployment_stream`][opboost.simulation.deployment.deployment_stream] fixes the stream of one
trial: ``batch_size * n_batches`` labelled rows in a seeded order (fresh permutations when the
stream is longer than the data) and one uniform per interaction, the common random number every
deployed policy draws its action from at that interaction (so two policies with the same
distribution play the same action).

[`run_batched`][opboost.simulation.deployment.run_batched] plays it as teams deploy an off-policy
learner: batch 0 is logged by the logging policy; after each batch the learner is refitted on ALL
the logs so far (each row with the propensity of the policy that logged it) and deployed, with its
exploration, for the next batch; after the last batch it is refitted once more (its final policy).
Without a learner the logging policy plays every batch. A catalogue stream
([`catalogue_stream`][opboost.simulation.catalogue_deployment.catalogue_stream]) is played the
same way, its policies served with each row's candidates and the items' features.
[`run_online`][opboost.simulation.deployment.run_online] plays the same rows, in the same order,
with an online bandit learner through a
[`BanditEnvironment`][opboost.simulation.environment.BanditEnvironment]. Learners see only the
reward of the action played; the labels give each interaction's reward and the best reward of its
row, for the cumulative reward and regret.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from opboost.api.bandit import BanditLearner
from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.serving.exploration import check_exploration, draw
from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.environment import BanditEnvironment
from opboost.simulation.supervised import reward_table

__all__ = [
    "DeploymentResult",
    "DeploymentStream",
    "deployment_stream",
    "run_batched",
    "run_online",
]


@dataclass(frozen=True, eq=False)
class DeploymentStream:
    """The interactions of one deployment trial, in order.

    ``contexts`` (L, d) and hidden ``labels`` of the stream's rows (``rows``: their indices
    in the data given), ``reward`` their structure, ``uniforms`` (L,) the common random
    numbers of the draws; the stream's batches are ``batch_size`` interactions each.
    """

    contexts: Any
    labels: Any
    reward: Any
    n_actions: int
    batch_size: int
    rows: np.ndarray
    uniforms: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)

    def batch_ends(self, batch_size: int | None = None) -> list[int]:
        """Interactions at the end of each batch of ``batch_size`` (default: the stream's);
        the last batch ends with the stream."""
        size = self.batch_size if batch_size is None else batch_size
        return [*range(size, len(self), size), len(self)]

    def table(self) -> np.ndarray:
        """(L, K) expected reward of every action at every interaction (the labels')."""
        return reward_table(self.labels, self.reward, self.n_actions)

    def serving(self, start: int, end: int) -> dict[str, Any]:
        """Keyword arguments serving interactions ``start .. end - 1``: none (every action
        is eligible)."""
        return {}

    def logged_rewards(self, steps: np.ndarray, means: np.ndarray) -> np.ndarray:
        """The logged rewards of the played actions: their (deterministic) rewards."""
        return means

    def log_fields(self, end: int, probs: np.ndarray) -> dict[str, Any]:
        """Extra columns of the logs of the first ``end`` interactions: the full
        distributions they were drawn from."""
        return {"logging_probs": probs[:end]}


def deployment_stream(
    X: Any,
    y: Any,
    *,
    n_actions: int,
    batch_size: int,
    n_batches: int,
    reward: Any = "multiclass",
    random_state: Any = None,
) -> DeploymentStream:
    """The stream of ``batch_size * n_batches`` interactions over the labelled rows (X, y):
    seeded permutations of the rows, concatenated until the stream is long enough (a row
    recurs only after every row was played), and one seeded uniform per interaction."""
    owner = "deployment_stream"
    check_scalar(batch_size, "batch_size", owner, kind=int, low=1)
    check_scalar(n_batches, "n_batches", owner, kind=int, low=1)
    n = X.shape[0]
    if n < 1:
        raise InvalidParameterError(f"{owner}: X has no rows to stream.")
    rng = check_random_state(random_state)
    length = batch_size * n_batches
    order = np.concatenate([rng.permutation(n) for _ in range(-(-length // n))])[:length]
    labels = y[order]
    reward_table(labels[:1], reward, n_actions)  # checks the labels' form early
    return DeploymentStream(
        contexts=X[order],
        labels=labels,
        reward=reward,
        n_actions=int(n_actions),
        batch_size=int(batch_size),
        rows=order,
        uniforms=rng.random(length),
    )


@dataclass
class DeploymentResult:
    """One policy's (or learner's) play of a stream.

    ``rewards`` (L,) the reward of every interaction, ``best`` (L,) the best reward of its row;
    ``batch_ends`` the interactions after which the learner was refitted (batched) or the
    stream's batch ends (online); ``fit_seconds`` one per refit; ``policy`` the final fitted
    policy (batched: refitted on every log), the online learner, or None when the logging
    policy played throughout; ``logs`` every logged interaction (batched)."""

    rewards: np.ndarray
    best: np.ndarray
    batch_ends: list[int]
    fit_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0
    policy: Any = None
    logs: LoggedBandit | None = None

    def cumulative_reward(self, at: list[int]) -> list[float]:
        """Reward collected up to each interaction count in ``at``."""
        total = np.cumsum(self.rewards)
        return [float(total[t - 1]) for t in at]

    def cumulative_regret(self, at: list[int]) -> list[float]:
        """Best reward minus collected reward, summed up to each count in ``at``."""
        total = np.cumsum(self.best - self.rewards)
        return [float(total[t - 1]) for t in at]


def run_batched(
    stream: Any,
    fit: Callable[[LoggedBandit], Any] | None,
    *,
    logging_policy: Callable[[Any], np.ndarray] | None = None,
    epsilon: float = 0.0,
    temperature: float | None = None,
    batch_size: int | None = None,
) -> DeploymentResult:
    """Play ``stream`` in batches of ``batch_size`` (default: the stream's).

    ``stream`` is a [`DeploymentStream`][opboost.simulation.deployment.DeploymentStream] or a
    [`CatalogueStream`][opboost.simulation.catalogue_deployment.CatalogueStream] (its policies are
    served with each row's ``candidates`` and the catalogue's ``action_features``).
    ``logging_policy(X) -> (m, K)`` distributions logs batch 0 (on a catalogue stream it is
    also given the rows' ``candidates`` and ``action_features``; None: the stream's own
    ``logging_distribution``, a catalogue world's logger). ``fit(logs)`` returns a fitted
    policy with ``action_distribution``
    ([`ExplorationMixin`][opboost.api.serving.exploration.ExplorationMixin]: a Booster, a Policy, a
    PolicyLearner); it is called after every batch on all the logs so far, and each fitted policy
    plays the next batch with ``epsilon``/``temperature`` exploration. ``fit=None``: the logging
    policy plays every batch."""
    epsilon, temperature = check_exploration(epsilon, temperature, "run_batched")
    if logging_policy is None and not hasattr(stream, "logging_distribution"):
        raise InvalidParameterError(
            "run_batched: this stream has no logger of its own; pass logging_policy, an "
            "X -> (m, K) distribution (e.g. the simulation's logging_policy.predict_proba)."
        )
    size = stream.batch_size if batch_size is None else batch_size
    check_scalar(size, "batch_size", "run_batched", kind=int, low=1)
    table, ends = stream.table(), stream.batch_ends(size)
    steps = np.arange(len(stream))
    k = stream.n_actions
    actions = np.zeros(len(stream), dtype=np.int64)
    probs = np.zeros((len(stream), k))
    logged_rewards = np.zeros(len(stream))
    result = DeploymentResult(np.zeros(len(stream)), table.max(axis=1), ends)
    policy, start, began = None, 0, time.perf_counter()
    for end in ends:
        X, served = stream.contexts[start:end], stream.serving(start, end)
        if policy is not None:
            dist = policy.action_distribution(X, epsilon=epsilon, temperature=temperature, **served)
        elif logging_policy is None:
            dist = stream.logging_distribution(start, end)
        else:
            dist = np.asarray(logging_policy(X, **served), dtype=np.float64)
        probs[start:end] = dist
        played, batch = actions[start:end], steps[start:end]
        played[:] = draw(dist, stream.uniforms[start:end])[0]
        result.rewards[start:end] = table[batch, played]
        logged_rewards[start:end] = stream.logged_rewards(batch, result.rewards[start:end])
        start = end
        if fit is None:
            continue
        logs = _logs(stream, end, actions, probs, logged_rewards)
        fitted = time.perf_counter()
        policy = fit(logs)
        result.fit_seconds.append(time.perf_counter() - fitted)
        result.logs = logs
    result.seconds, result.policy = time.perf_counter() - began, policy
    if fit is None:
        result.logs = _logs(stream, len(stream), actions, probs, logged_rewards)
    return result


def _logs(
    stream: Any, end: int, actions: np.ndarray, probs: np.ndarray, rewards: np.ndarray
) -> LoggedBandit:
    """The logs of the first ``end`` interactions, each with its exact propensity."""
    rows = np.arange(end)
    return LoggedBandit(
        stream.contexts[:end],
        actions[:end],
        probs[rows, actions[:end]],
        rewards[:end],
        stream.n_actions,
        **stream.log_fields(end, probs),
    )


def run_online(stream: DeploymentStream, learner: BanditLearner) -> DeploymentResult:
    """Play ``stream`` with an online bandit learner (predict, then learn from the reward of
    the action played, at every interaction), through a
    [`BanditEnvironment`][opboost.simulation.environment.BanditEnvironment] that hides the labels;
    the learner is used as given (pass a fresh one)."""
    if not isinstance(learner, BanditLearner):
        raise InvalidParameterError(
            f"run_online: learner must be a BanditLearner (feedback='bandit'). Got "
            f"{type(learner).__name__}."
        )
    X = stream.contexts
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    env = BanditEnvironment(
        X, stream.labels, reward=stream.reward, n_actions=stream.n_actions, shuffle=False
    )
    predict_one, learn_one, answer = learner.predict_one, learner.learn_one, env.reward
    began = time.perf_counter()
    for _, x in env:
        action = predict_one(x)
        learn_one(x, action, answer(action))
    seconds = time.perf_counter() - began
    history = env.history()
    best = history["reward_table"].max(axis=1)
    return DeploymentResult(
        history["rewards"], best, stream.batch_ends(), seconds=seconds, policy=learner
    )
