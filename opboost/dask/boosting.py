"""The boosting loop of :class:`opboost.Booster` on a Dask cluster.

The rows stay where they are: each partition of a :class:`~opboost.dask.DaskLoggedBandit`
becomes, on the worker holding it, a validated LoggedBandit with its training coefficients
c (n_p,) and its scores F (n_p, K), persisted there. Per round t:

1. the gradients and hessians of the weighted least-squares problem (targets and weights of
   the objective's regression problem) per partition from F, flattened example-major (row
   i*K + a), next to the partition's designed rows (``design_rows``); ``lightgbm.dask`` grows
   ONE tree over all workers (LightGBM's data-parallel learner: the workers exchange
   histograms, never rows); the client receives its model text;
2. the model text is broadcast to the workers; each predicts f_t on its partitions, keeps it,
   and returns N_p = sum c_i xi_i g_i^T f_i, D_p = sum |c_i| sigma_i ||f_i||^2 and max|f|;
3. the client computes alpha = nu * N / (D + 2 n l2) from the sums exactly as the in-memory
   booster does (same stops), and each worker updates F <- F + alpha f in place of the old F
   and returns its partition's risk, squared gradient norm, value estimate and weight sums.

Only scalars per partition (3 floats after step 2, 5 after step 3) and one model text per
round reach the client. The fitted ``policy_`` is an ordinary opboost policy whose ensemble is
one LightGBM model (the rounds' trees with their leaves scaled by alpha): it saves, loads and
predicts with numpy and lightgbm alone.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from opboost.api.data import LoggedBandit
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner_toolkit import learner_seed
from opboost.api.objective import closed_form_step
from opboost.api.policy import Policy
from opboost.booster_checks import check_data
from opboost.dask.merge import merge_rounds
from opboost.dask.partitions import (
    assign_workers,
    initial_scores,
    make_partition,
    partition_predict,
    partition_problem,
    partition_rows,
    partition_stats,
    partition_step_terms,
    predict_rows,
    update_scores,
)
from opboost.engine import FitSettings
from opboost.estimators.ips import IPS, TruncatedIPS
from opboost.fit.metadata import policy_metadata, policy_values
from opboost.learners.lightgbm_ensemble import LightGBMEnsemble
from opboost.objectives.bopl import BOPL
from opboost.objectives.bopl_s import BOPLS

__all__ = ["SUPPORTED_ESTIMATORS", "SUPPORTED_OBJECTIVES", "DistributedFit", "make_engine"]

#: Objectives whose risk, gradient and step are sums of per-example terms (partition-wise).
SUPPORTED_OBJECTIVES: tuple[type, ...] = (BOPL, BOPLS)
#: Estimators whose training coefficients are per-row (c_i depends on row i only).
SUPPORTED_ESTIMATORS: tuple[type, ...] = (IPS, TruncatedIPS)


# --- the loop ---------------------------------------------------------------------------------


def _check_options(settings: FitSettings, eval_data: Any, callbacks: Any) -> None:
    unsupported = [
        ("validation_fraction", None, "hold out logs yourself and pass them as eval_data"),
        ("warm_start", None, "start from F_0 = 0 (warm_start=None)"),
    ]
    for name, default, fix in unsupported:
        if getattr(settings, name) != default:
            raise InvalidParameterError(
                f"The {name!r} parameter of Booster is not supported by the distributed fit "
                f"(DaskLoggedBandit). Got {getattr(settings, name)!r}; {fix}."
            )
    if eval_data is not None:
        check_data(eval_data, "eval_data")
    for cb in callbacks:
        if cb.writes_checkpoints:
            raise InvalidParameterError(
                f"Booster.fit: the callback {type(cb).__name__} checkpoints the fit state, "
                f"which the distributed fit keeps on the workers; checkpoints are not "
                f"supported there. Drop it (Progress, History and EarlyStopping work)."
            )


def _check_components(objective: Any, estimator: Any, learner: Any) -> None:
    from opboost.dask.learner import LightGBMDaskTree

    if not isinstance(learner, LightGBMDaskTree):
        raise InvalidParameterError(
            f"Booster.fit: data is a DaskLoggedBandit, which only the 'lightgbm_dask_tree' base "
            f"learner fits (on the workers); got base learner {learner.name!r}. Use "
            f"base_learner='lightgbm_dask_tree', or gather small data with "
            f"data.to_logged_bandit() for an in-memory learner."
        )
    for component, supported, why in (
        (
            objective,
            SUPPORTED_OBJECTIVES,
            "its risk or gradient needs statistics of all rows at once, not sums over partitions",
        ),
        (estimator, SUPPORTED_ESTIMATORS, "it needs per-row training coefficients"),
    ):
        if type(component) not in supported:
            names = ", ".join(repr(c.name) for c in supported)
            raise InvalidParameterError(
                f"The {component.kind} {component.name!r} is not supported by the distributed "
                f"fit: {why}. Supported: {names}."
            )


@dataclass(frozen=True, eq=False)
class Tree:
    """One round's tree: its model text, f_t on every partition (futures), the step sums
    N and D, max |f| and the seconds its fit and step terms took."""

    text: str | None
    f: list[Any]
    numerator: float
    denominator: float
    max_abs: float
    seconds: tuple[float, float] = (0.0, 0.0)


class DistributedFit:
    """The state of one distributed fit (an :class:`opboost.engine.Engine`): per-partition
    futures on the workers, history, trees."""

    def __init__(self, settings, data, eval_data, components, client):
        from distributed import wait

        objective, estimator, learner = components
        self.settings, self.data, self.eval_data = settings, data, eval_data
        self.objective, self.estimator, self.learner = objective, estimator, learner
        self.client = client
        self.K, self.d, self.n = data.n_actions, data.n_features, len(data)
        self.design = learner.action_design
        self.seed = learner_seed(learner.random_state, settings.seed)
        learner.lgb_params(self.seed)  # validate the learner's parameters before any work
        if eval_data is not None and (eval_data.n_actions, eval_data.n_features) != (
            self.K,
            self.d,
        ):
            raise InvalidParameterError(
                f"Booster.fit: eval_data has {eval_data.n_actions} actions and "
                f"{eval_data.n_features} features but data has {self.K} and {self.d}; "
                f"evaluate on rows of the same problem."
            )
        self.rows = data.row_chunks
        self.workers = assign_workers(client, data)
        shift = float(settings.reward_shift)
        self.parts = [
            client.compute(_delayed(make_partition)(p, estimator, shift), workers=[w])
            for p, w in zip(data.partitions(), self.workers, strict=True)
        ]
        with client.as_current():  # wait() uses the current client; ours may not be default
            wait(self.parts)
        for future in self.parts:  # raise a partition's validation error here, by name
            if future.status == "error":
                future.result()
        self.scores = [self._submit(i, initial_scores, p) for i, p in enumerate(self.parts)]
        self.placement: dict[str, int] = {}
        for worker, n_p in zip(self.workers, self.rows, strict=True):
            self.placement[worker] = self.placement.get(worker, 0) + n_p
        self.eval_scores = None if eval_data is None else np.zeros((len(eval_data), self.K))
        self.round, self.stop_reason = 0, None
        self.history: dict[str, list[float]] = {}
        self.timings: dict[str, list[float]] = {"tree": [], "step": [], "update": []}
        self.trees: list[str] = []
        self.weights: list[float] = []
        self.train_metrics: dict[str, float] = {}
        self.eval_metrics: dict[str, float] = {}
        self.best_round: int | None = None
        self.stats = self._stats()

    # --- reductions ---------------------------------------------------------------------

    def _submit(self, index: int, func: Any, *args: Any) -> Any:
        """Run ``func(*args)`` on the worker that keeps partition ``index`` (and only there:
        work stealing would move the partition's rows to another worker)."""
        worker = self.workers[index]
        return self.client.submit(func, *args, workers=[worker], allow_other_workers=False)

    def _gather_sum(self, futures: list[Any]) -> np.ndarray:
        """Sum of the per-partition scalar vectors, in partition order (deterministic)."""
        return np.sum(np.stack(self.client.gather(futures)), axis=0)

    def _stats(self) -> dict[str, float]:
        obj, est = self.objective, self.estimator
        futures = [
            self._submit(i, partition_stats, obj, est, p, F)
            for i, (p, F) in enumerate(zip(self.parts, self.scores, strict=True))
        ]
        risk, grad_sq, value, w_sum, w_nnz = self._gather_sum(futures)
        n = self.n
        return {
            "risk": risk / n,
            "gradient_norm": math.sqrt(max(grad_sq, 0.0)) / n,
            "value": value / n,
            "weight_sum": w_sum,
            "weight_nnz": w_nnz,
        }

    # --- one round ----------------------------------------------------------------------

    def _fit_tree(self) -> str:
        """Grow this round's tree over all workers; its model text."""
        import dask
        import dask.array as da

        stats, K = self.stats, self.K
        scale = stats["weight_nnz"] / stats["weight_sum"]  # weights to mean 1 where nonzero
        width = self.d + (K if self.design == "stacked_onehot" else 1)
        rows, gradients, hessians = [], [], []
        for i, (part, F, n_p) in enumerate(zip(self.parts, self.scores, self.rows, strict=True)):
            with dask.annotate(workers=[self.workers[i]], allow_other_workers=False):
                X = _delayed(partition_rows)(part, self.design)
                problem = _delayed(partition_problem, nout=2)(self.objective, part, F, scale)
                rows.append(da.from_delayed(X, (n_p * K, width), dtype=np.float64))
                gradients.append(da.from_delayed(problem[0], (n_p * K,), dtype=np.float32))
                hessians.append(da.from_delayed(problem[1], (n_p * K,), dtype=np.float32))
        return self.learner.fit_tree(
            self.client,
            da.concatenate(rows),
            da.concatenate(gradients),
            da.concatenate(hessians),
            seed=self.seed,
            n_features=self.d,
        )

    # --- the engine protocol ----------------------------------------------------------------

    def gradient_norm(self) -> float:
        return self.stats["gradient_norm"]

    def fit_direction(self) -> Tree:
        """Grow the round's tree, predict f_t on the workers and gather the step sums."""
        if self.stats["weight_nnz"] == 0:  # every weight is 0: f = 0, as lightgbm_tree returns
            return Tree(None, [], 0.0, 0.0, 0.0)
        start = time.perf_counter()
        text = self._fit_tree()
        fitted = time.perf_counter()
        model = self.client.scatter(text, broadcast=True, hash=False)
        threads = int(self.learner.num_threads)
        f = [
            self._submit(i, partition_predict, p, model, self.design, threads)
            for i, p in enumerate(self.parts)
        ]
        terms = [
            self._submit(i, partition_step_terms, self.objective, p, F, fp)
            for i, (p, F, fp) in enumerate(zip(self.parts, self.scores, f, strict=True))
        ]
        terms = np.stack(self.client.gather(terms))  # (partitions, 3)
        numerator, denominator = np.sum(terms[:, :2], axis=0)
        seconds = (fitted - start, time.perf_counter() - fitted)
        return Tree(text, f, numerator, denominator, float(np.max(terms[:, 2])), seconds)

    def step_denominator(self, direction: Tree) -> float:
        return direction.denominator

    def step(self, direction: Tree, factor: float, l2: float) -> float:
        return closed_form_step(
            direction.numerator * factor, direction.denominator * factor**2, self.n, l2
        )

    def discard(self, direction: Tree) -> None:
        """Nothing to undo: the tree was never added."""

    def commit(self, direction: Tree, weight: float, **metrics: float) -> None:
        """F <- F + weight f on every partition; the next round's statistics; history."""
        start = time.perf_counter()
        self.scores = [
            self._submit(i, update_scores, F, fp, weight)
            for i, (F, fp) in enumerate(zip(self.scores, direction.f, strict=True))
        ]
        self.trees.append(direction.text)
        self.weights.append(weight)
        self.round += 1
        self.stats = self._stats()
        self.train_metrics = {
            **metrics,
            "train_objective": self.stats["risk"],
            "train_value": self.stats["value"],
        }
        self.eval_metrics = {}
        if self.eval_data is not None:
            self.eval_metrics = self._evaluate(direction.text, weight)
        for key, value in {**self.train_metrics, **self.eval_metrics}.items():
            self.history.setdefault(key, []).append(float(value))
        seconds = (*direction.seconds, time.perf_counter() - start)
        for key, value in zip(("tree", "step", "update"), seconds, strict=True):
            self.timings[key].append(value)

    def snapshot(self) -> dict[str, Any]:
        raise InvalidParameterError(
            "The distributed fit keeps its scores on the workers and writes no checkpoints; "
            "Checkpoint callbacks are not supported there."
        )

    def keep_best(self) -> None:
        self.best_round = self.round

    def _evaluate(self, tree: str, weight: float) -> dict[str, float]:
        X = self.eval_data.contexts
        if not isinstance(X, np.ndarray):
            X = X.toarray()
        threads = int(self.learner.num_threads)
        self.eval_scores += weight * predict_rows(tree, X, self.K, self.design, threads)
        return policy_values(self.eval_data, self.eval_scores, prefix="eval_")

    # --- results ------------------------------------------------------------------------

    def policy(self) -> Policy:
        """The fitted policy: one LightGBM model of the rounds (up to a marked best round)."""
        learner = self.learner
        rounds = self.round if self.best_round is None else self.best_round
        booster = merge_rounds(
            self.trees[:rounds],
            self.weights[:rounds],
            n_columns=self.d + (self.K if self.design == "stacked_onehot" else 1),
            categorical=self.design == "stacked",
        )
        ensemble = LightGBMEnsemble(
            booster,
            n_actions=self.K,
            action_design=self.design,
            n_features=self.d,
            n_rounds=rounds,
        )
        # The ensemble is lightgbm_tree's format: loading needs neither dask nor the extra.
        meta = policy_metadata(
            self.settings,
            self.objective,
            self.estimator,
            ("lightgbm_tree", learner.as_lightgbm_tree().get_params(deep=False)),
            n_rounds=rounds,
            n_actions=self.K,
            n_features=self.d,
            stop_reason=self.stop_reason,
        )
        meta["distributed"] = {
            "base_learner": learner.name,
            "n_partitions": len(self.parts),
            "n_workers": len(self.placement),
            "n_rows": self.n,
        }
        if rounds < self.round:
            meta["best_round"] = rounds
        return Policy(ensemble, self.K, meta)

    def fitted_attributes(self) -> dict[str, Any]:
        """``timings_`` (seconds per round: "tree" = lightgbm.dask's fit, "step" = f and the
        step sums, "update" = F and the next round's statistics), ``distributed_``
        (partitions, and rows per worker) and ``best_round_`` when a best was marked."""
        out = {
            "timings_": {k: np.asarray(v) for k, v in self.timings.items()},
            "distributed_": {
                "n_partitions": len(self.parts),
                "rows_per_partition": list(self.rows),
                "rows_per_worker": dict(self.placement),
            },
        }
        if self.best_round is not None:
            out["best_round_"] = self.best_round
        return out


def _delayed(func: Any, **kwargs: Any) -> Any:
    from dask import delayed

    return delayed(func, pure=True, **kwargs)


def make_engine(
    data: Any,
    components: tuple[Any, Any, Any],
    settings: FitSettings,
    *,
    eval_data: LoggedBandit | None = None,
    callbacks: Any = (),
) -> DistributedFit:
    """The engine :meth:`opboost.Booster.fit` runs on the DaskLoggedBandit ``data``.

    ``eval_data`` is an in-memory LoggedBandit scored on the client after every round;
    callbacks run as in a local fit, except those that write checkpoints (refused). The
    Booster then also gets ``timings_`` and ``distributed_`` (see
    :meth:`DistributedFit.fitted_attributes`).
    """
    _check_options(settings, eval_data, callbacks)
    _check_components(*components)
    client = components[2].get_client()
    return DistributedFit(settings, data, eval_data, components, client)
