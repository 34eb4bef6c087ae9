"""Per-partition work of the distributed boosting loop, run on the Dask workers.

Each function takes one partition (a validated :class:`~opboost.api.data.logged.LoggedBandit` with
its training coefficients), or its round state at the scores F (n_p, K), and returns arrays that
stay on the worker or a few scalars for the client. :class:`opboost.dask.shard.Shard` runs them on
the partitions of its worker; :func:`assign_workers` places the partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseProblem
from opboost.lgbm.rows import action_tilt, design_rows

__all__ = [
    "Partition",
    "assign_workers",
    "make_partition",
    "predict_rows",
    "regression_terms",
    "state_stats",
    "step_terms",
]


@dataclass(frozen=True, eq=False)
class Partition:
    """One partition on its worker: the validated rows and their training coefficients (n_p,)."""

    data: LoggedBandit
    coef: np.ndarray


def make_partition(data: LoggedBandit, estimator: Any, reward_shift: float) -> Partition:
    """The partition's coefficients c (n_p,) from its (shifted) rewards, as the booster does."""
    train = data if reward_shift == 0.0 else data.with_rewards(data.rewards + reward_shift)
    coef = np.asarray(estimator.coefficients(train), dtype=np.float64)
    if coef.shape != (len(data),) or not np.all(np.isfinite(coef)):
        raise InvalidParameterError(
            f"Estimator {estimator.name!r} returned invalid training coefficients on a "
            f"partition (shape {coef.shape}); expected ({len(data)},) finite values."
        )
    return Partition(data, coef)


def state_stats(
    objective: Any, estimator: Any, part: Partition, state: Any, problem: BaseProblem
) -> np.ndarray:
    """[n_p risk, n_p^2 ||gradient||^2, n_p value, sum w, count w > 0] of the partition at
    its round ``state``, with ``problem`` = ``objective.problem_at(state, "regression")``.

    The risk, gradient and value of the objective and estimator on the partition alone are
    means over its rows; these multiples are what sums over partitions turn into the global
    ones (risk = sum / n, ||gradient||^2 = sum / n^2, value = sum / n).
    """
    n_p = state.n
    weights = problem.weights
    if not np.all(np.isfinite(weights)) or np.min(weights) < 0:
        raise InvalidParameterError(
            "The regression problem of a partition has weights that are not finite and >= 0."
        )
    return np.array(
        [
            objective.risk_at(state) * n_p,
            (objective.gradient_norm_at(state) * n_p) ** 2,
            estimator.estimate_value(part.data, state.probs) * n_p,
            float(np.sum(weights)),
            float(np.count_nonzero(weights)),
        ]
    )


def regression_terms(
    problem: BaseProblem, weight_scale: float, grad: np.ndarray, hess: np.ndarray
) -> None:
    """Write the round's float32 gradients -s_a w y into ``grad`` and hessians s_a w into
    ``hess`` (both (n_p, K), example-major), exactly as ``lightgbm_tree`` computes them:
    targets y and weights w of the regression problem, s_a = ``weight_scale`` * (1 + 1e-6 a).

    The per-action tilt 1 + 1e-6 a is the in-memory learner's (docs/benchmarks/performance.md): the
    targets sum to 0 over the actions of every row, so without it every context feature can
    have exactly zero gain at the root, and LightGBM then never splits on it in that tree.
    """
    w = problem.weights
    work = np.multiply(w, problem.targets)  # w*y, float64, as wls_terms
    scale = weight_scale * action_tilt(w.shape[1])
    np.multiply(work, -scale, out=grad, casting="same_kind")
    np.multiply(w, scale, out=hess, casting="same_kind")


def step_terms(objective: Any, state: Any, f: np.ndarray) -> np.ndarray:
    """[N_p, D_p, max|f|]: the partition's sums in alpha = N / (D + 2 n l2)."""
    return np.array(
        [
            objective.step_numerator_at(state, f),
            objective.step_denominator_at(state, f),
            float(np.max(np.abs(f))),
        ]
    )


def predict_rows(model_text: str, X: np.ndarray, n_actions: int, design: str, threads: int):
    """A LightGBM model's raw scores on contexts X (m, d): (m, K)."""
    booster = lgb.Booster(model_str=model_text)
    rows = design_rows(X, n_actions, design)
    out = booster.predict(rows, raw_score=True, num_threads=threads)
    return np.asarray(out, dtype=np.float64).reshape(X.shape[0], n_actions)


def assign_workers(client: Any, data: Any) -> list[str]:
    """The worker that builds and keeps each partition, balancing rows across workers.

    A partition whose contexts chunk is already in a worker's memory (persisted) stays there;
    the others (lazy: read from files or generated) go to the worker with the fewest rows so
    far (ties: the first by address), which then also reads or generates them, so no
    partition moves between workers.
    """
    workers = sorted(client.nthreads())
    if not workers:
        raise InvalidParameterError(
            "The Dask cluster has no workers; start some (e.g. LocalCluster(n_workers=2)) "
            "before fitting."
        )
    from distributed import futures_of, wait

    persisted = futures_of(data.contexts)
    holders: dict[Any, Any] = {}
    if persisted:  # persisted contexts: let them land, then keep each partition where it is
        with client.as_current():
            wait(persisted)
        holders = dict(client.who_has(persisted))
    keys = [row[0] for row in data.contexts.__dask_keys__()]
    load = dict.fromkeys(workers, 0)
    chosen: list[str | None] = []
    for key, n_p in zip(keys, data.row_chunks, strict=True):
        held = sorted(w for w in holders.get(key, ()) if w in load)
        chosen.append(held[0] if held else None)
        if held:
            load[held[0]] += n_p
    for p, n_p in enumerate(data.row_chunks):
        if chosen[p] is None:
            chosen[p] = min(workers, key=lambda w: (load[w], workers.index(w)))
            load[chosen[p]] += n_p
    return chosen
