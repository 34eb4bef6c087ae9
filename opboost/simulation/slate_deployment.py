"""A deployment stream of slates: a ranking policy is deployed with Plackett–Luce exploration,
logs its impressions with their exact per-position and prefix propensities, and is refitted in
batches on its own logs.

[`slate_stream`][opboost.simulation.slate_deployment.slate_stream] draws the stream's impressions
from a [`SlateWorld`][opboost.simulation.slate_world.SlateWorld] (contexts and each one's
candidates); [`run_slates`][opboost.simulation.slate_deployment.run_slates] plays it: batch 0 is
the world's logger, then the policy refitted on all the logs so far (e.g. ``slate_boost``)
draws each batch's slates with its ``sample_slate`` at a temperature, and the world clicks
(one seeded generator per batch draws the slates and the clicks, the same for every policy).
The curves collect each impression's true expected clicks; the regret is against the
ranking of the items by their true attractiveness (the best ranking of a position-based or
cascade world whose examination decreases down the slate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from opboost.api.exceptions import InvalidParameterError
from opboost.api.slates import SlateLogs
from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.deployment import DeploymentResult
from opboost.simulation.slate_world import SlateWorld

__all__ = ["SlateStream", "run_slates", "slate_stream"]


@dataclass(frozen=True, eq=False)
class SlateStream:
    """The impressions of one deployment trial on a slate world, in order: ``contexts``
    (L, d), ``candidates`` (L, C) item ids, ``batch_size`` impressions per batch and the
    ``seed`` of each batch's draws (``SeedSequence([seed, batch])``)."""

    world: SlateWorld
    contexts: np.ndarray
    candidates: np.ndarray
    batch_size: int
    seed: int

    def __len__(self) -> int:
        return len(self.contexts)

    def batch_ends(self, batch_size: int | None = None) -> list[int]:
        """Impressions at the end of each batch of ``batch_size`` (default: the stream's)."""
        size = self.batch_size if batch_size is None else batch_size
        return [*range(size, len(self), size), len(self)]

    def mask(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """(m, K) booleans: the candidates of impressions ``start .. end - 1``."""
        items = self.candidates[start:end]
        out = np.zeros((len(items), self.world.n_items), dtype=bool)
        out[np.arange(len(items))[:, None], items] = True
        return out

    def best(self) -> np.ndarray:
        """(L,) the true expected clicks of every impression's attractiveness ranking."""
        theta = np.take_along_axis(self.world.attractiveness(self.contexts), self.candidates, 1)
        top = np.argsort(-theta, axis=1, kind="stable")[:, : self.world.slate_size]
        return self.world.expected_clicks(
            self.contexts, np.take_along_axis(self.candidates, top, 1)
        )


def slate_stream(
    world: SlateWorld, *, batch_size: int, n_batches: int, random_state: Any = None
) -> SlateStream:
    """``batch_size * n_batches`` fresh impressions of ``world`` (contexts and candidates),
    seeded by ``random_state``."""
    owner = "slate_stream"
    check_scalar(batch_size, "batch_size", owner, kind=int, low=1)
    check_scalar(n_batches, "n_batches", owner, kind=int, low=1)
    rng = check_random_state(random_state)
    contexts, candidates = world.sample_contexts(batch_size * n_batches, rng)
    return SlateStream(world, contexts, candidates, int(batch_size), int(rng.integers(2**63 - 1)))


def run_slates(
    stream: SlateStream,
    fit: Callable[[SlateLogs], Any] | None,
    *,
    temperature: float = 1.0,
    batch_size: int | None = None,
) -> DeploymentResult:
    """Play ``stream`` in batches of ``batch_size`` (default: the stream's): batch 0 logged
    by the world's logger; after each batch ``fit(logs)`` on all the slate logs so far
    returns a policy whose ``sample_slate(X, L, temperature=, random_state=, candidates=)``
    (``SlateBooster``'s) draws the next batch's slates with their exact propensities; a last
    refit gives the final policy. ``fit=None``: the logger plays every batch. The result's
    ``rewards`` are each impression's true expected clicks, ``logs`` the ``SlateLogs``."""
    if not (isinstance(temperature, Real) and np.isfinite(temperature) and temperature > 0):
        raise InvalidParameterError(
            f"run_slates: temperature must be a finite number > 0 (Plackett–Luce "
            f"exploration); got {temperature!r}."
        )
    size = stream.batch_size if batch_size is None else batch_size
    check_scalar(size, "batch_size", "run_slates", kind=int, low=1)
    world, ends = stream.world, stream.batch_ends(size)
    result = DeploymentResult(np.zeros(len(stream)), stream.best(), ends)
    parts: list[SlateLogs] = []
    policy, start, began = None, 0, time.perf_counter()
    for batch, end in enumerate(ends):
        X, rng = stream.contexts[start:end], np.random.default_rng([stream.seed, batch])
        if policy is None:
            part = world.log(X, stream.candidates[start:end], rng)
        else:
            mask = stream.mask(start, end)
            slates, marginal, cascade = policy.sample_slate(
                X, world.slate_size, temperature=temperature, random_state=rng, candidates=mask
            )
            clicks = world.draw_clicks(X, slates, rng)
            part = SlateLogs(
                X, slates, clicks, marginal, world.n_items, cascade, mask, world.item_features
            )
        parts.append(part)
        result.rewards[start:end] = world.expected_clicks(X, part.slates)
        start = end
        if fit is None:
            continue
        result.logs = _concatenate(parts)
        fitted = time.perf_counter()
        policy = fit(result.logs)
        result.fit_seconds.append(time.perf_counter() - fitted)
    result.seconds, result.policy = time.perf_counter() - began, policy
    if fit is None:
        result.logs = _concatenate(parts)
    return result


def _concatenate(parts: list[SlateLogs]) -> SlateLogs:
    """One ``SlateLogs`` of the impressions of ``parts``, in order."""
    first = parts[0]

    def stack(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])

    return SlateLogs(
        stack("contexts"),
        stack("slates"),
        stack("rewards"),
        stack("marginal_propensities"),
        first.n_items,
        cascade_propensities=stack("cascade_propensities"),
        candidates=stack("candidates"),
        item_features=first.item_features,
    )
