"""Exploration with exact propensities: the distribution a policy is deployed with, drawn
from row by row, for single actions and for slates.

A deployed policy explores around its scores F(x) (m, K), over each row's candidates (the
actions whose score is not -inf: a masked ``decision_function`` gives -inf outside
``candidates``); K_i is row i's number of candidates:

* epsilon-greedy (``temperature=None``, the default): the action ``predict`` plays gets
  ``1 - epsilon + epsilon / K_i``, every other candidate ``epsilon / K_i`` (tied maxima go to
  the first of them in the policy's ``tie_order``, else to the lower index, as in ``predict``:
  with ``epsilon=0`` a draw is ``predict``'s action);
* softmax (``temperature=T > 0``): ``(1 - epsilon) softmax(F / T) + epsilon / K_i`` on the
  candidates.

Slates (:func:`sample_slates`) are ``rank``'s top k, or with a temperature Plackett–Luce
slates of F / T (softmax draws without replacement), mixed with ``epsilon`` uniform orderings
of the candidates; their per-position propensities are exact (the Plackett–Luce marginals
by ``opboost.api.numerics.plackett_luce``).

:func:`draw` samples one action per row by inverse CDF from given uniforms, and the
propensity it returns is exactly the distribution's entry for the returned action.
:class:`ExplorationMixin` gives every scoring class (``Policy``, the ``Booster``, every
``PolicyLearner``) ``action_distribution``, ``sample`` and ``sample_slate`` from its
``decision_function``.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from opboost.api.data.tabular_frames import action_ids_of
from opboost.api.exceptions import InvalidParameterError
from opboost.api.numerics.memory_limit import check_memory
from opboost.api.numerics.plackett_luce import marginal_distributions, sample_plackett_luce
from opboost.api.numerics.softmax import softmax
from opboost.api.serving.masks import greedy, mask_scores, serving_mask, top_k
from opboost.api.serving.tie_order import recorded_tie_order
from opboost.api.validation import check_random_state

__all__ = [
    "ExplorationMixin",
    "check_exploration",
    "draw",
    "exploration_distribution",
    "sample_slates",
    "served_metadata",
    "served_tie_order",
]


def check_exploration(epsilon: Any, temperature: Any, owner: str) -> tuple[float, float | None]:
    """(epsilon, temperature) checked: epsilon a number in [0, 1], temperature None or a
    finite number > 0; ``InvalidParameterError`` naming the argument otherwise."""
    if (
        not isinstance(epsilon, numbers.Real)
        or isinstance(epsilon, bool)
        or not (0.0 <= epsilon <= 1.0)
    ):
        raise InvalidParameterError(
            f"{owner}: epsilon must be a number in [0, 1] (the share of uniform exploration "
            f"over each row's candidates). Got {epsilon!r}."
        )
    if temperature is None:
        return float(epsilon), None
    if (
        not isinstance(temperature, numbers.Real)
        or isinstance(temperature, bool)
        or not math.isfinite(temperature)
        or temperature <= 0
    ):
        raise InvalidParameterError(
            f"{owner}: temperature must be None (epsilon-greedy over the argmax) or a finite "
            f"number > 0 (softmax of scores / temperature). Got {temperature!r}."
        )
    return float(epsilon), float(temperature)


def _support(scores: np.ndarray, owner: str) -> np.ndarray:
    """The candidates of each row, (m, K) bool: the entries whose score is not -inf."""
    if scores.ndim != 2:
        raise InvalidParameterError(
            f"{owner}: scores must be a 2-D (rows, actions) array. Got shape {scores.shape}."
        )
    bad = np.isnan(scores) | np.isposinf(scores)
    if bad.any():
        i, a = (int(v) for v in np.argwhere(bad)[0])
        raise InvalidParameterError(
            f"{owner}: the score of action {a} in row {i} is {scores[i, a]}; scores must be "
            f"finite (or -inf outside a row's candidates)."
        )
    return serving_mask(~np.isneginf(scores), scores.shape, owner)  # a row needs a candidate


def exploration_distribution(
    scores: np.ndarray,
    *,
    epsilon: float = 0.0,
    temperature: float | None = None,
    owner: str = "exploration_distribution",
    tie_order: np.ndarray | None = None,
) -> np.ndarray:
    """The (m, K) distribution a policy with ``scores`` (m, K) and ``tie_order`` (K,) or None
    is deployed with (module docstring); 0 outside each row's candidates (-inf scores), rows
    sum to 1."""
    epsilon, temperature = check_exploration(epsilon, temperature, owner)
    scores = np.asarray(scores, dtype=np.float64)
    support = _support(scores, owner)
    if temperature is not None:
        best = softmax(scores / temperature)
    else:
        best = np.zeros_like(scores)
        best[np.arange(len(scores)), greedy(scores, tie_order)] = 1.0
    if epsilon == 0.0:
        return best
    uniform = support / support.sum(axis=1, keepdims=True)
    return (1.0 - epsilon) * best + epsilon * uniform


def draw(probs: np.ndarray, uniforms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One action per row of the (m, K) distribution ``probs`` by inverse CDF from
    ``uniforms`` (m,) in [0, 1): ``(actions, propensities)``, (m,) int64 and float64, where
    ``propensities[i] == probs[i, actions[i]]`` exactly. An action of probability 0 is never
    returned: the uniform is scaled to the row's total (for a total near 1, u < 1 stays
    below it after rounding), and the first action whose cumulative sum exceeds it has mass."""
    probs = np.asarray(probs, dtype=np.float64)
    cumulative = np.cumsum(probs, axis=1)
    u = np.asarray(uniforms, dtype=np.float64) * cumulative[:, -1]
    actions = np.count_nonzero(cumulative <= u[:, None], axis=1).astype(np.int64)
    return actions, probs[np.arange(len(actions)), actions]


def sample_slates(
    scores: np.ndarray,
    k: int,
    *,
    epsilon: float = 0.0,
    temperature: float | None = None,
    random_state: Any = None,
    owner: str = "sample_slates",
    tie_order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Slates of ``k`` distinct actions per row: with probability ``1 - epsilon`` the ranked
    slate (``temperature=None``: :func:`~opboost.api.serving.masks.top_k`, best first, ties in
    ``tie_order`` (K,), else to the lower index) or a Plackett–Luce slate of scores /
    ``temperature`` (softmax without replacement), else a uniformly random ordering of the
    row's candidates.

    Returns ``(slates, propensities)``, both (m, k): ``propensities[i, j]`` is the marginal
    probability that position j shows ``slates[i, j]``, ``(1 - epsilon) p_ij(a) + epsilon /
    K_i`` with p_ij(a) = 1[ranked_ij = a], or the Plackett–Luce marginal (exact, summed over
    the orderings above j: O(K^k) work and memory per row, for small catalogues or
    ``candidates``); positions beyond a row's K_i candidates hold -1 with propensity 1."""
    epsilon, temperature = check_exploration(epsilon, temperature, owner)
    scores = np.asarray(scores, dtype=np.float64)
    support = _support(scores, owner)
    ranked = top_k(scores, k, tie_order)
    rng = check_random_state(random_state)
    m, width = ranked.shape
    explore = rng.random(m) < epsilon
    shuffled = top_k(np.where(support, rng.random(scores.shape), -np.inf), width)
    n_candidates = support.sum(axis=1, keepdims=True)
    if temperature is None:
        slates = np.where(explore[:, None], shuffled, ranked)
        chosen = slates == ranked
    else:
        n_items = scores.shape[1]
        check_memory(
            32 * n_items**width,
            owner,
            f"the Plackett-Luce position marginals of {n_items:,} actions over {width} positions",
            "Pass candidates (fewer actions per row), a shorter slate, or temperature=None.",
        )
        drawn = sample_plackett_luce(scores, width, rng, temperature)
        drawn = np.where(np.arange(width) < n_candidates, drawn, -1)
        slates = np.where(explore[:, None], shuffled, drawn)
        marginal = marginal_distributions(scores, width, temperature)
        shown = np.maximum(slates, 0)[:, :, None]
        chosen = np.take_along_axis(marginal, shown, axis=2)[:, :, 0]
    propensities = (1.0 - epsilon) * chosen + epsilon / n_candidates
    return slates, np.where(slates < 0, 1.0, propensities)


def served_metadata(scorer: Any) -> Mapping[str, Any] | None:
    """The metadata of the policy ``scorer`` serves (its own, or its fitted ``policy_``'s: a
    Booster's, a ``PolicyChoice``'s), or None."""
    metadata = getattr(scorer, "metadata", None)
    if not isinstance(metadata, Mapping):
        metadata = getattr(getattr(scorer, "policy_", None), "metadata", None)
    return metadata if isinstance(metadata, Mapping) else None


def served_tie_order(scorer: Any, n_actions: int) -> np.ndarray | None:
    """The (n_actions,) tie order of the policy ``scorer`` serves: a fitted policy learner's
    ``tie_order_``, else what its metadata records
    (:func:`~opboost.api.serving.tie_order.recorded_tie_order`), or None: the order its
    ``predict`` breaks equal scores in, for anyone who takes the argmax of its
    ``decision_function``."""
    fitted = getattr(scorer, "tie_order_", None)
    if fitted is not None:  # the learner's own fitted order (K,), a permutation
        return np.asarray(fitted, dtype=np.int64)
    metadata = served_metadata(scorer)
    return None if metadata is None else recorded_tie_order(metadata, n_actions)


def _accepts(method: Any, name: str) -> bool:
    params = inspect.signature(method).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


class ExplorationMixin:
    """``action_distribution``, ``sample`` and ``sample_slate`` from ``decision_function``.

    The host class scores rows with ``decision_function(X)`` (m, K), optionally taking
    ``candidates`` (an (m, K) mask; applied here when it does not) and ``action_features``
    (a catalogue, for policies fitted on item features)."""

    def _exploration_scores(
        self, X: Any, candidates: Any, action_features: Any, owner: str
    ) -> np.ndarray:
        method = self.decision_function
        options = {}
        if action_features is not None:
            if not _accepts(method, "action_features"):
                raise InvalidParameterError(
                    f"{owner}: {type(self).__name__} scores a fixed set of actions and takes "
                    f"no action_features; drop action_features=."
                )
            options["action_features"] = action_features
        masked_here = candidates is not None and not _accepts(method, "candidates")
        if candidates is not None and not masked_here:
            options["candidates"] = candidates
        scores = np.asarray(method(X, **options), dtype=np.float64)
        if masked_here:
            scores = mask_scores(scores, serving_mask(candidates, scores.shape, owner))
        return scores

    def _explore(
        self, method: str, X: Any, epsilon: Any, temperature: Any, candidates: Any, features: Any
    ) -> np.ndarray:
        """The exploration distribution of a call of ``method`` (named in errors)."""
        owner = f"{type(self).__name__}.{method}"
        scores = self._exploration_scores(X, candidates, features, owner)
        return exploration_distribution(
            scores,
            epsilon=epsilon,
            temperature=temperature,
            owner=owner,
            tie_order=served_tie_order(self, scores.shape[1]),
        )

    def action_distribution(
        self,
        X: Any,
        *,
        epsilon: float = 0.0,
        temperature: float | None = None,
        candidates: Any = None,
        action_features: Any = None,
    ) -> np.ndarray:
        """The (m, K) distribution
        [`sample`][opboost.api.serving.exploration.ExplorationMixin.sample] draws from:
        epsilon-greedy over the argmax (``temperature=None``; ties as ``predict`` breaks them) or
        softmax(scores / temperature), mixed with ``epsilon`` uniform over each row's candidates
        (all actions by default); 0 outside ``candidates``. With ``epsilon=0`` and no
        temperature: the greedy policy, ``predict``'s actions."""
        return self._explore(
            "action_distribution", X, epsilon, temperature, candidates, action_features
        )

    def sample(
        self,
        X: Any,
        *,
        epsilon: float = 0.0,
        temperature: float | None = None,
        random_state: Any = None,
        candidates: Any = None,
        action_features: Any = None,
        return_ids: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw one action per row from
        [`action_distribution`][opboost.api.serving.exploration.ExplorationMixin.action_distribution]
        (seeded by ``random_state``): ``(actions, propensities)``, (m,) int64 and float64, the
        propensity being exactly the probability of the returned action (what a log records for
        off-policy learning). ``return_ids``: the actions as the ids of the policy's catalogue
        (``LoggedBandit.from_dataframe(..., actions=...)``), as ``predict(X, return_ids=True)``
        gives them."""
        probs = self._explore("sample", X, epsilon, temperature, candidates, action_features)
        actions, propensities = draw(probs, check_random_state(random_state).random(len(probs)))
        if return_ids:
            actions = self._action_ids(actions, f"{type(self).__name__}.sample")
        return actions, propensities

    def _action_ids(self, actions: np.ndarray, owner: str) -> np.ndarray:
        """The catalogue ids of action indices ``actions``, from the metadata of the policy
        (its own, or its fitted ``policy_``'s); the indices when it has no catalogue."""
        metadata = served_metadata(self)
        if metadata is None:
            raise InvalidParameterError(
                f"{owner}: this {type(self).__name__} records no action catalogue (no policy "
                f"metadata); drop return_ids=."
            )
        return action_ids_of(metadata, actions)

    def sample_slate(
        self,
        X: Any,
        k: int,
        *,
        epsilon: float = 0.0,
        temperature: float | None = None,
        random_state: Any = None,
        candidates: Any = None,
        action_features: Any = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Slates of ``k`` actions, ``rank``'s (or Plackett–Luce ones at ``temperature``) mixed
        with ``epsilon`` uniform orderings: ``(slates, propensities)``, (m, k), with exact
        per-position propensities (``sample_slates``)."""
        owner = f"{type(self).__name__}.sample_slate"
        check_exploration(epsilon, temperature, owner)
        scores = self._exploration_scores(X, candidates, action_features, owner)
        return sample_slates(
            scores,
            k,
            epsilon=epsilon,
            temperature=temperature,
            random_state=random_state,
            owner=owner,
            tie_order=served_tie_order(self, scores.shape[1]),
        )
