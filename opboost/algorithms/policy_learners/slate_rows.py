"""The rows ``slate_boost`` learns from: (context, item) pair rows, one-action logs as
one-position slates."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from opboost.api.data.logged import LoggedBandit
from opboost.api.slates import SlateLogs

__all__ = ["one_slot_logs", "pair_rows"]


def pair_rows(
    contexts: np.ndarray, rows: np.ndarray, items: np.ndarray, features: np.ndarray | None, k: int
) -> np.ndarray:
    """[x_row; phi(item)] (or [x_row; onehot(item)] when ``features`` is None), one per pair."""
    x = np.asarray(contexts, dtype=np.float64)[rows]
    if features is not None:
        return np.hstack([x, np.asarray(features, dtype=np.float64)[items]])
    onehot = np.zeros((len(rows), k))
    onehot[np.arange(len(rows)), items] = 1.0
    return np.hstack([x, onehot])


def one_slot_logs(data: LoggedBandit) -> SlateLogs:
    """A one-action log as slates of one position (both propensities the logged one)."""
    contexts = data.contexts.toarray() if sp.issparse(data.contexts) else data.contexts
    candidates = data.candidates
    if candidates is not None:
        candidates = np.asarray(
            candidates.toarray() if sp.issparse(candidates) else candidates, dtype=bool
        )
    propensities = np.asarray(data.propensities)[:, None]
    return SlateLogs(
        np.asarray(contexts, dtype=np.float64),
        np.asarray(data.actions)[:, None],
        np.asarray(data.rewards)[:, None],
        propensities,
        data.n_actions,
        propensities,
        candidates=candidates,
        item_features=data.action_features,
    )
