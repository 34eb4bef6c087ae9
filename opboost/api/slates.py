"""Slate logs and an evaluated ranking policy's probabilities on them, the inputs of the slate
estimators (``opboost.algorithms.estimators.slate``) and the output of the slate simulator
(``opboost.simulation.slates``).

Shapes: n impressions, L positions (top first), K items in the catalogue.

* ``SlateLogs``: what the logger showed and what happened —
  ``slates`` (n, L) item ids, ``rewards`` (n, L) (clicks), the logger's per-position
  marginal propensities pi_0(a_{i,k} at k | x_i) and cascade propensities
  pi_0(a_{i,1..k} | x_i), both (n, L);
* ``SlatePolicy``: the evaluated policy's probabilities of
  the same logged items — marginal and cascade (n, L) — and, for the doubly robust
  estimators, its distributions over all K items at every position, (n, L, K).

Unlike obp's per-position rows (one row per impression and position, ``LoggedBandit`` with
``positions``), an impression is one row here, so the reward-interaction weights (products
over positions 1..k) and per-impression intervals need no impression ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import check_action_probs
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.plackett_luce import (
    conditional_distributions,
    marginal_distributions,
    prefix_probabilities,
)

__all__ = ["SlateLogs", "SlatePolicy", "slate_inputs"]


def check_ranking(ranking: Any, shape: tuple[int, int], n_items: int, owner: str) -> np.ndarray:
    """``ranking`` as an (n, L) = ``shape`` integer array of item ids in [0, ``n_items``);
    anything else is an InvalidParameterError naming ``owner``, the shape and the ids."""
    ranking = np.asarray(ranking)
    if ranking.shape != tuple(shape) or ranking.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"{owner}: a ranking must be an (n, L) = {tuple(shape)} integer array of item ids; "
            f"got shape {ranking.shape} and dtype {ranking.dtype}."
        )
    if ranking.size and (ranking.min() < 0 or ranking.max() >= n_items):
        raise InvalidParameterError(
            f"{owner}: a ranking's item ids must lie in [0, n_items={n_items}); got "
            f"{int(ranking.min())}..{int(ranking.max())}."
        )
    return ranking


def position_weights_ok(value: object) -> bool:
    """None, or a non-empty 1-D sequence of finite numbers (position weights alpha_k)."""
    if value is None:
        return True
    weights = np.asarray(value, dtype=np.float64)
    return weights.ndim == 1 and weights.size > 0 and bool(np.all(np.isfinite(weights)))


@dataclass(frozen=True, eq=False)
class SlateLogs:
    """Logged slates, one row per impression.

    Parameters
    ----------
    contexts
        (n, d) context features x_i.
    slates
        (n, L) integer item ids in [0, n_items) shown at positions 1..L (column 0 is the
        top); -1 marks a position whose row was not logged (a sample of per-position rows,
        as the Open Bandit sample): it contributes nothing to any estimate.
    rewards
        (n, L) reward (click) at each position; 0 where the slot is -1.
    marginal_propensities
        (n, L) pi_0(a_{i,k} at k | x_i), the logger's probability of showing the logged item
        at that position (obp's ``pscore_item_position``); 1 where the slot is -1.
    n_items
        K, the catalogue size.
    cascade_propensities
        (n, L) pi_0(a_{i,1..k} | x_i), the logger's probability of the ranking's first k
        items in that order (obp's ``pscore_cascade``), or None when unknown (the
        reward-interaction estimators then refuse the logs).
    candidates
        optional (n, K) booleans, the items row i could show.
    item_features
        optional (K, d_item) features phi(a) of every item.
    """

    contexts: np.ndarray
    slates: np.ndarray
    rewards: np.ndarray
    marginal_propensities: np.ndarray
    n_items: int
    cascade_propensities: np.ndarray | None = None
    candidates: np.ndarray | None = None
    item_features: np.ndarray | None = None

    def __post_init__(self) -> None:
        slates = np.asarray(self.slates)
        if slates.ndim != 2 or slates.dtype.kind not in "iu":
            raise InvalidParameterError(
                f"SlateLogs: slates must be an (n, L) integer array of item ids; got shape "
                f"{slates.shape} and dtype {slates.dtype}."
            )
        bad = (slates < -1) | (slates >= self.n_items)
        if bad.any():
            i, k = np.argwhere(bad)[0]
            raise InvalidParameterError(
                f"SlateLogs: slates[{i}, {k}] = {slates[i, k]} is not an item id in "
                f"[0, n_items={self.n_items}) (or -1 for a position not logged)."
            )
        object.__setattr__(self, "slates", slates)
        fields = ["rewards", "marginal_propensities"]
        if self.cascade_propensities is not None:
            fields.append("cascade_propensities")
        for field in fields:
            value = np.asarray(getattr(self, field), dtype=np.float64)
            if value.shape != slates.shape:
                raise InvalidParameterError(
                    f"SlateLogs: {field} has shape {value.shape}; it must match slates "
                    f"{slates.shape} (n impressions x L positions)."
                )
            object.__setattr__(self, field, value)
        for field in fields[1:]:
            value = getattr(self, field)
            bad = (slates >= 0) & ~((value > 0) & (value <= 1))
            if bad.any():
                i, k = np.argwhere(bad)[0]
                raise InvalidParameterError(
                    f"SlateLogs: {field}[{i}, {k}] = {float(value[i, k])!r} is not a "
                    f"probability in (0, 1]; every logged item needs its logger's positive "
                    f"probability."
                )

        self._check_rows_of(slates.shape[0])

    def _check_rows_of(self, n: int) -> None:
        """contexts, candidates and item_features agree with n impressions and K items."""
        expected = {"contexts": (n, None), "candidates": (n, self.n_items)}
        expected["item_features"] = (self.n_items, None)
        for field, (rows, cols) in expected.items():
            value = getattr(self, field)
            if value is None:
                continue
            shape = np.shape(value)
            if len(shape) != 2 or shape[0] != rows or cols not in (None, shape[1]):
                want = f"({rows}, {'d' if cols is None else cols})"
                raise InvalidParameterError(
                    f"SlateLogs: {field} has shape {shape}; it must be {want} (n = {n} "
                    f"impressions, K = n_items = {self.n_items})."
                )

    def __len__(self) -> int:
        return int(self.slates.shape[0])

    @property
    def slate_size(self) -> int:
        """L, the number of positions."""
        return int(self.slates.shape[1])

    @property
    def observed(self) -> np.ndarray:
        """(n, L) booleans: the positions whose row was logged (slot != -1)."""
        return self.slates >= 0

    def per_position_rows(self) -> tuple[LoggedBandit, np.ndarray]:
        """obp's per-position rows: a ``LoggedBandit`` with one row per logged (impression,
        position), ``positions`` k, the marginal propensities and the impression's context
        (and candidates), and the (m,) impression index of each row (the query groups of a
        learning-to-rank fit). Rows run impression by impression, top position first."""
        impression, position = np.nonzero(self.observed)
        contexts = self.contexts[impression]
        rows = LoggedBandit(
            contexts,
            self.slates[impression, position],
            self.marginal_propensities[impression, position],
            self.rewards[impression, position],
            self.n_items,
            positions=position,
            action_features=self.item_features,
            candidates=None if self.candidates is None else self.candidates[impression],
        )
        return rows, impression


@dataclass(frozen=True, eq=False)
class SlatePolicy:
    """An evaluated ranking policy's probabilities on ``SlateLogs`` ``logs``.

    Parameters
    ----------
    marginal
        (n, L) pi(a_{i,k} at k | x_i) of the logged items.
    cascade
        (n, L) pi(a_{i,1..k} | x_i), the probability of the logged ranking's first k items.
    marginal_dist
        optional (n, L, K) pi(a at k | x_i) of every item (the independent DR estimator).
    conditional_dist
        optional (n, L, K) pi(a at k | x_i, a_{i,1..k-1}), every item's probability at k
        given the logged items above it (the cascade DR estimator).
    """

    marginal: np.ndarray
    cascade: np.ndarray
    marginal_dist: np.ndarray | None = None
    conditional_dist: np.ndarray | None = None

    @classmethod
    def from_ranking(cls, logs: SlateLogs, ranking: np.ndarray) -> SlatePolicy:
        """The deterministic policy showing ``ranking`` (n, L) item ids on ``logs``."""
        ranking = check_ranking(ranking, logs.slates.shape, logs.n_items, "SlatePolicy")
        match = (ranking == logs.slates).astype(np.float64)
        dist = np.zeros((*ranking.shape, logs.n_items))
        np.put_along_axis(dist, ranking[:, :, None], 1.0, axis=2)
        return cls(match, np.cumprod(match, axis=1), dist, dist)

    @classmethod
    def plackett_luce(
        cls, logs: SlateLogs, scores: np.ndarray, temperature: float = 1.0
    ) -> SlatePolicy:
        """The Plackett–Luce policy of (n, K) item ``scores`` (-inf for items a row cannot
        show) at ``temperature``, exact (see ``opboost.api.numerics.plackett_luce``; the
        marginals cost O(n K^L), so keep K small or pass scores over candidates only)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (len(logs), logs.n_items):
            raise InvalidParameterError(
                f"Plackett–Luce scores must have shape (n, K) = {(len(logs), logs.n_items)}; "
                f"got {scores.shape}."
            )
        marginal_dist = marginal_distributions(scores, logs.slate_size, temperature)
        shown = np.maximum(logs.slates, 0)
        marginal = np.take_along_axis(marginal_dist, shown[:, :, None], axis=2)[:, :, 0]
        return cls(
            marginal,
            prefix_probabilities(scores, shown, temperature),
            marginal_dist,
            conditional_distributions(scores, shown, temperature),
        )


def slate_inputs(
    data: SlateLogs | LoggedBandit, policy: object, owner: str
) -> tuple[SlateLogs, SlatePolicy]:
    """``data`` and ``policy`` as (SlateLogs, SlatePolicy).

    ``data`` is ``SlateLogs`` or a one-position ``LoggedBandit`` without positions
    (each row an impression of one slot: both propensities are its propensity). ``policy``
    is a ``SlatePolicy``, an (n, L) integer ranking, or, on a ``LoggedBandit``, any form
    ``check_action_probs`` takes.
    """
    if isinstance(data, LoggedBandit):
        if data.positions is not None:
            raise InvalidParameterError(
                f"{owner}: a LoggedBandit with positions holds one row per (impression, "
                f"position) and does not say which rows share an impression; pass SlateLogs "
                f"(opboost.api.slates), one row per impression with (n, L) slates."
            )
        probs = check_action_probs(data, policy, owner)
        rows = np.arange(len(data))
        chosen = probs[rows, data.actions][:, None]
        logs = SlateLogs(
            data.contexts,
            np.asarray(data.actions)[:, None],
            data.rewards[:, None],
            data.propensities[:, None],
            data.n_actions,
            data.propensities[:, None],
        )
        return logs, SlatePolicy(chosen, chosen, probs[:, None, :], probs[:, None, :])
    if not isinstance(data, SlateLogs):
        raise InvalidParameterError(
            f"{owner}: data must be SlateLogs (or a LoggedBandit without positions); got "
            f"{type(data).__name__}."
        )
    if isinstance(policy, SlatePolicy):
        _check_policy_shapes(data, policy, owner)
        return data, policy
    return data, SlatePolicy.from_ranking(data, policy)


def _check_policy_shapes(logs: SlateLogs, policy: SlatePolicy, owner: str) -> None:
    """Each of the policy's arrays fits the logs: (n, L), or (n, L, K) for the dists."""
    n, length = logs.slates.shape
    for field in ("marginal", "cascade", "marginal_dist", "conditional_dist"):
        value = getattr(policy, field)
        expected = (n, length) if field in ("marginal", "cascade") else (n, length, logs.n_items)
        if value is not None and np.shape(value) != expected:
            raise InvalidParameterError(
                f"{owner}: the SlatePolicy's {field} has shape {np.shape(value)}; on these "
                f"logs it must be {expected} (n impressions x L positions"
                f"{'' if len(expected) == 2 else ' x K items'})."
            )
