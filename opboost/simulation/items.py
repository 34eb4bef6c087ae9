"""A catalogue simulator: contexts, items with features, per-row candidate sets, a softmax
logger over the candidates and Bernoulli rewards with known means.

The world (all seeded by ``random_state``):

* contexts x ~ N(0, I), shape (n, d_x); item features phi(a) ~ N(0, I), shape (n_items, d_item);
* the score s(x, a) = x^T W phi(a) + b^T phi(a), W (d_x, d_item) with entries
  N(0, reward_scale^2 / (d_x d_item)) and b (d_item,) with entries N(0, reward_scale^2 / d_item),
  so each of the two terms has variance about reward_scale^2;
* the true mean reward mu(x, a) = sigmoid(reward_intercept + s(x, a));
* each row's candidates: ``n_candidates`` distinct items drawn uniformly from the catalogue;
* the logger: softmax(logging_beta * s(x_i, a)) over the row's candidates (0 = uniform over
  them, larger = greedier), one action sampled per row; the reward is Bernoulli(mu(x_i, a_i)).

Options for other shapes of log (each off by default, and then draws nothing, so the default
world above is unchanged):

* ``popularity_scale``: the scale of the context-free term b^T phi(a) (default
  ``reward_scale``); larger than ``reward_scale``, the items' popularity dominates;
* ``item_categories`` (C_1, ..., C_J): J categorical item columns after the d_item numeric
  ones, item a's code in column j drawn from range(C_j) with probability proportional to
  1 / (code + 1) (a few common categories, a long tail); each adds x^T U_j[c] + v_j[c] to
  the score, U_j (C_j, d_x) with entries N(0, reward_scale^2 / (d_x J)) and v_j (C_j,) with
  entries N(0, popularity_scale^2 / J). The log's ``item_schema`` marks the columns as
  categorical, so boosting splits them as categories;
* ``context_categories`` (C_1, ..., C_L): contexts are one-hot encodings of L categorical user
  features (codes drawn as above) instead of N(0, I); d_x must be C_1 + ... + C_L;
* ``position_bias`` (e_0, ..., e_{P-1}): each row is shown at a uniform position p in
  0..P-1 (the log's ``positions``) and its mean reward is e_p mu(x, a), e_p the probability
  that position p is examined (the position-based click model).

Everything is vectorised over rows (no per-row Python loop), so n = 1e5 rows take about a
second. Held-out rows
([`SimulatedCatalogue.test_rows`][opboost.simulation.items.SimulatedCatalogue.test_rows]) can draw
their candidates from new items, absent from the training logs, with features from the same
distribution: the cold-start setting that item features are for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from opboost.api.data.candidates import is_candidate
from opboost.api.data.logged import LoggedBandit
from opboost.api.estimator import check_action_probs
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.catalogue_world import (
    CatalogueWorld,
    categorical_codes,
    category_counts,
    position_bias_array,
)

__all__ = ["SimulatedCatalogue", "simulate_catalogue"]

#: Rows per block when gathering candidate features: about 4M floats per block.
_BLOCK_FLOATS = 2**22


@dataclass(frozen=True, eq=False)
class SimulatedCatalogue:
    """Rows of a simulated catalogue
    ([`simulate_catalogue`][opboost.simulation.items.simulate_catalogue],
    [`test_rows`][opboost.simulation.items.SimulatedCatalogue.test_rows]).

    Attributes
    ----------
    logged
        LoggedBandit with contexts (n, d_x), ``n_actions`` = number of items,
        ``action_features`` (n_actions, d_item), ``candidates`` an (n, n_actions) boolean CSR
        matrix with ``n_candidates`` items per row, and the logged actions, propensities and
        rewards. ``logging_probs`` is None (it would be dense (n, n_actions)); the logger's
        distribution over each row's candidates is ``candidate_probs``.
    candidate_items
        (n, c) int64, each row's candidate items, ascending.
    candidate_probs
        (n, c), the logger's probabilities of those items (rows sum to 1).
    candidate_means
        (n, c), their true mean rewards mu(x_i, a) (times the row's
        examination probability e_p with ``position_bias``; the log's ``positions`` hold p).
    new_items
        int64 ids of the items that are not in the training catalogue (empty for the
        training rows; for [`test_rows`][opboost.simulation.items.SimulatedCatalogue.test_rows] with
        ``new_items=True``, every candidate).
    world
        the reward parameters (W, b, intercept), the logger's ``logging_beta`` and the
        training catalogue's item features.
    """

    logged: LoggedBandit
    candidate_items: np.ndarray
    candidate_probs: np.ndarray
    candidate_means: np.ndarray
    new_items: np.ndarray
    world: CatalogueWorld

    @property
    def item_features(self) -> np.ndarray:
        """(n_actions, d_item): the features of every item these rows may use."""
        return self.logged.action_features

    def mean_reward(self, contexts: Any, item_features: Any) -> np.ndarray:
        """The true mean reward mu(x, a) = sigmoid(intercept + x^T W phi(a) + b^T phi(a)):
        (m, k) for contexts (m, d_x) and item_features (k, d_item + J), or (m, c) for
        item_features (m, c, d_item + J) (each row's own items); with ``position_bias``, at
        an examined position (multiply by e_p for position p)."""
        return expit(self.world.reward_intercept + self.world.scores(contexts, item_features))

    @property
    def logging_value(self) -> float:
        """The logger's true value on these rows: mean_i sum_c candidate_probs * means."""
        return float(np.mean(np.sum(self.candidate_probs * self.candidate_means, axis=1)))

    def policy_value(self, action_probs: Any) -> float:
        """The true value on these rows (at their positions, with ``position_bias``) of a
        policy given as (n,) integer actions or an (n, n_actions) probability matrix (the
        forms of ``check_action_probs``; no mass outside the candidates)."""
        raw, data = np.asarray(action_probs), self.logged
        if _are_candidate_actions(raw, data):  # no (n, n_actions) one-hot matrix needed
            features = self.item_features[raw][:, None, :]
            means = self.mean_reward(data.contexts, features)
            if self.world.position_bias is not None:
                means = means * self.world.position_factor(data.positions)
            return float(np.mean(means))
        probs = check_action_probs(data, raw, "SimulatedCatalogue.policy_value")
        on_candidates = np.take_along_axis(probs, self.candidate_items, axis=1)
        return float(np.mean(np.sum(on_candidates * self.candidate_means, axis=1)))

    def test_rows(
        self,
        n: int,
        *,
        new_items: bool = True,
        n_new_items: int | None = None,
        n_candidates: int | None = None,
        random_state: Any = None,
    ) -> SimulatedCatalogue:
        """Held-out rows of the same world: fresh contexts, candidates, logged actions and
        rewards. With ``new_items`` (default), ``n_new_items`` new items (default: as many as
        the training catalogue) with fresh features get ids after the training items, and
        every candidate is one of them; otherwise candidates come from the training
        catalogue. ``n_candidates`` defaults to the training rows'; ``random_state`` None
        derives a seed from the simulation's, so repeated calls give the same rows."""
        owner = "SimulatedCatalogue.test_rows"
        n_train = self.world.item_features.shape[0]
        count = n_train if n_new_items is None else n_new_items
        if new_items:
            check_scalar(count, "n_new_items", owner, kind=Integral, low=1)
        c = self.candidate_items.shape[1] if n_candidates is None else n_candidates
        pool_size = count if new_items else n_train
        check_scalar(c, "n_candidates", owner, kind=Integral, low=1, high=pool_size)
        check_scalar(n, "n", owner, kind=Integral, low=1)
        if random_state is None:
            rng = np.random.default_rng([self.world.seed, 1])
        else:
            rng = check_random_state(random_state)
        features, first = self.world.item_features, 0
        if new_items:
            new = self.world.new_item_features(rng, count)
            features, first = np.vstack([features, new]), n_train
        return _sample_rows(self.world, features, first, len(features) - first, n, c, rng)


def _are_candidate_actions(raw: np.ndarray, data: LoggedBandit) -> bool:
    """Whether ``raw`` is an (n,) integer array of in-range candidate actions."""
    if raw.shape != (len(data),) or raw.dtype.kind not in "iu":
        return False
    if (raw < 0).any() or (raw >= data.n_actions).any():
        return False
    return bool(is_candidate(data.candidates, np.arange(len(data)), raw).all())


def simulate_catalogue(
    n: int,
    n_items: int,
    n_candidates: int,
    d_x: int,
    d_item: int,
    *,
    random_state: Any,
    logging_beta: float = 1.0,
    reward_scale: float = 1.0,
    reward_intercept: float = 0.0,
    popularity_scale: float | None = None,
    item_categories: Sequence[int] = (),
    context_categories: Sequence[int] = (),
    position_bias: Sequence[float] | None = None,
    interaction: str = "bilinear",
) -> SimulatedCatalogue:
    """Simulate ``n`` logged rows of a catalogue of ``n_items`` items with features.

    Parameters
    ----------
    n
        rows, >= 1.
    n_items
        items in the training catalogue (the log's ``n_actions``), >= 2.
    n_candidates
        distinct candidate items per row, in [1, n_items].
    d_x, d_item
        context and numeric item-feature dimensions, >= 1.
    random_state
        seed (int, Generator or None) of everything, test rows included.
    logging_beta
        the logger's inverse temperature on the score s(x, a); 0 is uniform over
        the candidates, negative prefers bad items.
    reward_scale
        >= 0, the spread of the score (0: every item has mean
        sigmoid(reward_intercept)).
    reward_intercept
        shifts the mean rewards (negative: rarer positive rewards).
    popularity_scale
        >= 0, the spread of the context-free (popularity) part of the score;
        None: ``reward_scale``.
    item_categories
        the number of categories (>= 2) of each categorical item column; empty:
        numeric item features only.
    context_categories
        the number of categories (>= 2) of each one-hot user feature, summing
        to ``d_x``; empty: Gaussian contexts.
    position_bias
        examination probabilities in (0, 1] of positions 0..P-1; None: no
        positions.
    interaction
        "bilinear" (default): the score's context x item term is x^T W phi;
        "cosine": c cos(pi x^T W phi / c) with c = ``reward_scale``, a world no bilinear model
        (Vowpal Wabbit's ``-q``) fits.

    Notes
    -----
    Returns a [`SimulatedCatalogue`][opboost.simulation.items.SimulatedCatalogue]; the module
    docstring has the model.
    """
    owner = "simulate_catalogue"
    for name, value, low in (("n", n, 1), ("n_items", n_items, 2), ("d_x", d_x, 1)):
        check_scalar(value, name, owner, kind=Integral, low=low)
    check_scalar(d_item, "d_item", owner, kind=Integral, low=1)
    check_scalar(n_candidates, "n_candidates", owner, kind=Integral, low=1, high=n_items)
    check_scalar(logging_beta, "logging_beta", owner, kind=Real)
    check_scalar(reward_scale, "reward_scale", owner, kind=Real, low=0.0)
    check_scalar(reward_intercept, "reward_intercept", owner, kind=Real)
    popularity = reward_scale if popularity_scale is None else popularity_scale
    check_scalar(popularity, "popularity_scale", owner, kind=Real, low=0.0)
    reals = {"logging_beta": logging_beta, "reward_scale": reward_scale}
    for name, value in {**reals, "reward_intercept": reward_intercept}.items():
        if not np.isfinite(value):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be finite. Got {value!r} instead."
            )
    if not np.isfinite(popularity):
        raise InvalidParameterError(
            f"The 'popularity_scale' parameter of {owner} must be finite. Got {popularity!r} "
            f"instead."
        )
    item_cats = category_counts(item_categories, "item_categories", owner)
    context_cats = category_counts(context_categories, "context_categories", owner)
    if context_cats and sum(context_cats) != d_x:
        raise InvalidParameterError(
            f"The 'context_categories' parameter of {owner} must sum to d_x={d_x} (one one-hot "
            f"column per category). Got {context_cats}, which sums to {sum(context_cats)}; "
            f"pass d_x={sum(context_cats)}."
        )
    bias = None if position_bias is None else position_bias_array(position_bias, owner)
    if interaction not in ("bilinear", "cosine"):
        raise InvalidParameterError(
            f"The 'interaction' parameter of {owner} must be 'bilinear' or 'cosine'. Got "
            f"{interaction!r} instead."
        )
    rng = check_random_state(random_state)
    features = rng.normal(size=(n_items, d_item))
    weights = rng.normal(scale=reward_scale / np.sqrt(d_x * d_item), size=(d_x, d_item))
    reward_bias = rng.normal(scale=popularity / np.sqrt(d_item), size=d_item)
    if item_cats:  # drawn only with categorical columns: the default world stays unchanged
        features = np.hstack([features, categorical_codes(rng, n_items, item_cats)])
        spread = np.sqrt(len(item_cats))
        category_weights = tuple(
            rng.normal(scale=reward_scale / np.sqrt(d_x) / spread, size=(c, d_x)) for c in item_cats
        )
        category_bias = tuple(rng.normal(scale=popularity / spread, size=c) for c in item_cats)
    else:
        category_weights, category_bias = (), ()
    world = CatalogueWorld(
        item_features=features,
        reward_weights=weights,
        reward_bias=reward_bias,
        reward_intercept=float(reward_intercept),
        logging_beta=float(logging_beta),
        seed=int(rng.integers(2**63 - 1)),
        category_weights=category_weights,
        category_bias=category_bias,
        context_categories=context_cats,
        position_bias=bias,
        interaction=interaction,
        reward_scale=float(reward_scale),
    )
    return _sample_rows(world, world.item_features, 0, n_items, n, n_candidates, rng)


def _sample_rows(
    world: CatalogueWorld,
    features: np.ndarray,
    first: int,
    pool: int,
    n: int,
    c: int,
    rng: np.random.Generator,
) -> SimulatedCatalogue:
    """n rows whose c candidates are drawn from items first .. first + pool - 1."""
    contexts = world.contexts(rng, n)
    items = first + distinct_draws(rng, n, pool, c)
    positions = None
    if world.position_bias is not None:
        positions = rng.integers(0, len(world.position_bias), size=n)
    scores = np.empty((n, c))
    block = max(1, _BLOCK_FLOATS // (c * features.shape[1]))
    for start in range(0, n, block):  # blocks of rows bound the (rows, c, d_item) gather
        rows = slice(start, start + block)
        scores[rows] = world.scores(contexts[rows], features[items[rows]])
    logits = world.logging_beta * scores
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    means = expit(world.reward_intercept + scores)
    if positions is not None:
        means *= world.position_factor(positions)
    # inverse CDF: the first candidate whose cumulative probability exceeds u in [0, total),
    # so a candidate of probability 0 (softmax underflow) is never picked
    cdf = np.cumsum(probs, axis=1)
    picked = np.minimum((cdf <= rng.random((n, 1)) * cdf[:, -1:]).sum(axis=1), c - 1)
    rows = np.arange(n)
    rewards = (rng.random(n) < means[rows, picked]).astype(np.float64)
    candidates = sp.csr_matrix(
        (np.ones(n * c, dtype=bool), items.ravel(), np.arange(0, n * c + 1, c)),
        shape=(n, len(features)),
    )
    logged = LoggedBandit(
        contexts=contexts,
        actions=items[rows, picked],
        propensities=probs[rows, picked],
        rewards=rewards,
        n_actions=len(features),
        positions=positions,
        action_features=features,
        candidates=candidates,
        item_schema=world.item_schema,
    )
    new_items = np.arange(world.item_features.shape[0], len(features), dtype=np.int64)
    return SimulatedCatalogue(logged, items, probs, means, new_items, world)


def distinct_draws(rng: np.random.Generator, n: int, pool: int, c: int) -> np.ndarray:
    """(n, c) int64: per row, c distinct values of range(pool) drawn uniformly, ascending.

    Small pools sort random keys (n * pool work); large ones use Floyd's algorithm, one
    column at a time over all rows (n * c^2 work, independent of the pool size)."""
    if pool <= 4 * c or n * pool <= 2**22:
        picks = np.argpartition(rng.random((n, pool)), c - 1, axis=1)[:, :c]
    else:
        picks = np.empty((n, c), dtype=np.int64)
        for j, top in enumerate(range(pool - c, pool)):
            draw = rng.integers(0, top + 1, size=n)
            taken = (picks[:, :j] == draw[:, None]).any(axis=1)
            picks[:, j] = np.where(taken, top, draw)
    return np.sort(picks, axis=1).astype(np.int64)
