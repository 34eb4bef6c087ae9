"""The bilinear reward model of candidate pairs, cross-fitted: the interaction column of a fit.

q(x, a) = [x_c; 1]^T W [phi~(a); 1] (:class:`opboost.api.data.pair_interaction.PairInteraction`) is
a ridge regression of the logged rewards on the outer products of the context terms with the
logged item's terms (the (1, 1) product is the ridge's own intercept), its penalty chosen by
exact leave-one-out error (:func:`opboost.algorithms.learners.linear_reward.ridge_loo`). With phi
the one-hot action (candidate logs without item features) it is the per-action linear model of
the classic start; with item features it is Vowpal Wabbit's ``-q`` model in closed form.

It is fitted on each half of the logged rows and scores the other half (cross-fitted), so the
column the trees see on the training pairs never saw their own rewards; a policy serves with
the mean of the two halves' W.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from opboost.algorithms.learners.linear_reward import ridge_loo
from opboost.api.data.pair_interaction import PairInteraction
from opboost.api.exceptions import OpboostWarning

__all__ = ["CrossFittedInteraction", "fit_interaction", "interaction_layout"]

#: Most ridge terms: its cost is an eigendecomposition of the terms x terms Gram matrix, per
#: half (512 terms: about 0.05 s; the 1,049 terms of one-hot user and item features took 2.5 s
#: on a busy machine, 25x the reward regression it must stay near).
MAX_TERMS = 512
#: Categorical item columns with more codes than this stay out of the bilinear terms.
MAX_CODES = 64
#: z of the paired test by which the cross-fitted bilinear model must beat the constant
#: (each half's mean reward) on squared error for its column to be added.
CLEAR_GAIN_SE = 1.96
#: Largest |context term x item term| the bilinear ridge takes (:func:`interaction_layout`
#: skips the column beyond it): its Gram matrix rounds at eps p**2 n, so beside products of
#: 1e10 the unit-scale terms are lost 1e4 times over (eps = 2.2e-16; item features of 1e20
#: already gave no gain), and from about 1e154 / sqrt(n) the sums of squares overflow and
#: numpy's eigh fails (issue 52: "Eigenvalues did not converge" at item features of 1e200).
MAX_TERM_PRODUCT = 1e10


@dataclass(frozen=True, eq=False)
class CrossFittedInteraction:
    """The interaction to serve with (W the mean of the halves'), the halves' W, and each
    logged row's cross-fitted score ``logged`` (n,)."""

    interaction: PairInteraction
    halves: tuple[np.ndarray, np.ndarray]
    logged: np.ndarray

    def pair_values(self, pairs: Any, fold: np.ndarray) -> np.ndarray:
        """Cross-fitted s of every candidate pair of ``pairs`` (P,): a pair of a row in the
        half ``fold`` is scored with the other half's W."""
        rows, items = pairs.view.rows, pairs.view.pair_items
        X, phi = pairs.contexts, pairs.action_features
        first, second = (self.interaction.scores(X, phi, rows, items, w) for w in self.halves)
        return np.where(fold[rows], second, first)


class _OuterRows:
    """The ridge's rows, the outer products of context and item terms without the last
    (intercept) product, built a block of rows at a time (``ridge_loo`` reads slices)."""

    def __init__(self, context: np.ndarray, items: np.ndarray) -> None:
        self.context, self.items = context, items
        self.shape = (context.shape[0], context.shape[1] * items.shape[1] - 1)

    def __getitem__(self, key: slice) -> np.ndarray:
        c, t = self.context[key], self.items[key]
        return (c[:, :, None] * t[:, None, :]).reshape(len(c), -1)[:, :-1]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self[:]


def interaction_layout(
    X: Any, phi: np.ndarray, context_categorical: Any, item_categorical: Any
) -> PairInteraction | str:
    """The terms of a bilinear model of contexts ``X`` (n, d) and item features ``phi``
    (K, d_a) (weights still 0), or why there is none (a sentence)."""
    values = X.data if sp.issparse(X) else X
    if not np.isfinite(values).all():
        return "missing or infinite context values"
    skip = set() if context_categorical == "auto" else set(context_categorical)
    context = tuple(j for j in range(X.shape[1]) if j not in skip)
    categorical = set(item_categorical)
    numeric = tuple(j for j in range(phi.shape[1]) if j not in categorical)
    codes = tuple(
        (j, int(phi[:, j].max()) + 1)
        for j in sorted(categorical)
        if 2 <= int(phi[:, j].max()) + 1 <= MAX_CODES
    )
    layout = PairInteraction(context, numeric, codes, np.zeros((1, 1)))
    if layout.n_item_terms == 0:
        return f"no numeric item column or categorical one with at most {MAX_CODES} codes"
    too_large = _overflow(X, context, phi, numeric)
    if too_large is not None:
        # the fit goes on with trees alone; a user who reads no reward_start_ still hears why
        warnings.warn(f"reward-model start: {too_large}", OpboostWarning, stacklevel=2)
        return too_large
    terms = (len(context) + 1) * (layout.n_item_terms + 1) - 1
    if terms > MAX_TERMS:
        return f"more than {MAX_TERMS} bilinear terms ({terms})"
    return layout


def _overflow(
    X: Any, context: tuple[int, ...], phi: np.ndarray, numeric: tuple[int, ...]
) -> str | None:
    """Why the bilinear ridge cannot take these terms (a sentence naming the largest item
    column, its size and the fix), or None: the largest product of a context term and an
    item term would exceed :data:`MAX_TERM_PRODUCT`."""
    if not numeric:
        return None
    items = np.abs(np.asarray(phi[:, list(numeric)], dtype=np.float64))
    if not np.isfinite(items).all():
        return None  # LoggedBandit refuses non-finite item features by name
    largest = items.max(axis=0)
    worst = int(np.argmax(largest))
    part = X[:, list(context)]
    part = part.data if sp.issparse(part) else np.asarray(part, dtype=np.float64)
    c_max = max(1.0, float(np.abs(part).max(initial=0.0)))
    p_max = c_max * max(1.0, float(largest[worst]))
    if p_max <= MAX_TERM_PRODUCT:
        return None
    column, size = numeric[worst], float(largest[worst])
    return (
        f"item feature column {column} reaches |phi| = {size:.3g} (contexts |x| = {c_max:.3g}): "
        f"products of the terms above {MAX_TERM_PRODUCT:.0e} leave the bilinear ridge no float64 "
        f"precision (from about 1e154 its sums of squares overflow); rescale the item features "
        f"(e.g. divide column {column} by {size:.3g}) to let the start use them"
    )


def fit_interaction(
    layout: PairInteraction,
    X: Any,
    phi: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    fold: np.ndarray,
    num_threads: int = 0,
) -> CrossFittedInteraction | None:
    """The cross-fitted bilinear model on the logged pairs (``actions``, ``rewards`` (n,))
    of contexts ``X`` and items ``phi``, halves ``fold`` (n,) bool; None unless its
    cross-fitted squared error beats each half's mean reward by :data:`CLEAR_GAIN_SE`
    standard errors of the paired difference. ``num_threads``: BLAS threads (0: all)."""
    with threadpool_limits(limits=num_threads or None):  # BLAS threads as LightGBM's
        return _fit_interaction(layout, X, phi, actions, rewards, fold)


def _fit_interaction(layout, X, phi, actions, rewards, fold) -> CrossFittedInteraction | None:
    rewards = np.asarray(rewards, dtype=np.float64)
    context, items = layout.context_terms(X), layout.item_terms(phi)[actions]
    shape = (context.shape[1], items.shape[1])
    halves, logged, constant = [], np.empty(len(rewards)), np.empty(len(rewards))
    for half in (fold, ~fold):
        if half.sum() < 2:
            return None
        ridge = ridge_loo(_OuterRows(context[half], items[half]), rewards[half])
        weights = np.append(ridge.coef, ridge.intercept).reshape(shape)
        other = ~half
        logged[other] = np.einsum("pj,pj->p", context[other] @ weights, items[other])
        constant[other] = rewards[half].mean()
        halves.append(weights)
    gain = (rewards - constant) ** 2 - (rewards - logged) ** 2
    se = gain.std(ddof=1) / np.sqrt(len(gain))
    if not gain.mean() > CLEAR_GAIN_SE * se:
        return None
    served = PairInteraction(
        layout.context_columns, layout.item_columns, layout.item_categories,
        0.5 * (halves[0] + halves[1]),
    )  # fmt: skip
    return CrossFittedInteraction(served, (halves[0], halves[1]), logged)
