"""opboost: boosting algorithms that learn contextual-bandit policies from bandit feedback.

Public facade: every public name of the modules a user of the Booster meets (the Booster, the
fit callbacks, the scorers, loading policies, the registry, the errors, the logs, the policy
choice). Plugin authors use :mod:`opboost.api`. Importing opboost loads neither lightgbm nor
river, and builds no plugin registry; both happen on first use.
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
    ConfigParameterError,
    HiddenLabelError,
    InsufficientMemoryError,
    InvalidParameterError,
    NotFittedError,
    OpboostError,
    OpboostWarning,
    PluginError,
)
from opboost.api.fit_metadata import opboost_version
from opboost.api.hookspecs import hookimpl
from opboost.api.lazy import lazy_attributes
from opboost.core.registry import (
    BUILTIN_DISTRIBUTION,
    ENTRY_POINT_GROUP,
    PluginInfo,
    PluginLoadWarning,
    Registry,
    UnknownComponentError,
    available,
    get_registry,
    make,
    reset_registry,
)

__version__ = opboost_version()

#: Names loaded on first use -> (module, attribute; None: the module itself).
_LAZY = {
    "Booster": ("opboost.core.booster", "Booster"),
    **{
        name: ("opboost.core.callbacks", name)
        for name in ("Callback", "Checkpoint", "EarlyStopping", "History", "Progress", "RoundEnv")
    },
    **{
        name: ("opboost.core.metrics", name)
        for name in ("OffPolicyScorer", "off_policy_scorer", "to_xy")
    },
    **{name: ("opboost.api.policy", name) for name in ("ConstantPolicy", "Policy")},
    "load_policy": ("opboost.core.policy_loading", "load_policy"),
    "PolicyChoice": ("opboost.compose.choice", "PolicyChoice"),
    "simulate": ("opboost.simulation.supervised", None),
    "online": ("opboost.algorithms.online", None),
}

__all__ = [
    "BUILTIN_DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "Booster",
    "Callback",
    "Checkpoint",
    "ConfigError",
    "ConfigParameterError",
    "ConstantPolicy",
    "EarlyStopping",
    "HiddenLabelError",
    "History",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "LoggedBandit",
    "NotFittedError",
    "OffPolicyScorer",
    "OpboostError",
    "OpboostWarning",
    "PluginError",
    "PluginInfo",
    "PluginLoadWarning",
    "Policy",
    "PolicyChoice",
    "Progress",
    "Registry",
    "RoundEnv",
    "UnknownComponentError",
    "__version__",
    "available",
    "get_registry",
    "hookimpl",
    "load_policy",
    "make",
    "off_policy_scorer",
    "reset_registry",
    "to_xy",
]


__getattr__, __dir__ = lazy_attributes("opboost", _LAZY, globals())
