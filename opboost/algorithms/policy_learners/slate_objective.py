"""The IPS-weighted Plackett–Luce surrogate of a slate's value, the objective of
``slate_boost``'s boosting rounds (``opboost.algorithms.policy_learners.slate_boost``).

Scores F (n, K) define a Plackett–Luce ranking policy; the conditional probability of the
logged item a_{i,k} at position k given the logged items above it is

    p_{ik}(F) = exp F_{i,a_{ik}} / sum_{b in R_{ik}} exp F_{ib},

R_{ik} = row i's candidates (finite scores) less a_{i,1..k-1}. The surrogate loss is

    L(F) = -(1/n) sum_i sum_k w_{ik} log p_{ik}(F),

with w_{ik} >= 0 the importance-weighted click of (impression i, position k): under the
position-based model w_{ik} = alpha_k r_{ik} / pi_0(a_{ik} at k) (independent IPS), under the
cascade w_{ik} = alpha_k r_{ik} / pi_0(a_{i,1..k}) (reward-interaction IPS). At position 1
p_{i1} is the policy's marginal, so the first position's term is the log of the IPS value's
integrand (the POEM-free "log-IPS" surrogate); for a row-wise free F its optimum puts each
position's probability on the items in proportion to their IPS-weighted clicks, so the top
of F is the item of the largest position-debiased click estimate.

The gradient and the Hessian's diagonal, for the boosting rounds:

    dL/dF_{ib} = (1/n) sum_k w_{ik} (p_{ik}(b) - 1[b = a_{ik}]),
    d2L/dF_{ib}^2 = (1/n) sum_k w_{ik} p_{ik}(b) (1 - p_{ik}(b)),

p_{ik}(b) the probability of b among R_{ik} (0 on items not in R_{ik}).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["slate_surrogate"]


def slate_surrogate(
    scores: np.ndarray, slates: np.ndarray, weights: np.ndarray, *, per_row: bool = False
) -> tuple[Any, np.ndarray, np.ndarray]:
    """The surrogate loss, its gradient and its Hessian's diagonal.

    Parameters
    ----------
    scores
        (n, K) F, -inf for items a row cannot show.
    slates
        (n, L) logged item ids (-1: position not logged; it is not removed from R below).
    weights
        (n, L) w_{ik} >= 0 (0 where the slot is -1).
    per_row
        return each impression's loss -sum_k w_{ik} log p_{ik}(F), (n,), instead of L(F)
        (their mean).

    Returns
    -------
    loss, grad, hess
        a float (or the (n,) losses) and two (n, K) arrays (0 outside the candidates).
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, n_items = scores.shape
    rows = np.arange(n)
    live = np.isfinite(scores)
    shifted = np.where(live, scores - np.max(scores, axis=1, keepdims=True), -np.inf)
    remaining = np.exp(shifted)  # exp F over R_{ik}, items above removed as k grows
    loss = np.zeros(n)
    grad = np.zeros((n, n_items))
    hess = np.zeros((n, n_items))
    for k in range(slates.shape[1]):
        shown = slates[:, k]
        logged = shown >= 0
        w = np.where(logged, weights[:, k], 0.0)
        item = np.maximum(shown, 0)
        total = remaining.sum(axis=1)
        prob = remaining / total[:, None]
        chosen = prob[rows, item]
        use = w > 0
        loss[use] -= w[use] * np.log(chosen[use])
        grad += w[:, None] * prob
        grad[rows, item] -= w
        hess += w[:, None] * prob * (1.0 - prob)
        remaining[rows[logged], shown[logged]] = 0.0
    return (loss if per_row else float(loss.sum()) / n), grad / n, hess / n
