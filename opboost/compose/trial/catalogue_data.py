"""The data of one trial on a catalogue world (``[data] world = "catalogue"``): the world of
the trial seed and its held-out rows.

Trial seed s draws the world (reward parameters, the training items' features) and ``n_test``
held-out rows from ``SeedSequence([s, 2])``
([`simulate_catalogue`][opboost.simulation.items.simulate_catalogue]); the deployment study
streams fresh rows of the same world (:mod:`opboost.compose.trial.stream`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.compose.config.specs import CatalogueSpec
from opboost.simulation.items import SimulatedCatalogue, simulate_catalogue

__all__ = ["CatalogueTrialData", "catalogue_hash", "prepare_catalogue_trial"]

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


def catalogue_hash(spec: CatalogueSpec) -> str:
    """SHA-256 of the world's parameters (the world itself is drawn from them and the seed)."""
    return hashlib.sha256(json.dumps(spec.resolved(), sort_keys=True).encode()).hexdigest()


def prepare_catalogue_trial(spec: CatalogueSpec, seed: int) -> CatalogueTrialData:
    """The world and held-out rows of trial ``seed`` (the module docstring)."""
    params = {k: v for k, v in spec.params.items() if k != "n_test"}
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), WORLD_STAGE]))
    world = simulate_catalogue(spec.params["n_test"], **params, random_state=rng)
    return CatalogueTrialData(spec.name, int(seed), world)
