"""Fixtures of the integration tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A Dask client of a LocalCluster for one test module: 2 worker processes, 1 thread
    each, loopback only; not the default client (each fit names it)."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client
