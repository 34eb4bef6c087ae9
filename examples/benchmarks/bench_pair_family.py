"""How the catalogue start chooses its family: the default (the family whose held-out
predictions rank the logged rewards best, ``lightgbm_pair_start.FAMILY_BY_RANK``) against the
rule before (squared error: the bilinear column plus trees when clearly below the trees
alone), true test reward of the same ``Booster()`` on the same logs, paired over seeds.

The worlds: ``bench_peers.py``'s catalogues (``_bench_shapes.CATALOGUES``) and four that
``simulate_catalogue`` does not offer, built here by adding a term to its score
(``catalogue_bilinear``'s sizes), where a part of the reward is not bilinear and trees must be
in the start: ``item_effect``, a nonlinear item effect 1.5 |phi_1| - 1 (bilinear reward scale
1); ``threshold``, +-1.5 by the sign of x_0 when phi_0 > 0 (scale 1); ``item_effect_alone``,
2 |phi_1| - 1.5 with a weak bilinear part (scale 0.2); ``xor``, 1.5 sign(x_0 phi_0 phi_1)
(scale 0.2).

    python examples/benchmarks/bench_pair_family.py --seeds 5
    python examples/benchmarks/bench_pair_family.py --seeds 5 --worlds item_effect threshold
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import opboost.algorithms.learners.lightgbm_pair_start as pair_start
from opboost import Booster
from opboost.simulation.catalogue_world import CatalogueWorld

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from _bench_shapes import _SIZES, CATALOGUES, CatalogueSpec


def _item_effect(x: np.ndarray, phi: np.ndarray) -> np.ndarray:
    return 1.5 * np.abs(phi[..., 1]) - 1.0 + 0.0 * x[:, :1]


def _threshold(x: np.ndarray, phi: np.ndarray) -> np.ndarray:
    return 1.5 * np.where(x[:, :1] > 0, 1.0, -1.0) * (phi[..., 0] > 0)


def _item_effect_alone(x: np.ndarray, phi: np.ndarray) -> np.ndarray:
    return 2.0 * np.abs(phi[..., 1]) - 1.5 + 0.0 * x[:, :1]


def _xor(x: np.ndarray, phi: np.ndarray) -> np.ndarray:
    return 1.5 * np.sign(x[:, :1]) * np.sign(phi[..., 0]) * np.sign(phi[..., 1])


#: the extra score term of each added world, (m, d_x) contexts x (k or (m, c), d) items,
#: and its bilinear reward scale
EXTRA_TERMS = {
    "item_effect": (_item_effect, 1.0),
    "threshold": (_threshold, 1.0),
    "item_effect_alone": (_item_effect_alone, 0.2),
    "xor": (_xor, 0.2),
}


@contextlib.contextmanager
def extra_term(name: str) -> Iterator[None]:
    """``CatalogueWorld.scores`` plus the world ``name``'s term (none for the catalogues)."""
    if name not in EXTRA_TERMS:
        yield
        return
    scores, term = CatalogueWorld.scores, EXTRA_TERMS[name][0]

    def with_term(self, contexts, item_features):
        x = np.asarray(contexts, dtype=np.float64)
        return scores(self, contexts, item_features) + term(x, np.asarray(item_features))

    CatalogueWorld.scores = with_term
    try:
        yield
    finally:
        CatalogueWorld.scores = scores


def world(name: str) -> CatalogueSpec:
    if name in CATALOGUES:
        return CATALOGUES[name]
    scale = EXTRA_TERMS[name][1]
    return CatalogueSpec(name, **_SIZES, options={"reward_scale": scale, "logging_beta": 0.3})


def one_fit(trial, seed: int, by_rank: bool, threads: int) -> tuple[float, str]:
    """(true test reward, the start's family) of ``Booster()``."""
    pair_start.FAMILY_BY_RANK = by_rank
    try:
        booster = Booster(random_state=seed, base_learner_params={"num_threads": threads})
        actions = booster.fit(trial.logged).predict(trial.X_test, **trial.serving)
    finally:
        pair_start.FAMILY_BY_RANK = True
    return float(trial.value(actions)), booster.reward_start_["family"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worlds", nargs="+", default=[*CATALOGUES, *EXTRA_TERMS])
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n", flush=True)
    rows = []
    for name in args.worlds:
        with extra_term(name):
            rewards, families = {True: [], False: []}, []
            for seed in range(args.seeds):
                trial = world(name).trial(seed)
                for by_rank in (True, False):
                    value, family = one_fit(trial, seed, by_rank, args.threads)
                    rewards[by_rank].append(value)
                    if by_rank:
                        families.append(family)
                print(
                    f"[{name} seed {seed}] {families[-1]}: {rewards[True][-1]:.4f}, by squared "
                    f"error {rewards[False][-1]:.4f}",
                    flush=True,
                )
        mean, half = t_interval(np.array(rewards[True]) - np.array(rewards[False]))
        counts = {f: families.count(f) for f in sorted(set(families))}
        rows.append((name, np.mean(rewards[True]), mean, half, counts))
    print("\n| world | default | default − by squared error (paired 95%) | families chosen |")
    print("|---|--:|--:|---|")
    for name, value, mean, half, counts in rows:
        chosen = ", ".join(f"{f} {c}" for f, c in counts.items())
        print(f"| {name} | {value:.4f} | {mean:+.4f} ± {half:.4f} | {chosen} |")


if __name__ == "__main__":
    main()
