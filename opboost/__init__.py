"""opboost: boosting algorithms that learn contextual-bandit policies from bandit feedback.

Public facade. Importing opboost loads neither lightgbm nor river, and builds no plugin
registry; both happen on first use.
"""

from __future__ import annotations

import os as _os

# OpenMP threads (LightGBM's) sleep while they wait for each other instead of spinning: on a
# busy machine a spinning thread holds the core its descheduled sibling needs, and small fits
# then took many times their one-thread time (docs/performance.md, "Threads"). OpenMP reads it
# when LightGBM loads its runtime, so it is set before anything imports lightgbm; a value set
# by the user wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from opboost.api.data.logged import LoggedBandit
from opboost.api.exceptions import (
    ConfigError,
    InvalidParameterError,
    NotFittedError,
    OpboostError,
    PluginError,
)
from opboost.api.fit_metadata import opboost_version
from opboost.api.hookspecs import hookimpl
from opboost.api.lazy import MovedModules, lazy_attributes
from opboost.moved import MOVED
from opboost.registry import available, get_registry, make

__version__ = opboost_version()

MovedModules(MOVED).install()  # the old import paths of moved modules

__all__ = [
    "Booster",
    "ConfigError",
    "InvalidParameterError",
    "LoggedBandit",
    "NotFittedError",
    "OpboostError",
    "PluginError",
    "PolicyChoice",
    "__version__",
    "available",
    "get_registry",
    "hookimpl",
    "load_policy",
    "make",
    "off_policy_scorer",
]

_LAZY = {
    "Booster": ("opboost.booster", "Booster"),
    "load_policy": ("opboost.policy", "load_policy"),
    "PolicyChoice": ("opboost.compose.choice", "PolicyChoice"),
    "off_policy_scorer": ("opboost.metrics", "off_policy_scorer"),
    "simulate": ("opboost.simulation.supervised", None),
    "online": ("opboost.online", None),
}


__getattr__, __dir__ = lazy_attributes("opboost", _LAZY, globals())
