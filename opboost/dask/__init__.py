"""BOPL on a Dask cluster: logs larger than one machine, trees grown by LightGBM's data-parallel
learner on the workers that hold the rows.

Install with ``pip install "opboost[dask]"``. Usage (docs/dask.md)::

    from dask.distributed import Client
    from opboost import Booster
    from opboost.dask import DaskLoggedBandit

    client = Client("tcp://scheduler:8786")          # or Client(LocalCluster(...))
    data = DaskLoggedBandit.from_parquet("logs/", context_columns=[...], action_column="a",
                                         reward_column="r", propensity_column="p", n_actions=5)
    booster = Booster(base_learner="lightgbm_dask_tree", n_rounds=100).fit(data)
    booster.save("policy")                            # an ordinary policy: loads without Dask

Importing this package imports neither dask nor lightgbm: the names below load on first use,
and the core of opboost never imports this package (the ``lightgbm_dask_tree`` plugin is
registered without importing dask).
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = ["DaskLoggedBandit", "DistributedFitError", "LightGBMDaskTree", "make_engine"]

_LAZY = {
    "DaskLoggedBandit": "opboost.dask.data",
    "LightGBMDaskTree": "opboost.dask.lightgbm_dask_tree",
    "DistributedFitError": "opboost.dask.network",
    "make_engine": "opboost.dask.boosting",
}


__getattr__, __dir__ = lazy_attributes("opboost.dask", _LAZY, globals())
