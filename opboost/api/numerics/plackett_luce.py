"""Plackett–Luce rankings of (n, m) scores: sampling and exact position probabilities.

A Plackett–Luce policy with scores s_i (m,) and temperature T draws a ranking top-down: the
item at position k is a among the items not yet placed with probability
w_a / sum_{b not placed} w_b, w = exp(s / T). Scores of -inf are items the row cannot show
(not among its candidates): their probability is 0 everywhere.

* ``sample_plackett_luce`` draws L positions (the Gumbel top-L trick);
* ``prefix_probabilities`` gives pi(a_{i,1..k} | x_i), the probability of a ranking's
  first k items (the cascade, or reward-interaction, propensity);
* ``conditional_distributions`` gives pi(a at k | x_i, a_{i,1..k-1}), each position's
  distribution given the ranking's items above it;
* ``marginal_distributions`` gives pi(a at k | x_i), exact, by summing over the ordered
  prefixes of k-1 items: O(n m^L) work, meant for small m (a row's candidates) and L.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "conditional_distributions",
    "marginal_distributions",
    "plackett_luce_weights",
    "prefix_probabilities",
    "sample_plackett_luce",
]

#: Rows per block in ``marginal_distributions`` (bounds its (rows, m^(L-1), m) arrays).
_BLOCK_CELLS = 4_000_000


def plackett_luce_weights(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """w = exp((s - max_a s) / T) per row, (n, m); 0 where the score is -inf."""
    scores = np.asarray(scores, dtype=np.float64)
    top = np.max(scores, axis=1, keepdims=True)
    return np.exp((scores - top) / temperature)


def sample_plackett_luce(
    scores: np.ndarray, length: int, rng: np.random.Generator, temperature: float = 1.0
) -> np.ndarray:
    """(n, length) integer rankings (column indices of ``scores``) drawn from the
    Plackett–Luce policy: the ``length`` largest of s / T + Gumbel noise, in order."""
    scores = np.asarray(scores, dtype=np.float64)
    noisy = scores / temperature + rng.gumbel(size=scores.shape)
    order = np.argsort(-noisy, axis=1, kind="stable")[:, :length]
    return order


def prefix_probabilities(
    scores: np.ndarray, rankings: np.ndarray, temperature: float = 1.0
) -> np.ndarray:
    """pi(a_{i,1..k} | x_i), shape (n, L): the probability that the policy's first k
    positions are ``rankings[i, :k]`` in that order (the product of the conditional
    probabilities of positions 1..k)."""
    return np.cumprod(_chosen_conditionals(scores, rankings, temperature), axis=1)


def _chosen_conditionals(scores: np.ndarray, rankings: np.ndarray, temperature: float):
    """pi(a_{i,k} | x_i, a_{i,1..k-1}), shape (n, L)."""
    w = plackett_luce_weights(scores, temperature)
    rankings = np.asarray(rankings)
    chosen = np.take_along_axis(w, rankings, axis=1)
    # Each denominator sums the weights still free, not total - placed: with a dominant item
    # (a low temperature) that difference cancels to 0 once the item is placed.
    free = np.empty_like(chosen)
    remaining = w.copy()
    rows = np.arange(len(w))
    for k in range(rankings.shape[1]):
        free[:, k] = remaining.sum(axis=1)
        remaining[rows, rankings[:, k]] = 0.0
    return chosen / free


def conditional_distributions(
    scores: np.ndarray, rankings: np.ndarray, temperature: float = 1.0
) -> np.ndarray:
    """pi(a at k | x_i, rankings[i, :k]), shape (n, L, m): position k's distribution over
    every item given the ranking's items above it (0 on those items)."""
    w = plackett_luce_weights(scores, temperature)
    n, length = np.shape(rankings)
    out = np.empty((n, length, w.shape[1]))
    remaining = w.copy()
    rows = np.arange(n)
    for k in range(length):
        out[:, k] = remaining / remaining.sum(axis=1, keepdims=True)
        remaining[rows, rankings[:, k]] = 0.0
    return out


def marginal_distributions(scores: np.ndarray, length: int, temperature: float = 1.0) -> np.ndarray:
    """pi(a at k | x_i), shape (n, length, m), exact: position k's probability of item a
    summed over every ordered prefix of k - 1 other items."""
    w = plackett_luce_weights(scores, temperature)
    n, m = w.shape
    out = np.empty((n, length, m))
    block = max(1, _BLOCK_CELLS // max(1, m**length))
    for start in range(0, n, block):
        out[start : start + block] = _block_marginals(w[start : start + block], length)
    return out


def _block_marginals(w: np.ndarray, length: int) -> np.ndarray:
    """Marginals of one block of rows; prefixes are kept as (rows, P) probabilities and a
    (rows, P, m) mask of placed items, P = m^(k-1) ordered
    tuples (tuples that repeat an item carry probability 0)."""
    n, m = w.shape
    out = np.empty((n, length, m))
    prob = np.ones((n, 1))
    placed = np.zeros((n, 1, m), dtype=bool)
    for k in range(length):
        free = np.where(placed, 0.0, w[:, None, :])  # (n, P, m)
        denom = free.sum(axis=2, keepdims=True)  # not total - placed: that cancels to 0
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(denom > 0, free / denom, 0.0)
        nxt = prob[:, :, None] * step  # (n, P, m): prefix then item a at position k
        out[:, k] = nxt.sum(axis=1)
        if k + 1 < length:
            prob = nxt.reshape(n, -1)
            grown = placed[:, :, None, :] | np.eye(m, dtype=bool)[None, None]
            placed = grown.reshape(n, -1, m)
    return out
