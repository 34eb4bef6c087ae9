"""The doubly robust slate values per impression and position (Kiyohara et al. 2022), shared
by the slate DR estimators (``opboost.algorithms.estimators.slate_dr``, which states the
formulas) and ``slate_boost``'s held-out choice of its boosting rounds
(``opboost.algorithms.policy_learners.slate_rounds``).

q (n, L, K) is a reward model, q[i, k, a] ~ the reward at position k of item a for
impression i; any q fitted without row i keeps row i's value unbiased.
"""

from __future__ import annotations

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.slates import SlateLogs, SlatePolicy

__all__ = ["cascade_dr_terms", "impression_values", "independent_dr_terms"]


def _logged_q(logs: SlateLogs, q: np.ndarray) -> np.ndarray:
    """q[i, k, a_{i,k}], (n, L) (0 where the position was not logged)."""
    shown = np.maximum(logs.slates, 0)[:, :, None]
    return np.where(logs.observed, np.take_along_axis(q, shown, axis=2)[:, :, 0], 0.0)


def _expected_q(dist: np.ndarray | None, q: np.ndarray, owner: str, name: str) -> np.ndarray:
    """sum_a dist[i, k, a] q[i, k, a], (n, L)."""
    if dist is None:
        raise InvalidParameterError(
            f"{owner}: the SlatePolicy has no {name} (n, L, K), which the doubly robust "
            f"baseline needs; build it with SlatePolicy.from_ranking or "
            f"SlatePolicy.plackett_luce, or give {name}=..."
        )
    return np.einsum("ika,ika->ik", dist, q)


def independent_dr_terms(
    logs: SlateLogs, policy: SlatePolicy, q: np.ndarray, owner: str
) -> np.ndarray:
    """The (n, L) independent DR terms
    w_{i,k} (r_{i,k} - q[i,k,a_{i,k}]) + sum_a pi(a at k|x_i) q[i,k,a]."""
    weight = np.asarray(policy.marginal) / logs.marginal_propensities
    baseline = _expected_q(policy.marginal_dist, q, owner, "marginal_dist")
    return weight * (logs.rewards - _logged_q(logs, q)) + baseline


def cascade_dr_terms(
    logs: SlateLogs, policy: SlatePolicy, q: np.ndarray, prefix: np.ndarray, owner: str
) -> np.ndarray:
    """The (n, L) cascade DR terms W_{i,k} (r_{i,k} - q[i,k,a_{i,k}])
    + W_{i,k-1} sum_a pi(a at k | x_i, a_{i,1..k-1}) q[i,k,a], with ``prefix`` the logger's
    (n, L) pi_0(a_{i,1..k} | x_i)."""
    weight = np.asarray(policy.cascade) / prefix
    above = np.hstack([np.ones((len(logs), 1)), weight[:, :-1]])
    baseline = _expected_q(policy.conditional_dist, q, owner, "conditional_dist")
    return weight * (logs.rewards - _logged_q(logs, q)) + above * baseline


def impression_values(logs: SlateLogs, terms: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Each impression's value (n,): its logged positions' ``terms`` weighted by ``alpha``
    (L,)."""
    return np.where(logs.observed, terms, 0.0) @ alpha
