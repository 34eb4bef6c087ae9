"""The boosting loop of :class:`opboost.Booster` on a Dask cluster.

The rows stay where they are: each partition of a :class:`~opboost.dask.DaskLoggedBandit`
becomes, on the worker holding it, a validated LoggedBandit with its training coefficients
c (n_p,). Each worker holding partitions then gets one :class:`~opboost.dask.shard.Shard`
actor for the whole fit: its partitions' scores F, one binned LightGBM Dataset of their
designed rows and one LightGBM Booster, joined to the other workers' by LightGBM's
data-parallel network (ranks: the workers sorted by address). Per round t:

1. every worker at once computes the gradients and hessians of the weighted least-squares
   problem (targets and weights of the objective's regression problem) from its F, grows
   the round's tree with the others (LightGBM exchanges histograms over its own sockets,
   never rows), reads f_t on its rows from LightGBM's training scores and returns
   N_w = sum c_i xi_i g_i^T f_i, D_w = sum |c_i| sigma_i ||f_i||^2 and max|f|;
2. the client computes alpha = nu * N / (D + 2 n l2) from the sums exactly as the in-memory
   booster does (same stops); every worker scales the tree's leaves by alpha, updates
   F <- F + alpha f and returns its risk, squared gradient norm, value estimate and weight
   sums for the next round.

Only a few floats per worker and round reach the client (and, with ``eval_data``, the
round's tree). The fitted ``policy_`` is rank 0's LightGBM model (every worker grew the same
trees): an ordinary opboost policy that saves, loads and predicts with numpy and lightgbm.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import lightgbm as lgb
import numpy as np

from opboost.api.data.logged import LoggedBandit
from opboost.api.engine import Components, FitSettings
from opboost.api.exceptions import InvalidParameterError
from opboost.api.fit_metadata import policy_metadata, policy_values
from opboost.api.learner_toolkit import learner_seed
from opboost.api.objective import closed_form_step
from opboost.api.policy import Policy
from opboost.api.serving.tie_order import record_tie_order, snips_values, value_tie_order
from opboost.dask.network import Shards, requested_ports
from opboost.dask.partitions import assign_workers, make_partition, predict_rows
from opboost.dask.shard import Shard
from opboost.dask.supported import check_components, check_options
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.sampling import designed_shape, leaves_from_sums, row_sampling_params

__all__ = ["DistributedFit", "make_engine"]


# --- the loop ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Tree:
    """One round's tree as the client sees it: the step sums N and D, max |f| and the seconds
    the workers took to grow it."""

    numerator: float
    denominator: float
    max_abs: float
    seconds: float = 0.0


class DistributedFit:
    """The state of one distributed fit (an :class:`opboost.api.engine.Engine`): the workers'
    shards, the statistics of the current round, history."""

    def __init__(self, settings, data, eval_data, components, client):
        objective, estimator, learner = components
        self.settings, self.data, self.eval_data = settings, data, eval_data
        self.objective, self.estimator, self.learner = objective, estimator, learner
        self.client = client
        self.K, self.d, self.n = data.n_actions, data.n_features, len(data)
        self.design = learner.action_design
        self.seed = learner_seed(learner.random_state, settings.seed)
        params = learner.lgb_params(self.seed)  # validated before any work
        if eval_data is not None and (eval_data.n_actions, eval_data.n_features) != (
            self.K,
            self.d,
        ):
            raise InvalidParameterError(
                f"Booster.fit: eval_data has {eval_data.n_actions} actions and "
                f"{eval_data.n_features} features but data has {self.K} and {self.d}; "
                f"evaluate on rows of the same problem."
            )
        shape = designed_shape(self.n, self.d, self.K, self.design)
        sampling = row_sampling_params(learner.row_sampling, shape, self.design, learner.params)
        self.row_sampling = "goss" if sampling else "none"
        self.sampled_rounds = 0  # rounds whose tree was grown on sampled rows
        self.lambda_l2 = float(params.get("lambda_l2", 0.0))
        self.rows = data.row_chunks
        self.workers = assign_workers(client, data)
        self.placement: dict[str, int] = {}
        for worker, n_p in zip(self.workers, self.rows, strict=True):
            self.placement[worker] = self.placement.get(worker, 0) + n_p
        self.ranks = sorted(self.placement)  # LightGBM's machines, rank 0 first
        self.shards = self._start(self._partitions(), params, sampling)
        self.tie_order = self._tie_order()
        self.eval_scores = None if eval_data is None else np.zeros((len(eval_data), self.K))
        self.round, self.stop_reason = 0, None
        self.history: dict[str, list[float]] = {}
        self.timings: dict[str, list[float]] = {"tree": [], "update": []}
        self.weights: list[float] = []  # alpha_t * factor_t: F = sum_t weights[t] f_t
        self.train_metrics: dict[str, float] = {}
        self.eval_metrics: dict[str, float] = {}
        self.best_round: int | None = None
        self._policy: Policy | None = None

    # --- set-up -------------------------------------------------------------------------

    def _partitions(self) -> list[Any]:
        """Each partition as a validated LoggedBandit with its coefficients, on its worker."""
        from dask import delayed
        from distributed import wait

        shift = float(self.settings.reward_shift)
        parts = [
            self.client.compute(
                delayed(make_partition, pure=True)(p, self.estimator, shift), workers=[w]
            )
            for p, w in zip(self.data.partitions(), self.workers, strict=True)
        ]
        with self.client.as_current():  # wait() uses the current client; ours may not be default
            wait(parts)
        for future in parts:  # raise a partition's validation error here, by name
            if future.status == "error":
                future.result()
        return parts

    def _start(self, parts: list[Any], params: dict[str, Any], sampling: dict[str, Any]) -> Shards:
        """A Shard actor per worker holding partitions, joined by LightGBM's network, its
        Booster sampling the rows as ``sampling`` says; the statistics at F = 0."""
        network, threads = self.learner.network(), int(self.learner.num_threads)
        futures = [
            self.client.submit(
                Shard,
                self.objective,
                self.estimator,
                self.design,
                threads,
                *(p for p, w in zip(parts, self.workers, strict=True) if w == worker),
                workers=[worker],
                allow_other_workers=False,
                actor=True,
            )
            for worker in self.ranks
        ]
        shards = Shards(self.client, self.ranks, futures, network.time_out)
        try:
            wanted = [(port,) for port in requested_ports(self.ranks, network)]
            ports = shards.call_each("the choice of LightGBM's ports", "reserve_port", wanted)
            machines = ",".join(
                f"{urlparse(w).hostname}:{port}" for w, port in zip(self.ranks, ports, strict=True)
            )
            args = [(machines, port, network.time_out, params, sampling) for port in ports]
            stats = shards.call_each("the set-up of LightGBM's network and Datasets", "connect",
                                     args)  # fmt: skip
        except BaseException:
            shards.close()
            raise
        self.stats = self._statistics(stats)
        return shards

    def _tie_order(self) -> np.ndarray:
        """The order the policy breaks equal scores in, as an in-memory fit's
        (``opboost.api.serving.tie_order.constant_tie_order``): the constant actions by SNIPS
        value over every worker's rows."""
        sums = self._call("the constant actions' values", "action_sums")  # (3, K) a worker
        num, den, counts = np.sum(np.stack(sums), axis=0)
        return value_tie_order(snips_values(num, den), counts)

    # --- reductions ---------------------------------------------------------------------

    def _call(self, stage: str, method: str, *args: Any) -> list[Any]:
        """``method(*args)`` on every shard; on any failure the shards are closed first."""
        try:
            return self.shards.call(stage, method, *args)
        except BaseException:
            self.shards.close()
            raise

    def _statistics(self, per_worker: list[np.ndarray]) -> dict[str, float]:
        """The global statistics from the workers' sums (added in rank order)."""
        risk, grad_sq, value, w_sum, w_nnz = np.sum(np.stack(per_worker), axis=0)
        n = self.n
        return {
            "risk": risk / n,
            "gradient_norm": math.sqrt(max(grad_sq, 0.0)) / n,
            "value": value / n,
            "weight_sum": w_sum,
            "weight_nnz": w_nnz,
        }

    # --- the engine protocol ----------------------------------------------------------------

    def gradient_norm(self) -> float:
        return self.stats["gradient_norm"]

    def fit_direction(self) -> Tree:
        """Grow the round's tree on the workers and sum their step terms."""
        if self.stats["weight_nnz"] == 0:  # every weight is 0: f = 0, as lightgbm_tree returns
            return Tree(0.0, 0.0, 0.0)
        start = time.perf_counter()
        scale = self.stats["weight_nnz"] / self.stats["weight_sum"]  # weights to mean 1
        answers = self._call(f"round {self.round + 1} (tree)", "grow", scale)
        if answers[0].ndim == 2:  # grown on sampled rows: the leaves from every worker's rows
            self.sampled_rounds += 1
            G, H = np.sum([answer[1:] for answer in answers], axis=0)
            leaves = leaves_from_sums(answers[0][0], G, H, self.lambda_l2)
            answers = self._call(f"round {self.round + 1} (leaves)", "use_leaves", leaves)
        terms = np.stack(answers)
        numerator, denominator = np.sum(terms[:, :2], axis=0)
        seconds = time.perf_counter() - start
        return Tree(float(numerator), float(denominator), float(np.max(terms[:, 2])), seconds)

    def step_denominator(self, direction: Tree) -> float:
        return direction.denominator

    def step(self, direction: Tree, factor: float, l2: float) -> float:
        return closed_form_step(
            direction.numerator * factor, direction.denominator * factor**2, self.n, l2
        )

    def discard(self, direction: Tree) -> None:
        """Roll the uncommitted tree back on the workers."""
        self._call(f"round {self.round + 1} (discard)", "discard")

    def commit(self, direction: Tree, weight: float, **metrics: float) -> None:
        """F <- F + weight f and the tree's leaves scaled on every worker; the next round's
        statistics; history."""
        start = time.perf_counter()
        send_tree = self.eval_data is not None
        answers = self._call(f"round {self.round + 1} (update)", "commit", weight, send_tree)
        self.stats = self._statistics([stats for stats, _ in answers])
        self.weights.append(weight)
        self.round += 1
        self.train_metrics = {
            **metrics,
            "train_objective": self.stats["risk"],
            "train_value": self.stats["value"],
        }
        self.eval_metrics = {}
        if send_tree:
            self.eval_metrics = self._evaluate(answers[0][1])
        for key, value in {**self.train_metrics, **self.eval_metrics}.items():
            self.history.setdefault(key, []).append(float(value))
        self.timings["tree"].append(direction.seconds)
        self.timings["update"].append(time.perf_counter() - start)

    def snapshot(self) -> dict[str, Any]:
        raise InvalidParameterError(
            "The distributed fit keeps its scores on the workers and writes no checkpoints; "
            "Checkpoint callbacks are not supported there."
        )

    def restore(self, checkpoint: Any) -> None:
        raise InvalidParameterError(
            "The distributed fit keeps its scores on the workers and cannot resume from a "
            "checkpoint; drop the callback that offers one."
        )

    def begin(self) -> None:
        """Nothing left to prepare: the shards are connected and F = 0 (no warm start)."""

    def keep_best(self) -> None:
        self.best_round = self.round

    def _evaluate(self, tree: str | None) -> dict[str, float]:
        """eval_data's metrics after adding the round's scaled tree to its scores."""
        if tree is not None:
            X = self.eval_data.contexts
            if not isinstance(X, np.ndarray):
                X = X.toarray()
            threads = int(self.learner.num_threads)
            self.eval_scores += predict_rows(tree, X, self.K, self.design, threads)
        return policy_values(
            self.eval_data, self.eval_scores, prefix="eval_", tie_order=self.tie_order
        )

    # --- results ------------------------------------------------------------------------

    def policy(self) -> Policy:
        """The fitted policy: rank 0's LightGBM model of the rounds (up to a marked best
        round). The first call ends the fit on the workers."""
        if self._policy is None:
            self._policy = self._make_policy()
        return self._policy

    def _make_policy(self) -> Policy:
        learner = self.learner
        rounds = self.round if self.best_round is None else self.best_round
        text = self._call("the end of the fit", "model_text", rounds)[0]
        self.shards.close()
        ensemble = LightGBMEnsemble(
            lgb.Booster(model_str=text),
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
            ("lightgbm_tree", learner.lightgbm_tree_params()),
            n_rounds=rounds,
            n_actions=self.K,
            n_features=self.d,
            stop_reason=self.stop_reason,
        )
        meta["distributed"] = {
            "base_learner": learner.name,
            "n_partitions": len(self.rows),
            "n_workers": len(self.ranks),
            "n_rows": self.n,
        }
        record_tie_order(meta, self.tie_order)
        if rounds < self.round:
            meta["best_round"] = rounds
        return Policy(ensemble, self.K, meta)

    def fitted_attributes(self) -> dict[str, Any]:
        """``timings_`` (seconds per round: "tree" = the workers' gradients, tree, f and step
        sums, "update" = leaves, F and the next round's statistics), ``distributed_``
        (partitions, rows per partition and per worker, the workers in LightGBM's rank order,
        ``row_sampling``: "goss" or "none", see ``lightgbm_dask_tree``, and ``sampled_rounds``:
        the rounds whose splits came from the sample) and ``best_round_`` when a best was
        marked."""
        out = {
            "timings_": {k: np.asarray(v) for k, v in self.timings.items()},
            "distributed_": {
                "n_partitions": len(self.rows),
                "rows_per_partition": list(self.rows),
                "rows_per_worker": dict(self.placement),
                "ranks": list(self.ranks),
                "row_sampling": self.row_sampling,
                "sampled_rounds": self.sampled_rounds,
            },
        }
        if self.best_round is not None:
            out["best_round_"] = self.best_round
        return out


def make_engine(
    data: Any,
    components: Components,
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
    check_options(settings, eval_data, callbacks)
    check_components(*components)
    client = components.learner.get_client()
    return DistributedFit(settings, data, eval_data, components, client)
