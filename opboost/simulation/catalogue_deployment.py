"""A deployment stream over a simulated catalogue: contexts arrive with their own candidate
items, and a policy is served with ``candidates=`` and the catalogue's ``action_features=``.

[`catalogue_stream`][opboost.simulation.catalogue_deployment.catalogue_stream] draws the stream's
rows from a catalogue world
([`SimulatedCatalogue.test_rows`][opboost.simulation.items.SimulatedCatalogue.test_rows], from
the training catalogue): fresh contexts, each row's candidate items, the world's logger over
them (softmax of ``logging_beta`` times the true score) and the true mean reward of every
candidate. [`run_batched`][opboost.simulation.deployment.run_batched] plays it as it plays a
fixed-action stream; the reward the learner logs is a Bernoulli draw of the played item's mean
(from one seeded uniform per interaction, common to every policy), while the collected reward
and regret of the curves are the played item's mean and the best candidate's mean minus it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.validation import check_random_state, check_scalar
from opboost.simulation.items import SimulatedCatalogue

__all__ = ["CatalogueStream", "catalogue_stream"]


@dataclass(frozen=True, eq=False)
class CatalogueStream:
    """The interactions of one deployment trial on a catalogue, in order.

    Attributes
    ----------
    rows
        the stream's rows (a ``SimulatedCatalogue``): contexts, ``candidate_items`` (L, c),
        the logger's ``candidate_probs`` and the true ``candidate_means``.
    batch_size
        interactions per batch.
    uniforms
        (L,) the common random numbers of the action draws.
    reward_uniforms
        (L,) those of the Bernoulli rewards (reward 1 when below the played item's mean).
    """

    rows: SimulatedCatalogue
    batch_size: int
    uniforms: np.ndarray
    reward_uniforms: np.ndarray

    def __len__(self) -> int:
        return len(self.uniforms)

    @property
    def contexts(self) -> np.ndarray:
        """(L, d_x) the contexts, in order."""
        return self.rows.logged.contexts

    @property
    def n_actions(self) -> int:
        """The catalogue's items."""
        return int(self.rows.logged.n_actions)

    def batch_ends(self, batch_size: int | None = None) -> list[int]:
        """Interactions at the end of each batch of ``batch_size`` (default: the stream's)."""
        size = self.batch_size if batch_size is None else batch_size
        return [*range(size, len(self), size), len(self)]

    def table(self) -> np.ndarray:
        """(L, K) true mean reward of every item at every interaction (0 off the candidates)."""
        return self._scatter(self.rows.candidate_means)

    def logging_distribution(self, start: int, end: int) -> np.ndarray:
        """(end - start, K) the world's logger over the candidates of those interactions."""
        return self._scatter(self.rows.candidate_probs[start:end], start)

    def serving(self, start: int, end: int) -> dict[str, Any]:
        """The keyword arguments serving interactions ``start .. end - 1``: their candidates
        and the catalogue's item features."""
        logged = self.rows.logged
        return {"candidates": logged.candidates[start:end], "action_features": self.item_features}

    @property
    def item_features(self) -> np.ndarray:
        """(K, d_item) the catalogue's item features."""
        return self.rows.item_features

    def logged_rewards(self, steps: np.ndarray, means: np.ndarray) -> np.ndarray:
        """Bernoulli rewards of the played items' ``means`` at interactions ``steps``."""
        return (self.reward_uniforms[steps] < means).astype(np.float64)

    def log_fields(self, end: int, probs: np.ndarray) -> dict[str, Any]:
        """The catalogue columns of the logs of the first ``end`` interactions (the dense
        ``probs`` are not kept: each row's propensity is exact)."""
        logged = self.rows.logged
        return {
            "candidates": logged.candidates[:end],
            "action_features": self.item_features,
            "item_schema": logged.item_schema,
        }

    def _scatter(self, values: np.ndarray, first: int = 0) -> np.ndarray:
        items = self.rows.candidate_items[first : first + len(values)]
        out = np.zeros((len(values), self.n_actions))
        np.put_along_axis(out, items, values, axis=1)
        return out


def catalogue_stream(
    world: SimulatedCatalogue,
    *,
    batch_size: int,
    n_batches: int,
    random_state: Any = None,
) -> CatalogueStream:
    """The stream of ``batch_size * n_batches`` fresh rows of ``world``'s catalogue (its
    training items, ``n_candidates`` per row), with one action and one reward uniform per
    interaction, all seeded by ``random_state``."""
    owner = "catalogue_stream"
    check_scalar(batch_size, "batch_size", owner, kind=int, low=1)
    check_scalar(n_batches, "n_batches", owner, kind=int, low=1)
    rng = check_random_state(random_state)
    length = batch_size * n_batches
    rows = world.test_rows(length, new_items=False, random_state=rng)
    return CatalogueStream(rows, int(batch_size), rng.random(length), rng.random(length))
