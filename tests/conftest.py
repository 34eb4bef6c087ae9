"""Shared fixtures: bundled digits data and a seeded synthetic log with a known reward table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from opboost.api.data.logged import LoggedBandit
from opboost.simulation.datasets.bundled import Digits


@dataclass(frozen=True)
class SyntheticLog:
    """A log whose context column 0 is the row index, so tests can look up ``table`` rows."""

    data: LoggedBandit
    table: np.ndarray  # (n, K) expected reward of every action in every row
    target_probs: np.ndarray  # (n, K) an evaluated policy, neither uniform nor the logger

    @property
    def true_value(self) -> float:
        """The target policy's true expected reward on these contexts."""
        return float(np.mean(np.sum(self.target_probs * self.table, axis=1)))


def _softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_synthetic_log(
    n: int = 300,
    n_actions: int = 4,
    n_features: int = 3,
    *,
    uniform: bool = False,
    bernoulli: bool = False,
    seed: int = 0,
) -> SyntheticLog:
    """A seeded log: softmax (or uniform) logger; rewards table[i, a_i] or Bernoulli of it."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, n_features))
    contexts = np.column_stack([np.arange(n), features])
    table = 1 / (1 + np.exp(-features @ rng.normal(size=(n_features, n_actions))))
    logging = (
        np.full((n, n_actions), 1 / n_actions)
        if uniform
        else _softmax(features @ rng.normal(size=(n_features, n_actions)))
    )
    actions = (rng.random(n)[:, None] > logging.cumsum(axis=1)).sum(axis=1)
    actions = np.minimum(actions, n_actions - 1)
    rows = np.arange(n)
    expected = table[rows, actions]
    rewards = (rng.random(n) < expected).astype(float) if bernoulli else expected
    data = LoggedBandit(contexts, actions, logging[rows, actions], rewards, n_actions, logging)
    target = _softmax(2 * features @ rng.normal(size=(n_features, n_actions)))
    return SyntheticLog(data, table, target)


@pytest.fixture
def synthetic_log() -> SyntheticLog:
    """300 rows, 4 actions, softmax logging, deterministic rewards equal to the table."""
    return make_synthetic_log()


@pytest.fixture(scope="session")
def digits():
    """The bundled digits data (1,797 rows, 64 features, 10 classes)."""
    return Digits().load()


@pytest.fixture(scope="session")
def log_factory():
    """``make_synthetic_log`` itself, for tests that need many seeded logs."""
    return make_synthetic_log
