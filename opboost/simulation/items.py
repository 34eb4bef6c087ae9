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

Everything is vectorised over rows (no per-row Python loop), so n = 1e5 rows take about a
second. Held-out rows (:meth:`SimulatedCatalogue.test_rows`) can draw their candidates from
new items, absent from the training logs, with features from the same distribution: the
cold-start setting that item features are for.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from opboost.api.candidates import is_candidate
from opboost.api.data import LoggedBandit
from opboost.api.estimator import check_action_probs
from opboost.api.exceptions import InvalidParameterError
from opboost.api.validation import check_random_state, check_scalar

__all__ = ["SimulatedCatalogue", "simulate_catalogue"]

#: Rows per block when gathering candidate features: about 4M floats per block.
_BLOCK_FLOATS = 2**22


@dataclass(frozen=True)
class CatalogueWorld:
    """The fixed parts of a simulated catalogue: reward parameters, logger temperature and
    the training catalogue's item features (n_items, d_item)."""

    item_features: np.ndarray
    reward_weights: np.ndarray
    reward_bias: np.ndarray
    reward_intercept: float
    logging_beta: float
    seed: int

    def scores(self, contexts: np.ndarray, item_features: np.ndarray) -> np.ndarray:
        """s(x, a) = x^T W phi(a) + b^T phi(a): (m, k) for item_features (k, d_item) (every
        pair), or (m, c) for item_features (m, c, d_item) (row i's own c items)."""
        xw = np.asarray(contexts, dtype=np.float64) @ self.reward_weights
        features = np.asarray(item_features, dtype=np.float64)
        if features.ndim == 2:
            return xw @ features.T + features @ self.reward_bias
        return np.einsum("md,mcd->mc", xw, features) + features @ self.reward_bias


@dataclass(frozen=True, eq=False)
class SimulatedCatalogue:
    """Rows of a simulated catalogue (:func:`simulate_catalogue`, :meth:`test_rows`).

    Attributes
    ----------
    logged : LoggedBandit with contexts (n, d_x), ``n_actions`` = number of items,
        ``action_features`` (n_actions, d_item), ``candidates`` an (n, n_actions) boolean CSR
        matrix with ``n_candidates`` items per row, and the logged actions, propensities and
        rewards. ``logging_probs`` is None (it would be dense (n, n_actions)); the logger's
        distribution over each row's candidates is ``candidate_probs``.
    candidate_items : (n, c) int64, each row's candidate items, ascending.
    candidate_probs : (n, c), the logger's probabilities of those items (rows sum to 1).
    candidate_means : (n, c), their true mean rewards mu(x_i, a).
    new_items : int64 ids of the items that are not in the training catalogue (empty for the
        training rows; for :meth:`test_rows` with ``new_items=True``, every candidate).
    world : the reward parameters (W, b, intercept), the logger's ``logging_beta`` and the
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
        (m, k) for contexts (m, d_x) and item_features (k, d_item), or (m, c) for
        item_features (m, c, d_item) (each row's own items)."""
        return expit(self.world.reward_intercept + self.world.scores(contexts, item_features))

    @property
    def logging_value(self) -> float:
        """The logger's true value on these rows: mean_i sum_c candidate_probs * means."""
        return float(np.mean(np.sum(self.candidate_probs * self.candidate_means, axis=1)))

    def policy_value(self, action_probs: Any) -> float:
        """The true value on these rows of a policy given as (n,) integer actions or an
        (n, n_actions) probability matrix (the forms of ``check_action_probs``; no mass
        outside the candidates)."""
        raw, data = np.asarray(action_probs), self.logged
        if _are_candidate_actions(raw, data):  # no (n, n_actions) one-hot matrix needed
            features = self.item_features[raw][:, None, :]
            return float(np.mean(self.mean_reward(data.contexts, features)))
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
            new = rng.normal(size=(count, features.shape[1]))
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
) -> SimulatedCatalogue:
    """Simulate ``n`` logged rows of a catalogue of ``n_items`` items with features.

    Parameters
    ----------
    n : rows, >= 1.
    n_items : items in the training catalogue (the log's ``n_actions``), >= 2.
    n_candidates : distinct candidate items per row, in [1, n_items].
    d_x, d_item : context and item-feature dimensions, >= 1.
    random_state : seed (int, Generator or None) of everything, test rows included.
    logging_beta : the logger's inverse temperature on the score s(x, a); 0 is uniform over
        the candidates, negative prefers bad items.
    reward_scale : >= 0, the spread of the score (0: every item has mean
        sigmoid(reward_intercept)).
    reward_intercept : shifts the mean rewards (negative: rarer positive rewards).

    Notes
    -----
    Returns a :class:`SimulatedCatalogue`; the module docstring has the model.
    """
    owner = "simulate_catalogue"
    for name, value, low in (("n", n, 1), ("n_items", n_items, 2), ("d_x", d_x, 1)):
        check_scalar(value, name, owner, kind=Integral, low=low)
    check_scalar(d_item, "d_item", owner, kind=Integral, low=1)
    check_scalar(n_candidates, "n_candidates", owner, kind=Integral, low=1, high=n_items)
    check_scalar(logging_beta, "logging_beta", owner, kind=Real)
    check_scalar(reward_scale, "reward_scale", owner, kind=Real, low=0.0)
    check_scalar(reward_intercept, "reward_intercept", owner, kind=Real)
    reals = {"logging_beta": logging_beta, "reward_scale": reward_scale}
    for name, value in {**reals, "reward_intercept": reward_intercept}.items():
        if not np.isfinite(value):
            raise InvalidParameterError(
                f"The {name!r} parameter of {owner} must be finite. Got {value!r} instead."
            )
    rng = check_random_state(random_state)
    world = CatalogueWorld(
        item_features=rng.normal(size=(n_items, d_item)),
        reward_weights=rng.normal(scale=reward_scale / np.sqrt(d_x * d_item), size=(d_x, d_item)),
        reward_bias=rng.normal(scale=reward_scale / np.sqrt(d_item), size=d_item),
        reward_intercept=float(reward_intercept),
        logging_beta=float(logging_beta),
        seed=int(rng.integers(2**63 - 1)),
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
    d_x = world.reward_weights.shape[0]
    contexts = rng.normal(size=(n, d_x))
    items = first + distinct_draws(rng, n, pool, c)
    scores = np.empty((n, c))
    block = max(1, _BLOCK_FLOATS // (c * features.shape[1]))
    for start in range(0, n, block):  # blocks of rows bound the (rows, c, d_item) gather
        rows = slice(start, start + block)
        scores[rows] = world.scores(contexts[rows], features[items[rows]])
    logits = world.logging_beta * scores
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    means = expit(world.reward_intercept + scores)
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
        action_features=features,
        candidates=candidates,
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
