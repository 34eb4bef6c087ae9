"""Reward models q[i, k, a] of slates for the doubly robust slate estimators, cross-fitted:
the q of an impression comes from a model fitted on the other folds' impressions, so it never
predicts a reward it was fitted on.

* ``position_item_means``: each (position, item)'s mean reward, shrunk toward the position's
  mean (context-free; cheap);
* ``fitted_reward_model``: any regressor of the reward on [x; phi(a) or onehot(a); onehot(k)],
  fitted on the logged (impression, position) cells and predicted for every item at every
  position (n L K rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opboost.api.slates import SlateLogs
from opboost.api.validation import check_random_state

__all__ = ["fitted_reward_model", "position_item_means"]


def _folds(n: int, n_folds: int, random_state: Any) -> list[np.ndarray]:
    """Boolean masks of the impressions of each fold (one all-True mask for n_folds = 1)."""
    if n_folds <= 1:
        return [np.ones(n, dtype=bool)]
    labels = check_random_state(random_state).permutation(n) % n_folds
    return [labels == fold for fold in range(n_folds)]


def position_item_means(
    logs: SlateLogs, n_folds: int = 2, random_state: int | None = 0, prior: float = 1.0
) -> np.ndarray:
    """q[i, k, a] (n, L, K): the mean reward of item a at position k over the impressions
    outside row i's fold, with ``prior`` pseudo-impressions at that position's mean."""
    n, length, k_items = len(logs), logs.slate_size, logs.n_items
    q = np.empty((n, length, k_items))
    for own in _folds(n, n_folds, random_state):
        train = ~own if n_folds > 1 else own
        slots, rewards = logs.slates[train], logs.rewards[train]
        seen = slots >= 0
        position = np.broadcast_to(np.arange(length), slots.shape)[seen]
        cell = position * k_items + slots[seen]
        counts = np.bincount(cell, minlength=length * k_items).reshape(length, k_items)
        sums = np.bincount(cell, rewards[seen], minlength=length * k_items)
        sums = sums.reshape(length, k_items)
        base = sums.sum(axis=1) / np.maximum(counts.sum(axis=1), 1)
        q[own] = (sums + prior * base[:, None]) / (counts + prior)
    return q


def fitted_reward_model(
    logs: SlateLogs, model: Any, n_folds: int = 2, random_state: int | None = 0
) -> np.ndarray:
    """q[i, k, a] (n, L, K) of a regressor ``model`` (cloned per fold) of the reward on
    [x_i; phi(a) (``logs.item_features``, else onehot(a)); onehot(k)], fitted on the logged
    cells of the impressions outside row i's fold."""
    from sklearn.base import clone

    n, length, k_items = len(logs), logs.slate_size, logs.n_items
    contexts = np.asarray(logs.contexts, dtype=np.float64)
    items = np.eye(k_items) if logs.item_features is None else np.asarray(logs.item_features)
    positions = np.eye(length)

    def design(rows: np.ndarray, slots: np.ndarray, item: np.ndarray) -> np.ndarray:
        return np.hstack([contexts[rows], items[item], positions[slots]])

    q = np.empty((n, length, k_items))
    for own in _folds(n, n_folds, random_state):
        train = ~own if n_folds > 1 else own
        rows, slots = np.nonzero(logs.observed & train[:, None])
        fitted = clone(model).fit(
            design(rows, slots, logs.slates[rows, slots]), logs.rewards[rows, slots]
        )
        rows, slots, item = (
            a.ravel()
            for a in np.meshgrid(
                np.flatnonzero(own), np.arange(length), np.arange(k_items), indexing="ij"
            )
        )
        q[own] = fitted.predict(design(rows, slots, item)).reshape(-1, length, k_items)
    return q
