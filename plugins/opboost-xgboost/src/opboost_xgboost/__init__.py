"""opboost-xgboost: XGBoost regression trees as an opboost base learner.

The plugin module :mod:`opboost_xgboost.plugin` registers ``xgboost_tree`` (kind
"base_learner") through the ``opboost`` entry-point group; importing this package loads
neither xgboost nor opboost's registry.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("opboost-xgboost")
except PackageNotFoundError:  # pragma: no cover - source tree without metadata
    __version__ = "0+unknown"

__all__ = ["__version__"]
