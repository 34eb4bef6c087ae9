"""opboost-vw: Vowpal Wabbit contextual-bandit learners for opboost.

``vw_cb_explore`` (kind "online_learner", registered by :mod:`opboost_vw.plugin`) learns online
with ``--cb_explore_adf``; ``vw_cb_adf`` (kind "policy_learner",
:class:`opboost_vw.offline.VWOfflinePolicy`) learns a greedy policy from logged (action,
reward, propensity) rows with ``--cb_adf``. Importing this package
loads neither vowpalwabbit nor the opboost registry.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("opboost-vw")
except PackageNotFoundError:  # pragma: no cover - source tree without metadata
    __version__ = "0+unknown"

__all__ = ["__version__"]
