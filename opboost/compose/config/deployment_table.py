"""The ``[deployment]`` section of a study config, and an algorithm's own ``deployment`` table.

A config with a ``[deployment]`` section is a deployment study (``docs/deployment.md``,
"Deployment: batched retraining against online learning"): every trial plays the same
stream of ``batch_size * n_batches`` interactions. Policies learned from logs (offline
boosters, policy learners, the ``best_constant`` and ``reward_regression`` baselines) are
refitted after every batch on all the logs so far and deployed with ``epsilon`` /
``temperature`` exploration; an algorithm's ``deployment = { batch_size = ..., epsilon =
..., temperature = ... }`` overrides the study's values for it.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.api.validation import check_scalar
from opboost.compose.config.validate import check_keys, check_type

__all__ = [
    "ALGORITHM_DEPLOYMENT_KEYS",
    "DEPLOYMENT_DEFAULTS",
    "FIXED_BASELINES",
    "parse_algorithm_deployment",
    "parse_deployment",
]

DEPLOYMENT_DEFAULTS: dict[str, Any] = {
    "batch_size": 100,
    "n_batches": 10,
    "epsilon": 0.1,
    "temperature": 0.0,
}
#: What an algorithm's own ``deployment`` table may set (the stream is the study's).
ALGORITHM_DEPLOYMENT_KEYS = ("batch_size", "epsilon", "temperature")
#: Baselines that play a fixed policy in a deployment (nothing is refitted).
FIXED_BASELINES = ("logging", "uniform")
_RULES: dict[str, dict[str, Any]] = {
    "batch_size": {"kind": numbers.Integral, "low": 1},
    "n_batches": {"kind": numbers.Integral, "low": 1},
    "epsilon": {"low": 0.0, "high": 1.0},
    "temperature": {
        "low": 0.0,
        "fix": "use 0 for epsilon-greedy exploration, or a temperature > 0 for softmax",
    },
}


def parse_deployment(
    table: Any, file: str, key: str = "deployment", allowed: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """The keys of a deployment ``table`` at key path ``key`` (``allowed``: default, every
    key of the section), each checked: types like the defaults, integers >= 1, epsilon in
    [0, 1], temperature finite and >= 0 (0: none)."""
    if not isinstance(table, dict):
        raise ConfigError(f"must be a table. Got {table!r}.", file=file, key=key)
    allowed = tuple(DEPLOYMENT_DEFAULTS) if allowed is None else allowed
    check_keys(table, allowed, file, key, f"[{key}]")
    for name, value in table.items():
        where = f"{key}.{name}"
        check_type(value, DEPLOYMENT_DEFAULTS[name], file, where)
        try:
            check_scalar(value, name, f"[{key}]", **_RULES[name])
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidParameterError(f"The {name!r} must be finite. Got {value!r}.")
        except InvalidParameterError as exc:
            raise ConfigError(str(exc), file=file, key=where) from exc
    return dict(table)


def parse_algorithm_deployment(
    table: dict, family: str, baseline: str | None, file: str, key: str
) -> dict[str, Any]:
    """An algorithm's ``deployment`` overrides ({} without one); only algorithms that are
    refitted in batches may have them."""
    if "deployment" not in table:
        return {}
    where = f"{key}.deployment"
    if family == "online":
        raise ConfigError(
            "an online learner explores and updates by itself at every interaction; remove "
            "its deployment table (set its exploration among the learner's parameters).",
            file=file,
            key=where,
        )
    if baseline in FIXED_BASELINES:
        raise ConfigError(
            f"the {baseline!r} baseline plays a fixed policy in a deployment study and is "
            f"never refitted; remove its deployment table.",
            file=file,
            key=where,
        )
    return parse_deployment(table["deployment"], file, where, ALGORITHM_DEPLOYMENT_KEYS)
