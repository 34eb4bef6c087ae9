"""The ``tabular`` suite of ``bench_peers.py`` (issue 48): random user-like tables of
:func:`opboost.simulation.tabular_worlds.tabular_world`, one world a seed.

The worlds whose seeds TUNE defaults and the worlds REPORTED are disjoint and fixed here
(``--worlds tuning|reporting``): a default chosen on :data:`TUNING_WORLD_SEEDS` is judged
on :data:`REPORTING_WORLD_SEEDS`, tables it was never tuned on. A trial of world w and bench
seed s draws the logs of w anew (``log_seed=s``) on the world's fixed test contexts; every
method is scored by the exact mean reward of its actions there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data import LoggedBandit
from opboost.simulation.tabular_worlds import TabularWorld, tabular_world

__all__ = ["REPORTING_WORLD_SEEDS", "TABULAR", "TUNING_WORLD_SEEDS", "TabularTrial"]

#: World seeds on which defaults may be tuned.
TUNING_WORLD_SEEDS: tuple[int, ...] = tuple(range(0, 30))
#: World seeds on which defaults are reported (never tuned on).
REPORTING_WORLD_SEEDS: tuple[int, ...] = tuple(range(1000, 1030))
#: Test contexts of every world.
N_TEST = 10_000


def world_name(seed: int) -> str:
    return f"tabular_{seed}"


#: name -> world seed, tuning worlds first.
TABULAR: dict[str, int] = {world_name(s): s for s in (*TUNING_WORLD_SEEDS, *REPORTING_WORLD_SEEDS)}
WORLDS: dict[str, tuple[str, ...]] = {
    "tuning": tuple(world_name(s) for s in TUNING_WORLD_SEEDS),
    "reporting": tuple(world_name(s) for s in REPORTING_WORLD_SEEDS),
}


@dataclass(frozen=True, eq=False)
class TabularTrial:
    """The logs of one draw of a world, its encoded test contexts and their true means."""

    seed: int
    world: TabularWorld
    logged: LoggedBandit
    X_test: np.ndarray

    @property
    def n_test(self) -> int:
        return int(self.world.test_means.shape[0])

    @property
    def serving(self) -> dict[str, Any]:
        """No keywords: K fixed actions."""
        return {}

    def logging_probs(self) -> np.ndarray:
        return self.world.logging_probs(self.world.test_contexts)

    def value(self, policy: np.ndarray) -> float:
        return self.world.value(policy)


def tabular_trial(
    world_seed: int, seed: int, max_rows: int | None = None, n_test: int = N_TEST
) -> TabularTrial:
    """World ``world_seed``'s logs drawn with ``log_seed=seed`` (at most ``max_rows``)."""
    world = tabular_world(world_seed, max_rows=max_rows, n_test=n_test, log_seed=seed)
    logged = world.logged_bandit()
    X_test = logged.schema.encode(world.test_contexts, "bench_peers")
    return TabularTrial(seed, world, logged, np.asarray(X_test, dtype=np.float64))


def summary(world_seed: int, max_rows: int | None = None) -> str:
    """The world's description (its rows capped at ``max_rows``)."""
    return tabular_world(world_seed, max_rows=max_rows, n_test=1).description
