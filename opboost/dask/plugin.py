"""Registers ``lightgbm_dask_tree`` through the same hook as the built-in base learners.

Registered only when dask and distributed are installed (``pip install "opboost[dask]"``),
found with ``importlib.util.find_spec``, which imports neither; without them it tells the
registry (``opboost_unavailable_components``) which extra to install.
"""

from __future__ import annotations

from importlib.util import find_spec

from opboost.api.hookspecs import hookimpl


def dask_installed() -> bool:
    """Whether dask and distributed are importable (checked without importing them)."""
    return all(find_spec(name) is not None for name in ("dask", "distributed"))


@hookimpl
def opboost_unavailable_components():
    if dask_installed():
        return []
    return [("base_learner", "lightgbm_dask_tree", "pip install opboost[dask]")]


@hookimpl
def opboost_register_base_learners():
    if not dask_installed():
        return []
    from opboost.dask.lightgbm_dask_tree import LightGBMDaskTree

    return [LightGBMDaskTree]
