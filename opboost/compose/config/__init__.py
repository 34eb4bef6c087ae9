"""Experiment configs: TOML files that compose plugins by name, parsed and checked.

``experiment`` (:class:`ExperimentConfig`: read, parse, resolve, dump), ``algorithms`` (the
``[[algorithms]]`` tables), ``specs`` (what a parsed config is made of), ``validate`` (known keys,
types, each component's own checks), ``overrides`` (``--set PATH=VALUE``), ``search`` (a
hyper-parameter search inside a study) and ``deployment_table`` (the ``[deployment]`` section).
The names below are those the old module ``opboost.compose.config`` had.
"""

from __future__ import annotations

from opboost.compose.config.algorithms import BASELINES, parse_algorithm
from opboost.compose.config.experiment import (
    ExperimentConfig,
    dumps_resolved,
    load_config,
    parse_config,
    resolved_config,
)
from opboost.compose.config.overrides import apply_overrides, parse_set_value
from opboost.compose.config.specs import AlgorithmSpec, ComponentSpec

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
