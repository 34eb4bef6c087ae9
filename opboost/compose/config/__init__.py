"""Experiment configs: TOML files that compose plugins by name, parsed and checked.

``experiment`` (:class:`ExperimentConfig`: read, parse, resolve, dump), ``algorithms`` (the
``[[algorithms]]`` tables), ``specs`` (what a parsed config is made of), ``validate`` (known keys,
types, each component's own checks), ``overrides`` (``--set PATH=VALUE``), ``search`` (a
hyper-parameter search inside a study) and ``deployment_table`` (the ``[deployment]`` section).
The names below are those the old module ``opboost.compose.config`` had; they load lazily.
"""

from __future__ import annotations

from opboost.api.lazy import lazy_attributes

__all__ = [
    "BASELINES",
    "AlgorithmSpec",
    "ComponentSpec",
    "ExperimentConfig",
    "apply_overrides",
    "dumps_resolved",
    "load_config",
    "parse_algorithm",
    "parse_config",
    "parse_set_value",
    "resolved_config",
]

_LAZY = {name: "opboost.compose.config.experiment" for name in __all__}

__getattr__, __dir__ = lazy_attributes("opboost.compose.config", _LAZY, globals())
