"""Shared protocol of the policy benchmarks (``bench_defaults.py``, ``bench_peers.py``).

One :class:`Trial` per (data set, seed), as in London et al. (2023), appendix F: an optional
seeded subsample, a stratified 70/30 train/test split (multilabel labels are split without
stratification), supervised-to-bandit logging on the train rows, and the labelled test rows
for the TRUE expected reward of any policy.

``examples/benchmarks`` is not a package: a script in this folder puts the folder on
``sys.path`` and imports this module by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from sklearn.model_selection import train_test_split

from opboost.api.data import LoggedBandit
from opboost.simulation.datasets import SupervisedData
from opboost.simulation.supervised import SoftmaxLoggingPolicy, reward_table, supervised_to_bandit

__all__ = ["Trial", "simulate_trial", "summary", "t_interval"]


@dataclass(frozen=True, eq=False)
class Trial:
    """The logs every method learns from, and the labelled test rows that score it.

    ``table`` is the (m, K) expected reward of each test row and action.
    """

    seed: int
    logged: LoggedBandit
    logging_policy: SoftmaxLoggingPolicy
    X_test: Any
    y_test: Any
    table: np.ndarray

    @property
    def n_test(self) -> int:
        return int(self.table.shape[0])

    @property
    def serving(self) -> dict[str, Any]:
        """Keywords of ``predict`` on ``X_test``: none (K fixed actions; a catalogue trial
        passes ``candidates`` and ``action_features``)."""
        return {}

    def logging_probs(self) -> np.ndarray:
        """The logging policy's (m, K) probabilities on the test rows."""
        return self.logging_policy.predict_proba(self.X_test)

    def value(self, policy: np.ndarray) -> float:
        """True expected test reward of (m,) actions (argmax policy) or (m, K) probabilities."""
        policy = np.asarray(policy)
        if policy.ndim == 2:
            return float(np.mean(np.einsum("ij,ij->i", policy.astype(np.float64), self.table)))
        return float(np.mean(self.table[np.arange(self.n_test), policy.astype(np.intp)]))


def _strata(y: np.ndarray) -> np.ndarray | None:
    """Single-label ``y`` to stratify on, or None for multilabel ``y`` or a class with fewer
    than two rows (nursery's 'recommend' class in a subsample), which cannot be split."""
    if y.ndim != 1 or np.unique(y, return_counts=True)[1].min() < 2:
        return None
    return y


def simulate_trial(data: SupervisedData, seed: int, max_rows: int | None = None) -> Trial:
    """The trial of ``seed`` on ``data``.

    ``max_rows`` first draws a seeded subsample of that many rows (stratified when the labels
    are single-label), for the largest data sets.
    """
    X, y, k = data.X, data.y, data.n_actions
    if max_rows is not None and X.shape[0] > max_rows:
        X, _, y, _ = train_test_split(
            X, y, train_size=max_rows, random_state=seed, stratify=_strata(y)
        )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=_strata(y)
    )
    sim = supervised_to_bandit(X_train, y_train, n_actions=k, reward=data.reward, random_state=seed)
    return Trial(
        seed=seed,
        logged=sim.logged,
        logging_policy=sim.logging_policy,
        X_test=X_test,
        y_test=y_test,
        table=reward_table(y_test, data.reward, k),
    )


def t_interval(values: Any) -> tuple[float, float]:
    """Mean and Student-t 95% half-width (NaN for fewer than two values)."""
    a = np.asarray(values, dtype=np.float64)
    if len(a) < 2:
        return float(a.mean()) if len(a) else float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a))
    return float(a.mean()), float(half)


def summary(values: Any) -> str:
    """``mean ± half-width`` (3 decimals); the mean alone for a single value."""
    mean, half = t_interval(values)
    if np.isnan(half):
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {half:.3f}"
