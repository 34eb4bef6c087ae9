"""``lightgbm_dask_tree``: one weighted least-squares LightGBM tree per round, grown over all
the workers of a Dask cluster by LightGBM's data-parallel tree learner.

The tree is the one ``lightgbm_tree`` grows (same parameters, same action designs, same
leaves: the weighted mean of the targets), on the designed rows each worker holds in a
LightGBM Dataset built once per fit (:mod:`opboost.dask.shard`). The learner only fits on a
:class:`opboost.dask.DaskLoggedBandit`; the rounds are driven by
:func:`opboost.dask.boosting.make_engine`. Importing this module does not import dask.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from opboost.api.constraints import Interval, Options, Rule, Satisfies
from opboost.api.exceptions import InvalidParameterError
from opboost.api.learner import BaseLearner, BaseProblem, Ensemble
from opboost.dask.network import NetworkSettings, network_params_problem, split_network_params
from opboost.lgbm.ensemble import LightGBMEnsemble
from opboost.lgbm.params import (
    LIGHTGBM_PARAMS,
    LIGHTGBM_TREE_CONSTRAINTS,
    TREE_ONLY_DEFAULTS,
    tree_params,
)
from opboost.lgbm.sampling import ROW_SAMPLINGS

__all__ = ["DASK_ACTION_DESIGNS", "LightGBMDaskTree"]

#: Action designs the distributed learner supports (one tree per round over stacked rows).
DASK_ACTION_DESIGNS = ("stacked", "stacked_onehot")


def in_memory_error(what: str) -> InvalidParameterError:
    """The error for in-memory data given to the distributed learner."""
    return InvalidParameterError(
        f"The base learner 'lightgbm_dask_tree' fits on a Dask cluster and got {what}. Wrap "
        f"the logs: Booster(...).fit(opboost.dask.DaskLoggedBandit.from_logged_bandit(data, "
        f"npartitions=8)) with a dask.distributed Client running (or load them with "
        f"DaskLoggedBandit.from_parquet); for in-memory data use base_learner='lightgbm_tree'."
    )


class LightGBMDaskTree(BaseLearner):
    """A LightGBM regression tree per round, grown by LightGBM's data-parallel learner on
    the workers of a Dask cluster.

    Parameters
    ----------
    num_leaves, max_depth, min_data_in_leaf, min_sum_hessian_in_leaf, lambda_l2
        as for ``lightgbm_tree``. Weights are rescaled
        to mean 1 over the nonzero entries of ALL partitions each round.
    feature_fraction, max_bin, random_state
        as for ``lightgbm_tree``.
    num_threads
        LightGBM threads on each worker; 0 (default) uses the worker's thread count
        (``threads_per_worker``).
    action_design
        "stacked" (default) or "stacked_onehot"; "per_action" is not supported.
    row_sampling
        "none" (default), "auto" or "goss", as for ``lightgbm_tree`` ("auto" judged
        on the designed rows of ALL partitions): each worker's share of the tree is grown on
        LightGBM's gradient-based one-side sample of its rows, then every leaf is set from the
        gradients and hessians of every row of every worker (summed on the client), so only
        the splits come from the sample. Not the default here: on 2 workers it did not save
        time (1.34x at 5,000,000 stacked rows of 21 columns, 1.04x at 3,000,000 of 51;
        docs/dask.md).
    params
        extra LightGBM parameters, as for ``lightgbm_tree``, and the network settings
        ``local_listen_port`` (worker i of a host listens on it + i; default: any free port)
        and ``time_out`` (minutes, default 10: LightGBM's socket time-out and the longest
        the client waits for one call to the workers). ``machines``, ``num_machines`` and
        ``tree_learner`` are set by the fit.
    client
        the ``dask.distributed.Client`` to fit on; None uses the current default client.
    """

    name: ClassVar[str] = "lightgbm_dask_tree"
    reduction: ClassVar[str] = "regression"
    ensemble_class: ClassVar[type[Ensemble]] = LightGBMEnsemble
    _parameter_constraints: ClassVar[dict] = {
        **{k: v for k, v in LIGHTGBM_TREE_CONSTRAINTS.items() if k != "hessian_units"},
        "num_threads": [Interval(Integral, 0, None, fix="use 0 for the worker's thread count")],
        "action_design": [
            Options(
                DASK_ACTION_DESIGNS,
                fix="'per_action' (K trees per round) is not supported on Dask; use 'stacked'",
            )
        ],
        "row_sampling": [Options(ROW_SAMPLINGS)],
        "params": [*LIGHTGBM_PARAMS, Rule(lambda p: network_params_problem(p["params"]))],
        "client": [
            None,
            Satisfies(
                lambda c: callable(getattr(c, "submit", None)) and hasattr(c, "scheduler_info"),
                "a dask.distributed.Client",
            ),
        ],
    }
    _unit_test_skips: ClassVar[dict[str, str]] = {
        "check_base_learner_round_and_save": (
            "fits only on a DaskLoggedBandit with a running Dask cluster; the same contract "
            "(one round, alpha * f, save/load) is tested in tests/integration/test_dask.py"
        )
    }

    def __init__(
        self,
        *,
        num_leaves: int = 31,
        max_depth: int = -1,
        min_data_in_leaf: int = 20,
        min_sum_hessian_in_leaf: float = 1e-3,
        lambda_l2: float = 0.0,
        feature_fraction: float = 1.0,
        max_bin: int = 255,
        num_threads: int = 0,
        action_design: str = "stacked",
        random_state: Any = None,
        row_sampling: str = "none",
        params: dict[str, Any] | None = None,
        client: Any = None,
    ) -> None:
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_data_in_leaf = min_data_in_leaf
        self.min_sum_hessian_in_leaf = min_sum_hessian_in_leaf
        self.lambda_l2 = lambda_l2
        self.feature_fraction = feature_fraction
        self.max_bin = max_bin
        self.num_threads = num_threads
        self.action_design = action_design
        self.random_state = random_state
        self.row_sampling = row_sampling
        self.params = params
        self.client = client

    @classmethod
    def _unit_test_params(cls) -> dict[str, Any]:
        return {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}

    def __sklearn_clone__(self) -> LightGBMDaskTree:
        """Clone every parameter but ``client``, which is shared (a Client cannot be copied)."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    # --- the in-memory contract: not for this learner -------------------------------------

    def prepare(
        self,
        contexts: Any,
        n_actions: int,
        *,
        random_state: Any = None,
        init_scores: np.ndarray | None = None,
    ) -> None:
        raise in_memory_error(f"in-memory contexts ({type(contexts).__name__})")

    def fit_round(self, problem: BaseProblem) -> np.ndarray:
        raise in_memory_error("an in-memory problem")

    def commit_round(self, alpha: float) -> None:
        raise in_memory_error("an in-memory round")

    def ensemble(self) -> Ensemble:
        raise in_memory_error("no distributed fit")

    # --- what the distributed loop uses ---------------------------------------------------

    def lightgbm_tree_params(self) -> dict[str, Any]:
        """The parameters of the equivalent single-machine learner, ``lightgbm_tree`` (what
        a policy fitted here records: it loads and predicts as that learner's)."""
        params = {**self.get_params(deep=False), **TREE_ONLY_DEFAULTS}
        del params["client"]
        return dict(sorted(params.items()))

    def get_client(self) -> Any:
        """``client``, or the current default ``dask.distributed`` client."""
        if self.client is not None:
            return self.client
        from distributed import default_client

        try:
            return default_client()
        except ValueError as exc:
            raise InvalidParameterError(
                "The base learner 'lightgbm_dask_tree' found no Dask client: start one first "
                "(client = dask.distributed.Client('tcp://scheduler:8786'), or "
                "Client(LocalCluster()) on one machine) or pass "
                "base_learner_params={'client': client}."
            ) from exc

    def lgb_params(self, seed: int) -> dict[str, Any]:
        """Validated LightGBM parameters of the workers' Boosters: ``lightgbm_tree``'s (custom
        objective, learning rate 1: every leaf is the weighted mean of its targets), made
        deterministic, without the thread count and network settings (the fit sets them)."""
        params = tree_params(self, seed)  # validated
        del params["num_threads"]
        _, params = split_network_params(params)
        params.setdefault("deterministic", True)
        return params

    def network(self) -> NetworkSettings:
        """LightGBM's network settings from ``params`` (``local_listen_port``, ``time_out``)."""
        return split_network_params(self.params)[0]
