"""BOPL-S on a Dask LocalCluster: two worker processes on this machine (docs/dask.md).

Run from the repository root (needs ``pip install ".[dask]"``; about 13 s)::

    python examples/dask_local.py

The logs are split into 4 partitions; each worker keeps its partitions and bins them into one
LightGBM Dataset for the fit, LightGBM's data-parallel learner grows one tree per round over
both workers, and the saved policy loads and predicts without Dask.
"""

from __future__ import annotations

import tempfile

import numpy as np
from distributed import Client, LocalCluster
from sklearn.datasets import make_classification

import opboost
from opboost.dask import DaskLoggedBandit, LightGBMDaskTree
from opboost.simulation.supervised import expected_reward, supervised_to_bandit


def main() -> None:
    X, y = make_classification(
        n_samples=6000,
        n_features=20,
        n_informative=10,
        n_classes=5,
        n_clusters_per_class=1,
        random_state=0,
    )
    sim = supervised_to_bandit(X[:5000], y[:5000], n_actions=5, logging_C=0.003, random_state=0)
    X_test, y_test = X[5000:], y[5000:]

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        data = DaskLoggedBandit.from_logged_bandit(sim.logged, npartitions=4)
        booster = opboost.Booster(
            objective="bopl_s",
            base_learner=LightGBMDaskTree(client=client, num_leaves=15),
            n_rounds=20,
            random_state=0,
        ).fit(data)
        print("rows per worker:", booster.distributed_["rows_per_worker"])
        print("seconds per round:", round(float(sum(booster.timings_.values()).mean()), 2))

    logger = expected_reward(sim.logging_policy.predict_proba(X_test), y_test)
    policy = expected_reward(np.eye(5)[booster.predict(X_test)], y_test)
    print(f"true test reward: logging policy {logger:.3f}, BOPL-S on Dask {policy:.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        booster.save(f"{tmp}/policy")  # an ordinary policy: no Dask needed to load it
        loaded = opboost.load_policy(f"{tmp}/policy")
        assert np.array_equal(loaded.predict(X_test), booster.predict(X_test))
    print("saved policy reloaded; cluster closed")


if __name__ == "__main__":
    main()
