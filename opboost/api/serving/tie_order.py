"""The order a fitted policy breaks equal scores in: its ``tie_order``.

Where a model cannot tell actions apart (the trees of a reward model pool rarely logged
actions in one leaf), their scores tie exactly and a plain argmax gives the tie to whichever id
came first in ``actions=``, so the policy would change with the order of the ids. A fit
records instead its logs' actions by their SNIPS value as constant policies, best first
(:func:`constant_tie_order`), in the policy's metadata under :data:`TIE_ORDER_KEY`;
``opboost.api.serving.masks.greedy`` and ``top_k`` break ties in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from opboost.api.data.logged import LoggedBandit

__all__ = [
    "TIE_ORDER_KEY",
    "constant_action_values",
    "constant_tie_order",
    "logs_tie_order",
    "record_tie_order",
    "recorded_tie_order",
    "snips_values",
    "tie_ranks",
    "value_tie_order",
]

#: The policy metadata key of the order that breaks equal scores (:func:`recorded_tie_order`).
TIE_ORDER_KEY = "tie_order"


def snips_values(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """(K,) float64: ``num / den`` per action, the SNIPS value of a constant policy from its
    sums of r / p (``num``) and 1 / p (``den``) over the rows that logged it; NaN where
    ``den`` is 0 (never logged)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    logged = den > 0
    return np.where(logged, num / np.where(logged, den, 1.0), np.nan)


def constant_action_values(data: LoggedBandit) -> np.ndarray:
    """SNIPS value of every constant policy "always action a", shape (K,).

    V(a) = sum_{i: a_i = a} r_i / p_i / sum_{i: a_i = a} 1 / p_i; NaN for never-logged actions.
    With candidate sets it is the value of the policy as ``ConstantPolicy.predict(X,
    candidates=...)`` serves it: a where a is a candidate, the row's first candidate elsewhere
    (a row then counts when its logged action is that first candidate); still NaN for a
    never logged.
    """
    w = 1.0 / np.asarray(data.propensities, dtype=np.float64)
    k = data.n_actions
    num = np.bincount(data.actions, weights=w * data.rewards, minlength=k)
    den = np.bincount(data.actions, weights=w, minlength=k)
    logged = den > 0
    if data.candidates is not None:
        # rows whose logged action is their first candidate count for every a that is not a
        # candidate there (a falls back to it); rows where a is a candidate counted above
        first = _first_candidates(data.candidates) == data.actions
        for total, weights in ((num, w * data.rewards * first), (den, w * first)):
            total += weights.sum() - data.candidates.T @ weights
    return np.where(logged, snips_values(num, den), np.nan)


def constant_tie_order(data: LoggedBandit) -> np.ndarray:
    """(K,) int64: the actions by their value as constant policies
    (:func:`constant_action_values`), best first, never-logged actions last; equal values by
    logged rows (more first), then index. A fitted policy breaks equal scores in this order
    (``Policy.tie_order``): where its model cannot tell actions apart it plays the one the
    logs favour, not the one whose id happens to come first."""
    counts = np.bincount(data.actions, minlength=data.n_actions)
    return value_tie_order(constant_action_values(data), counts)


def value_tie_order(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(K,) int64: the actions by ``values`` (K,), best first, NaN last; equal values by
    ``counts`` (K,), more first, then by index. A fit records its actions' values as constant
    policies and their logged rows here (``Policy.tie_order``)."""
    values = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=-np.inf)
    order = np.lexsort((np.arange(len(values)), -np.asarray(counts), -values))
    return order.astype(np.int64)


def logs_tie_order(data: LoggedBandit) -> np.ndarray | None:
    """The tie order a policy fitted on ``data`` records: :func:`constant_tie_order` (K,), or
    None on logs with item features, whose columns are catalogue items, not fixed actions."""
    return None if data.action_features is not None else constant_tie_order(data)


def record_tie_order(metadata: dict[str, Any], tie_order: np.ndarray | None) -> None:
    """Write ``tie_order`` (K,) into a policy's ``metadata`` (nothing when None)."""
    if tie_order is not None:
        metadata[TIE_ORDER_KEY] = np.asarray(tie_order).tolist()


def recorded_tie_order(metadata: Mapping[str, Any], n_actions: int) -> np.ndarray | None:
    """The (n_actions,) int64 tie order a policy's ``metadata`` records (None: none);
    ValueError unless it lists every action index 0 .. n_actions - 1 exactly once."""
    recorded = metadata.get(TIE_ORDER_KEY)
    if recorded is None:
        return None
    order = np.asarray(recorded) if isinstance(recorded, list) else np.empty(0)
    valid = (
        order.shape == (n_actions,)
        and order.dtype.kind in "iu"
        and np.array_equal(np.sort(order), np.arange(n_actions))
    )
    if not valid:
        raise ValueError(
            f"metadata[{TIE_ORDER_KEY!r}] must list every action index 0 .. {n_actions - 1} "
            f"exactly once, got {recorded!r:.120}"
        )
    return order.astype(np.int64)


def tie_ranks(tie_order: np.ndarray) -> np.ndarray:
    """(K,) int64: each action's position in ``tie_order`` (0: preferred)."""
    ranks = np.empty(len(tie_order), dtype=np.int64)
    ranks[tie_order] = np.arange(len(tie_order))
    return ranks


def _first_candidates(candidates: Any) -> np.ndarray:
    """(n,) int64: each row's lowest-index candidate."""
    if sp.issparse(candidates):
        return candidates.indices[candidates.indptr[:-1]].astype(np.int64)
    return np.argmax(candidates, axis=1)
