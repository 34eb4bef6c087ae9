"""The data of one trial on a simulated world (``[data] world = "catalogue"`` or
``"slates"``): the world of the trial seed and its held-out rows.

Trial seed s draws the world from ``SeedSequence([s, 2])``: a catalogue's reward parameters,
items and ``n_test`` held-out rows
([`simulate_catalogue`][opboost.simulation.items.simulate_catalogue]), or a slate world
([`make_slate_world`][opboost.simulation.slate_world.make_slate_world]) and ``n_test``
held-out contexts with their candidates. The deployment study streams fresh rows of the same
world (:mod:`opboost.compose.trial.stream`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.compose.config.specs import WorldSpec
from opboost.simulation.items import SimulatedCatalogue

__all__ = [
    "CatalogueTrialData",
    "SlateTrialData",
    "prepare_world_trial",
    "world_hash",
]

#: The stage of the trial seed's ``SeedSequence`` that draws the world (that of the logs).
WORLD_STAGE = 2


@dataclass(frozen=True, eq=False)
class CatalogueTrialData:
    """What every algorithm of one trial on a catalogue world sees: ``world`` (its
    ``n_test`` held-out rows, with the world's parameters)."""

    name: str
    seed: int
    world: SimulatedCatalogue

    @property
    def n_actions(self) -> int:
        """The catalogue's items."""
        return int(self.world.logged.n_actions)

    def sizes(self) -> dict[str, int]:
        """Items, candidates per row and held-out rows."""
        return {
            "n_items": self.n_actions,
            "n_candidates": int(self.world.candidate_items.shape[1]),
            "n_test": len(self.world.logged),
        }

    def rows_text(self) -> str:
        """The sizes in words (for the command line)."""
        n = self.sizes()
        return (
            f"a catalogue of {n['n_items']} items, {n['n_candidates']} candidates per row, "
            f"{n['n_test']} test rows"
        )

    def test_reward(self, policy: Any) -> float:
        """The true value on the held-out rows of the greedy ``policy`` (ties split evenly),
        served with their candidates and the items' features."""
        logged = self.world.logged
        probs = policy.action_distribution(
            logged.contexts, candidates=logged.candidates, action_features=logged.action_features
        )
        return self.world.policy_value(probs)


@dataclass(frozen=True, eq=False)
class SlateTrialData:
    """What every algorithm of one trial on a slate world sees: the ``world`` and its
    held-out ``contexts`` (n_test, d) with their ``candidates`` (n_test, C) item ids."""

    name: str
    seed: int
    world: Any
    contexts: np.ndarray
    candidates: np.ndarray

    def sizes(self) -> dict[str, int]:
        """Items, candidates per impression, positions and held-out impressions."""
        return {
            "n_items": self.world.n_items,
            "n_candidates": self.world.n_candidates,
            "slate_size": self.world.slate_size,
            "n_test": len(self.contexts),
        }

    def rows_text(self) -> str:
        """The sizes in words (for the command line)."""
        n = self.sizes()
        return (
            f"slates of {n['slate_size']} of {n['n_candidates']} candidates out of "
            f"{n['n_items']} items, {n['n_test']} test impressions"
        )

    def mask(self) -> np.ndarray:
        """(n_test, K) booleans: each held-out impression's candidates."""
        out = np.zeros((len(self.contexts), self.world.n_items), dtype=bool)
        out[np.arange(len(self.contexts))[:, None], self.candidates] = True
        return out

    def test_reward(self, policy: Any) -> float:
        """The true expected clicks per held-out impression of ``policy``'s ranking, or of
        the world's logger (``policy`` None)."""
        world, X = self.world, self.contexts
        if policy is None:
            scores = np.where(self.mask(), world.logits(X), -np.inf)
            return float(world.plackett_luce_value(X, scores, world.logging_temperature).mean())
        ranking = policy.rank(X, candidates=self.mask(), k=world.slate_size)
        return float(world.expected_clicks(X, ranking).mean())


def world_hash(spec: WorldSpec) -> str:
    """SHA-256 of the world's parameters (the world itself is drawn from them and the seed)."""
    return hashlib.sha256(json.dumps(spec.resolved(), sort_keys=True).encode()).hexdigest()


def prepare_world_trial(spec: WorldSpec, seed: int) -> CatalogueTrialData | SlateTrialData:
    """The world and held-out rows of trial ``seed`` (the module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), WORLD_STAGE]))
    if spec.name == "slates":
        world = spec.build(random_state=int(rng.integers(2**31 - 1)))
        contexts, candidates = world.sample_contexts(spec.params["n_test"], rng)
        return SlateTrialData(spec.name, int(seed), world, contexts, candidates)
    return CatalogueTrialData(spec.name, int(seed), spec.build(random_state=rng))
