"""The distributed fit's workers (opboost.dask): one LightGBM Dataset per worker for the whole
fit, the same policy on repeated fits, and clear, prompt failures (a port in use, a lost
worker) instead of a hang.

One LocalCluster (the ``client`` fixture of conftest.py: 2 worker processes, 1 thread each)
serves the module; the last test kills one of its workers.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

from sklearn.datasets import make_classification

from opboost import Booster, InvalidParameterError
from opboost.api.callback import Callback
from opboost.api.engine import FitSettings
from opboost.core.loop import boost_round
from opboost.dask import DaskLoggedBandit, DistributedFitError, LightGBMDaskTree
from opboost.dask.boosting import DistributedFit
from opboost.simulation.supervised import supervised_to_bandit


@pytest.fixture(scope="module")
def data():
    """1,200 logged rows with continuous features (each worker finds its share of the bins on
    its own rows), 4 partitions."""
    X, y = make_classification(
        n_samples=1200, n_features=8, n_informative=5, n_classes=4, random_state=1
    )
    logged = supervised_to_bandit(X, y, n_actions=4, random_state=1).logged
    return DaskLoggedBandit.from_logged_bandit(logged, npartitions=4)


def fit(client, data, n_rounds=6, callbacks=(), **params):
    learner = LightGBMDaskTree(client=client, **{"num_leaves": 7, "min_data_in_leaf": 10, **params})
    booster = Booster(n_rounds=n_rounds, base_learner=learner, random_state=3)
    return booster.fit(data, callbacks=list(callbacks))


def test_repeated_fits_give_the_same_policy(client, data):
    """Same seed, data and partitioning: the same model text and scores, bit for bit."""
    first, second = fit(client, data), fit(client, data)
    assert first.n_rounds_ == second.n_rounds_ == 6
    assert first.policy_.ensemble.dumps() == second.policy_.ensemble.dumps()
    X = data.contexts.compute()
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    np.testing.assert_array_equal(first.history_["alpha"], second.history_["alpha"])
    assert first.distributed_["ranks"] == second.distributed_["ranks"]
    assert len(first.distributed_["ranks"]) == 2


def test_sampled_rounds_on_the_cluster_keep_the_risk_falling(client):
    """row_sampling="goss" on two workers: each tree's splits come from each worker's sample,
    its leaves from every row of both (the step is taken on them, so BOPL-S's risk never
    rises); the default ("none") leaves them unsampled. The policy records the setting."""
    X, y = make_classification(n_samples=3000, n_features=8, n_informative=5, n_classes=4,
                               random_state=1)  # fmt: skip
    logged = supervised_to_bandit(X, y, n_actions=4, random_state=1).logged
    data = DaskLoggedBandit.from_logged_bandit(logged, npartitions=4)
    tree = {"num_leaves": 31, "min_data_in_leaf": 20}
    sampled = fit(client, data, n_rounds=8, row_sampling="goss", **tree)
    every = fit(client, data, n_rounds=8, **tree)
    assert sampled.distributed_["row_sampling"] == "goss"
    assert sampled.distributed_["sampled_rounds"] >= 4  # the first: LightGBM's GOSS warm-up
    assert every.distributed_["row_sampling"] == "none"
    assert every.distributed_["sampled_rounds"] == 0
    assert sampled.policy_.metadata["base_learner_params"]["row_sampling"] == "goss"
    risk = sampled.history_["train_objective"]
    assert sampled.n_rounds_ == 8 and np.all(np.diff(risk) <= 1e-12)
    assert sampled.policy_.ensemble.dumps() != every.policy_.ensemble.dumps()


def test_a_sampled_tree_that_splits_on_no_action_hands_the_workers_to_every_row(client, data):
    """On these 1,200 logs the second round's tree, grown on the workers' samples, splits on
    context columns only (it would change no policy; the fit stopped there): every worker
    drops it and grows this round and the rest on all its rows. The fit is then the one
    without sampling (LightGBM's GOSS grows its first tree on every row)."""
    sampled = fit(client, data, n_rounds=8, row_sampling="goss")
    every = fit(client, data, n_rounds=8, row_sampling="none")
    assert sampled.n_rounds_ == 8, sampled.stop_reason_
    assert sampled.distributed_["sampled_rounds"] == 1
    np.testing.assert_allclose(  # the new Booster's scores start at 0: the last bits differ
        sampled.history_["train_objective"], every.history_["train_objective"], rtol=1e-12
    )


def _count_binning() -> None:
    """On a worker: count LightGBM's Datasets binned from a float matrix from now on."""
    from lightgbm import basic

    original = basic._LIB.LGBM_DatasetCreateFromMat
    basic._opboost_test_bins = 0

    def counted(*args):
        basic._opboost_test_bins += 1
        return original(*args)

    basic._LIB.LGBM_DatasetCreateFromMat = counted
    basic._opboost_test_original = original


def _binned() -> int:
    """On a worker: the count since :func:`_count_binning`, which it undoes."""
    from lightgbm import basic

    basic._LIB.LGBM_DatasetCreateFromMat = basic._opboost_test_original
    return basic._opboost_test_bins


@pytest.mark.parametrize("n_rounds", [2, 8])
def test_each_worker_bins_its_rows_once_per_fit(client, data, n_rounds):
    """The workers bin their rows into LightGBM Datasets at the start of the fit only: as
    many matrices binned for 8 rounds as for 2 (lightgbm.dask rebuilt them every round)."""
    client.run(_count_binning)
    try:
        booster = fit(client, data, n_rounds=n_rounds)
    finally:
        counts = client.run(_binned)
    assert booster.n_rounds_ == n_rounds
    # Per worker: its contexts and its action column (stacked_dataset), once.
    assert sorted(counts.values()) == [2, 2]


def _port_pair() -> int:
    """A port p with p and p + 1 free on the loopback interface."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("", port))
                b.bind(("", port + 1))
            return port
        except OSError:
            continue
    pytest.fail("no two consecutive free ports found")


def test_local_listen_port_and_a_port_in_use(client, data):
    """local_listen_port p: worker i of a host listens on p + i, fit after fit (the fit
    leaves no TIME_WAIT on them). A port in use fails the fit at once, naming the port and
    the worker; the cluster then fits again."""
    base = _port_pair()
    for _ in range(2):
        assert fit(client, data, n_rounds=2, params={"local_listen_port": base}).n_rounds_ == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))  # no SO_REUSEADDR: nothing may hold the port
        taken.listen()
        start = time.monotonic()
        with pytest.raises(DistributedFitError) as caught:
            fit(client, data, params={"local_listen_port": base})
        assert time.monotonic() - start < 10
    rank_1 = sorted(client.nthreads())[1]
    assert str(caught.value).startswith(
        f"The distributed fit failed at the choice of LightGBM's ports on worker {rank_1}: "
        f"OSError: LightGBM's listening port {base + 1} is in use on this worker"
    )
    assert fit(client, data, n_rounds=2).n_rounds_ == 2


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"machines": "127.0.0.1:1,127.0.0.1:2"}, "may not set 'machines': the fit sets"),
        ({"tree_learner": "voting"}, "may not set 'tree_learner'"),
        ({"time_out": 0}, "has 'time_out' = 0; it must be an int >= 1 (a port, or minutes)"),
        ({"port": "12400"}, "has 'port' = '12400'; it must be an int >= 1"),
    ],
)
def test_network_params_are_checked(client, data, params, message):
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        fit(client, data, params=params)


def test_a_second_fit_at_the_same_time_is_refused(client, data):
    """LightGBM keeps one network per thread and a worker runs all actors on one thread: a
    fit started (in another thread) while another holds the workers fails at once, and the
    first goes on."""
    booster = Booster(n_rounds=2, random_state=3)
    booster.set_params(base_learner=LightGBMDaskTree(client=client, num_leaves=7))
    components = booster.resolve_components()
    settings = FitSettings(seed=3)
    first = DistributedFit(settings, data, None, components, client)
    errors = []

    def second() -> None:
        try:
            DistributedFit(settings, data, None, components, client)
        except DistributedFitError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(timeout=120)
    assert len(errors) == 1 and "Another distributed fit is using LightGBM's network" in errors[0]
    assert boost_round(first, settings.step) is not None
    assert first.policy().n_rounds == 1  # ends the first fit: the workers are free again
    assert fit(client, data, n_rounds=2).n_rounds_ == 2


class Interrupt(Callback):
    """Raise after round 1, outside the engine's calls."""

    name = "interrupt"

    def on_round_end(self, env) -> None:
        raise KeyboardInterrupt("stopped by hand")


def test_a_fit_abandoned_by_a_callback_does_not_block_the_next(client, data):
    """A callback's error leaves the fit without its end (its workers still joined); the
    next fit in the same thread releases them and runs."""
    with pytest.raises(KeyboardInterrupt) as caught:  # keeps the abandoned fit referenced
        fit(client, data, callbacks=[Interrupt()])
    assert fit(client, data, n_rounds=2).n_rounds_ == 2
    assert caught.value.args == ("stopped by hand",)


class KillWorker(Callback):
    """After round ``at``, kill the worker of LightGBM rank 1 (SIGKILL: no goodbye)."""

    name = "kill_worker"

    def __init__(self, client, at: int) -> None:
        self.client, self.at = client, at

    def on_round_end(self, env) -> None:
        if env.round == self.at:
            worker = sorted(self.client.nthreads())[1]
            os.kill(self.client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)


def test_a_lost_worker_fails_the_fit(client, data):
    """A worker killed mid-fit fails the fit within seconds with an error naming it and the
    round (the other worker's LightGBM sees the closed connection; the client sees the
    worker leave), not after LightGBM's time-out (1 minute here)."""
    lost = sorted(client.nthreads())[1]
    start = time.monotonic()
    with pytest.raises(DistributedFitError) as caught:
        fit(client, data, callbacks=[KillWorker(client, at=2)], params={"time_out": 1})
    assert time.monotonic() - start < 30
    assert str(caught.value).startswith(
        f"The distributed fit lost worker(s) [{lost!r}] at round 3 (tree): the partitions they "
        f"held and LightGBM's network between the workers are gone"
    )


def _shard(sampling=None):
    """A one-machine Shard (no network, no Dask worker) on 600 logged rows, connected, its
    rounds sampling the rows as ``sampling`` (LightGBM parameters) says."""
    from opboost import make
    from opboost.dask.partitions import make_partition
    from opboost.dask.shard import Shard

    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, n_classes=3,
                               random_state=2)  # fmt: skip
    logged = supervised_to_bandit(X, y, n_actions=3, random_state=2).logged
    estimator = make("estimator", "ips")
    shard = Shard(make("objective", "bopl_s"), estimator, "stacked", 1,
                  make_partition(logged, estimator, 0.0))  # fmt: skip
    params = LightGBMDaskTree(num_leaves=7, min_data_in_leaf=10).lgb_params(0)
    shard.connect("localhost:0", 0, 1, params, sampling or {})
    return shard


def test_a_discarded_round_leaves_the_next_one_as_if_it_was_never_grown():
    """After discard() (LightGBM rolls its scores back), the next grow() sees the tree's
    outputs against the restored scores: the same f and step terms as a shard that never grew
    the discarded round (the old code kept the discarded scores: f was then 0)."""
    discarding, fresh = _shard(), _shard()
    first = discarding.grow(1.0)
    assert np.abs(discarding.f).max() > 0
    discarding.discard()
    again = discarding.grow(1.0)
    np.testing.assert_array_equal(again, first)  # the same tree from the same gradients
    np.testing.assert_array_equal(again, fresh.grow(1.0))
    np.testing.assert_array_equal(discarding.f, fresh.f)
    discarding.close()
    fresh.close()


def test_the_dask_learner_records_the_equivalent_lightgbm_tree():
    """A policy fitted on Dask records lightgbm_tree with the Dask learner's parameters
    (row_sampling included), and lightgbm_tree's own at their defaults: exactly what
    lightgbm_tree built from them gives (the Dask learner computes it without importing
    lightgbm_tree), and the same LightGBM parameters."""
    from opboost.algorithms.learners.lightgbm_tree import LightGBMTree

    dask_learner = LightGBMDaskTree(
        num_leaves=7, max_bin=63, row_sampling="auto", params={"time_out": 2}
    )
    params = dask_learner.get_params(deep=False)
    del params["client"]
    tree = LightGBMTree(**params)
    assert dask_learner.lightgbm_tree_params() == tree.get_params(deep=False)
    assert list(dask_learner.lightgbm_tree_params()) == list(tree.get_params(deep=False))
    lightgbm = tree._lgb_params(5)
    del lightgbm["num_threads"], lightgbm["time_out"]
    assert dask_learner.lgb_params(5) == lightgbm


def test_a_sampled_shard_sets_each_leaf_from_all_its_rows():
    """With GOSS a worker's grow() returns its leaf values and, per leaf, the sums of the
    gradients and hessians of ALL its rows (each row's leaf as LightGBM itself finds it); the
    leaves the client makes of them, -G / (H + lambda_l2), become the tree's and f's, and the
    step terms are those of that f."""
    from opboost.lgbm.rows import design_rows
    from opboost.lgbm.sampling import GOSS_PARAMS, leaves_from_sums

    shard = _shard({**GOSS_PARAMS, "force_col_wise": True})
    contexts = np.concatenate([p.data.contexts for p in shard.parts])
    rows = design_rows(contexts, shard.K, "stacked")
    changed = []
    for _ in range(3):
        values, G, H = shard.grow(1.0)
        tree = shard.booster.num_trees() - 1
        leaf = shard.booster.predict(rows, start_iteration=tree, num_iteration=1, pred_leaf=True)
        leaf = np.asarray(leaf).reshape(-1)
        L = len(values)
        np.testing.assert_allclose(G, np.bincount(leaf, shard.grad.astype(float), L), rtol=1e-9)
        np.testing.assert_allclose(H, np.bincount(leaf, shard.hess.astype(float), L), rtol=1e-9)
        leaves = leaves_from_sums(values, G, H, 0.0)
        changed.append(not np.allclose(leaves, values))
        terms = shard.use_leaves(leaves)
        np.testing.assert_allclose(shard.f.reshape(-1), leaves[leaf], rtol=1e-12)
        np.testing.assert_allclose(shard.booster.predict(rows, start_iteration=tree,
                                   num_iteration=1), leaves[leaf], rtol=1e-12)  # fmt: skip
        np.testing.assert_array_equal(terms, shard._step_terms())
        shard.commit(0.5, False)
    # LightGBM's GOSS grows its first tree on every row, the next on the sample
    assert changed == [False, True, True]
    shard.close()
