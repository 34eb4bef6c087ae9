"""Experiment configs: TOML files that compose plugins by name, parsed and checked.

``experiment`` (:class:`ExperimentConfig`: read, parse, resolve, dump), ``algorithms`` (the
``[[algorithms]]`` tables), ``specs`` (what a parsed config is made of), ``validate`` (known keys,
types, each component's own checks), ``overrides`` (``--set PATH=VALUE``), ``search`` (a
hyper-parameter search inside a study) and ``deployment_table`` (the ``[deployment]`` section).
The names below are those the old module ``opboost.compose.config`` had; they load lazily.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

#: The names the old module opboost.compose.config had -> the module of this package that
#: defines each.
_HOMES = {
    "AlgorithmSpec": "specs",
    "BASELINES": "algorithms",
    "ComponentSpec": "specs",
    "ExperimentConfig": "experiment",
    "apply_overrides": "overrides",
    "dumps_resolved": "experiment",
    "load_config": "experiment",
    "parse_algorithm": "algorithms",
    "parse_config": "experiment",
    "parse_set_value": "overrides",
    "resolved_config": "experiment",
}

__all__ = sorted(_HOMES)

_LAZY = {name: f"opboost.compose.config.{module}" for name, module in _HOMES.items()}

__getattr__, __dir__ = lazy_attributes("opboost.compose.config", _LAZY, globals())
