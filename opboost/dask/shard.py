"""One worker's share of a distributed fit: a Dask actor that keeps, for the whole fit, its
partitions, their scores F, ONE binned LightGBM Dataset of their designed rows and ONE
LightGBM Booster whose data-parallel tree learner grows each round's tree with the other
workers' Boosters over LightGBM's own sockets.

Per fit: :meth:`Shard.reserve_port`, then :meth:`Shard.connect` on every worker at once
(LightGBM's network; the Dataset, whose bin boundaries the workers find for a share of the
features each and all-gather, so every worker bins alike; the Booster). Per round:
:meth:`Shard.grow` on every worker at once (gradients from F, one tree, f on the worker's
rows, the step sums), then :meth:`Shard.commit` (the tree's leaves and F scaled by the step;
the next round's statistics). Only a few floats per call go back to the client.

LightGBM keeps its network per thread: the set-up, the Dataset construction and every tree
must run on one thread. Dask runs an actor's methods on the worker's single actor thread.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import socket
import weakref
from collections.abc import Callable
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.basic import _LIB, _safe_call

from opboost.dask.partitions import Partition, regression_terms, state_stats, step_terms
from opboost.lgbm.layout import (
    LAYOUTS,
    fetch_scores,
    score_change,
    set_round_leaves,
    update_one_iter,
)
from opboost.lgbm.rows import histogram_layout, stacked_dataset
from opboost.lgbm.sampling import (
    booster_without_sampling,
    last_leaf_values,
    leaf_sums,
    set_last_leaves,
    splits_on_actions,
)

__all__ = ["Shard", "strip_parameters"]


def _leave_network_on_error(method: Callable) -> Callable:
    """``method``, leaving LightGBM's network when it fails: the peers waiting for this
    worker inside LightGBM then fail at once (connection closed), not after their time-out."""

    @functools.wraps(method)
    def wrapper(self: Shard, *args: Any) -> Any:
        try:
            return method(self, *args)
        except BaseException:
            self.close()
            raise

    return wrapper


class Shard:
    """The partitions of one worker (in partition order, rows stacked: n_w rows in all) and
    their fit state; created on the worker by ``client.submit(Shard, ..., actor=True)``.

    ``threads`` is LightGBM's thread count (0: the worker's thread count).
    """

    def __init__(
        self, objective: Any, estimator: Any, design: str, threads: int, *parts: Partition
    ) -> None:
        if threads <= 0:
            from distributed import get_worker

            threads = get_worker().state.nthreads
        self.objective, self.estimator = objective, estimator
        self.design, self.threads = design, threads
        self.parts = parts
        bounds = np.cumsum([0, *(len(p.data) for p in parts)])
        self.slices = [slice(a, b) for a, b in itertools.pairwise(bounds)]
        self.n, self.K, self.d = int(bounds[-1]), parts[0].data.n_actions, parts[0].data.n_features
        self.scores = np.zeros((self.n, self.K))  # F on the worker's rows
        self.booster: lgb.Booster | None = None
        self.networked = False
        self._socket: socket.socket | None = None

    # --- set-up ---------------------------------------------------------------------------

    def reserve_port(self, port: int) -> int:
        """Bind a TCP port for LightGBM (``port``, or any free one for 0) and hold it until
        :meth:`connect`; the port bound."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError as exc:
            sock.close()
            raise OSError(
                f"LightGBM's listening port {port} is in use on this worker ({exc}); choose "
                f"another params={{'local_listen_port': ...}}, or leave it unset to let every "
                f"worker pick a free port."
            ) from exc
        self._socket = sock
        return int(sock.getsockname()[1])

    @_leave_network_on_error
    def connect(
        self,
        machines: str,
        port: int,
        time_out: int,
        params: dict[str, Any],
        sampling: dict[str, Any],
    ) -> np.ndarray:
        """Join LightGBM's network (``machines`` "host:port,..." in rank order, this worker's
        ``port``, socket ``time_out`` in minutes; one machine: no network), build the Dataset
        with ``params`` (``lightgbm_tree``'s) and the Booster with them and ``sampling``
        (LightGBM's row sampling of the rounds, from
        :func:`opboost.lgbm.sampling.row_sampling_params`); the statistics at F = 0 (5,)."""
        if self._socket is not None:
            self._socket.close()  # never connected: LightGBM can bind the port at once
            self._socket = None
        n_machines = len(machines.split(","))
        params = {**params, "num_threads": self.threads}
        if n_machines > 1:
            _claim_network(self)
            _safe_call(
                _LIB.LGBM_NetworkInit(
                    machines.encode(),
                    ctypes.c_int(port),
                    ctypes.c_int(time_out),
                    ctypes.c_int(n_machines),
                )
            )
            self.networked = True
            params.update(tree_learner="data", num_machines=n_machines)
        contexts = np.concatenate([p.data.contexts for p in self.parts])
        dataset = stacked_dataset(contexts, self.K, self.design, params)
        del contexts
        params.update({k: v for k, v in sampling.items() if k in LAYOUTS})
        if not set(LAYOUTS) & set(params):  # the bins are global: every worker picks alike
            params[histogram_layout(dataset, self.design)] = True
        self.booster = lgb.Booster({**params, **sampling}, dataset)
        self.sampled, self.leaf = bool(sampling), None
        self.empty_text = self.booster.model_to_string()
        size = self.n * self.K
        self.grad, self.hess = np.empty(size, np.float32), np.empty(size, np.float32)
        self.cached = np.zeros((self.n, self.K))  # LightGBM's training scores when last read
        self.f = np.zeros((self.n, self.K))
        self.pending = 0
        return self._refresh()

    def action_sums(self) -> np.ndarray:
        """(3, K): per action, the worker's sums of r / p and of 1 / p over the rows that
        logged it, and their number (the SNIPS values of the constant actions, summed over
        the workers)."""
        out = np.zeros((3, self.K))
        for part in self.parts:
            data = part.data
            weights = 1.0 / np.asarray(data.propensities, dtype=np.float64)
            for row, values in enumerate((weights * data.rewards, weights, None)):
                out[row] += np.bincount(data.actions, weights=values, minlength=self.K)
        return out

    # --- rounds -------------------------------------------------------------------------

    @_leave_network_on_error
    def grow(self, weight_scale: float) -> np.ndarray:
        """Grow this round's tree (every worker at once) from the gradients at F, hessians
        scaled by ``weight_scale``; keep f (n_w, K) and return [N_w, D_w, max|f|]. A tree
        grown on sampled rows returns instead its leaf values and this worker's sums of the
        gradients and hessians in each leaf over ALL its rows, (3, L): the client sums them
        over the workers and sets the leaves (:meth:`use_leaves`)."""
        grad, hess = self.grad.reshape(self.n, self.K), self.hess.reshape(self.n, self.K)
        for rows, problem in zip(self.slices, self.problems, strict=True):
            regression_terms(problem, weight_scale, grad[rows], hess[rows])
        self.pending = update_one_iter(self.booster, self.grad, self.hess)
        if self.sampled and self.pending and not splits_on_actions(self.booster, self.d):
            self.discard()  # no policy would change: this round and the rest on every row
            self.booster, self.sampled = booster_without_sampling(self.booster), False
            fetch_scores(self.booster, self.cached)
            self.pending = update_one_iter(self.booster, self.grad, self.hess)
        if self.pending:
            score_change(self.booster, self.cached, self.f)
        else:  # no split was possible on any worker
            self.f.fill(0.0)
        if self.sampled and self.pending:
            values = last_leaf_values(self.booster)  # the same tree on every worker
            sums = leaf_sums(values, self.f.reshape(-1), self.grad, self.hess)
            if sums is not None:  # else no worker can tell two leaves apart: left as grown
                *sums, self.leaf = sums
                return np.stack([values, *sums])
        return self._step_terms()

    @_leave_network_on_error
    def use_leaves(self, leaves: np.ndarray) -> np.ndarray:
        """Set the sampled tree's leaves (L,) (from every worker's rows) and f on this
        worker's rows; [N_w, D_w, max|f|] as :meth:`grow`."""
        set_last_leaves(self.booster, leaves, self.leaf, self.f.reshape(-1))
        self.leaf = None
        return self._step_terms()

    def _step_terms(self) -> np.ndarray:
        """[N_w, D_w, max|f|] of the round's f on this worker's rows."""
        terms = [
            step_terms(self.objective, state, self.f[rows])
            for rows, state in zip(self.slices, self.states, strict=True)
        ]
        terms = np.stack(terms)
        return np.array([terms[:, 0].sum(), terms[:, 1].sum(), terms[:, 2].max()])

    def commit(self, weight: float, send_tree: bool) -> tuple[np.ndarray, str | None]:
        """F <- F + weight f and the tree's leaves times ``weight``; the next round's
        statistics (5,) and, if ``send_tree``, the scaled tree's model text."""
        text = None
        if self.pending:
            last = self.booster.num_trees() - 1
            set_round_leaves(self.booster, [(last, weight)], 1, lambda values, a: a * values)
            if send_tree:
                text = strip_parameters(
                    self.booster.model_to_string(start_iteration=last, num_iteration=1)
                )
            self.pending = 0
        self.scores += weight * self.f
        return self._refresh(), text

    def discard(self) -> None:
        """Drop the round grown last (LightGBM restores its training scores, read again)."""
        if self.pending:
            self.booster.rollback_one_iter()
            fetch_scores(self.booster, self.cached)
            self.pending = 0

    # --- the end --------------------------------------------------------------------------

    def model_text(self, rounds: int) -> str:
        """The LightGBM model of the first ``rounds`` committed rounds (leaves scaled), its
        parameters section removed."""
        text = self.booster.model_to_string(num_iteration=rounds) if rounds else self.empty_text
        return strip_parameters(text)

    def close(self) -> None:
        """Leave LightGBM's network and free the Booster and Dataset."""
        if self.networked:
            _safe_call(_LIB.LGBM_NetworkFree())
            self.networked = False
            if _NETWORK.get("holder", lambda: None)() is self:
                del _NETWORK["holder"]
        self.booster = None

    # --- helpers --------------------------------------------------------------------------

    def _refresh(self) -> np.ndarray:
        """Round states and problems of the partitions at F; the summed statistics (5,)."""
        objective = self.objective
        self.states, self.problems, stats = [], [], []
        for part, rows in zip(self.parts, self.slices, strict=True):
            state = objective.round_state(self.scores[rows], part.data, part.coef)
            problem = objective.problem_at(state, "regression")
            stats.append(state_stats(objective, self.estimator, part, state, problem))
            self.states.append(state)
            self.problems.append(problem)
        return np.sum(np.stack(stats), axis=0)


#: The Shard that holds LightGBM's network on this worker's actor thread (a weak reference).
_NETWORK: dict[str, weakref.ref] = {}


def _claim_network(shard: Shard) -> None:
    """Make ``shard`` the holder of this worker's LightGBM network, or raise if another
    live fit holds it (all actors of a worker share one thread, and LightGBM keeps one
    network per thread: a second fit would tear down the first one's)."""
    holder = _NETWORK.get("holder")
    other = holder() if holder is not None else None
    if other is not None and other is not shard and other.networked:
        raise RuntimeError(
            "Another distributed fit is using LightGBM's network on this worker; LightGBM "
            "keeps one network per thread and Dask runs every actor of a worker on one "
            "thread. Run distributed fits on a cluster one at a time."
        )
    _NETWORK["holder"] = weakref.ref(shard)


def strip_parameters(model_text: str) -> str:
    """LightGBM model text without its trailing ``parameters:`` section (training settings,
    including the network's); LightGBM loads it unchanged."""
    head, sep, rest = model_text.partition("\nparameters:\n")
    if not sep:
        return model_text
    _, sep, tail = rest.partition("end of parameters\n")
    return head + "\n" + tail if sep else model_text
