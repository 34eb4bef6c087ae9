"""Per-partition work of the distributed boosting loop, run on the Dask workers.

Each function takes one partition (a validated :class:`~opboost.api.data.LoggedBandit` with its
training coefficients) and its scores F (n_p, K), and returns arrays that stay on the worker
or a few scalars for the client; :mod:`opboost.dask.boosting` schedules them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np

from opboost.api.data import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.learners.lightgbm_rows import action_tilt, design_rows

__all__ = [
    "Partition",
    "assign_workers",
    "initial_scores",
    "make_partition",
    "partition_predict",
    "partition_problem",
    "partition_rows",
    "partition_stats",
    "partition_step_terms",
    "predict_rows",
    "update_scores",
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


def initial_scores(part: Partition) -> np.ndarray:
    """F_0 = 0, shape (n_p, K), created next to the partition."""
    return np.zeros((len(part.data), part.data.n_actions))


def partition_stats(objective: Any, estimator: Any, part: Partition, scores: np.ndarray):
    """[n_p risk, n_p^2 ||gradient||^2, n_p value, sum w, count w > 0] of the partition.

    The risk, gradient and value of the objective and estimator on the partition alone are
    means over its rows; these multiples are what sums over partitions turn into the global
    ones (risk = sum / n, ||gradient||^2 = sum / n^2, value = sum / n).
    """
    state = objective.round_state(scores, part.data, part.coef)
    n_p = state.n
    weights = objective.problem_at(state, "regression").weights
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


def partition_rows(part: Partition, design: str) -> np.ndarray:
    """The partition's designed rows (n_p*K, d+1 | d+K), example-major (row i*K + a)."""
    return design_rows(part.data.contexts, part.data.n_actions, design)


def partition_problem(
    objective: Any, part: Partition, scores: np.ndarray, weight_scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """The round's float32 gradients -s_a w y and hessians s_a w, each (n_p*K,) example-major,
    computed exactly as ``lightgbm_tree`` computes them: targets y and weights w of the
    regression problem, s_a = ``weight_scale`` * (1 + 1e-6 a).

    The per-action tilt 1 + 1e-6 a is the in-memory learner's (docs/performance.md): the
    targets sum to 0 over the actions of every row, so without it every context feature can
    have exactly zero gain at the root, and LightGBM then never splits on it in that tree.
    """
    state = objective.round_state(scores, part.data, part.coef)
    problem = objective.problem_at(state, "regression")
    w = problem.weights
    work = np.multiply(w, problem.targets)  # w*y, float64, as wls_terms
    scale = weight_scale * action_tilt(state.g.shape[1])
    grad = np.empty(state.g.shape, dtype=np.float32)
    hess = np.empty(state.g.shape, dtype=np.float32)
    np.multiply(work, -scale, out=grad, casting="same_kind")
    np.multiply(w, scale, out=hess, casting="same_kind")
    return grad.ravel(), hess.ravel()


def predict_rows(model_text: str, X: np.ndarray, n_actions: int, design: str, threads: int):
    """One round's tree f on contexts X (m, d): (m, K)."""
    booster = lgb.Booster(model_str=model_text)
    rows = design_rows(X, n_actions, design)
    out = booster.predict(rows, raw_score=True, num_threads=threads)
    return np.asarray(out, dtype=np.float64).reshape(X.shape[0], n_actions)


def partition_predict(part: Partition, model_text: str, design: str, threads: int):
    """f_t on the partition, (n_p, K); ``threads`` 0 means the worker's thread count."""
    if threads <= 0:
        from distributed import get_worker

        threads = get_worker().state.nthreads
    return predict_rows(model_text, part.data.contexts, part.data.n_actions, design, threads)


def partition_step_terms(objective: Any, part: Partition, scores: np.ndarray, f: np.ndarray):
    """[N_p, D_p, max|f|]: the partition's sums in alpha = N / (D + 2 n l2)."""
    state = objective.round_state(scores, part.data, part.coef)
    return np.array(
        [
            objective.step_numerator_at(state, f),
            objective.step_denominator_at(state, f),
            float(np.max(np.abs(f))),
        ]
    )


def update_scores(scores: np.ndarray, f: np.ndarray, weight: float) -> np.ndarray:
    """F + weight * f, (n_p, K)."""
    return scores + weight * f


def assign_workers(client: Any, data: Any) -> list[str]:
    """The worker that builds and keeps each partition, balancing rows across workers.

    A partition whose contexts chunk is already in a worker's memory (persisted) stays there;
    the others (lazy: read from files or generated) go to the worker with the fewest rows so
    far, which then also reads or generates them, so no partition moves between workers.
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
        held = [w for w in holders.get(key, ()) if w in load]
        chosen.append(held[0] if held else None)
        if held:
            load[held[0]] += n_p
    for p, n_p in enumerate(data.row_chunks):
        if chosen[p] is None:
            chosen[p] = min(workers, key=lambda w: (load[w], workers.index(w)))
            load[chosen[p]] += n_p
    return chosen
