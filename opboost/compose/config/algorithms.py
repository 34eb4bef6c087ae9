"""Algorithm rows of experiment configs: ``[[algorithms]]`` tables parsed into specs.

An algorithm is offline (booster/objective/estimator/base_learner/callbacks), online
(``online_learner``), a policy learner (``policy_learner``) or a reference policy
(``baseline``). Components are names or tables with ``name`` plus constructor parameters,
checked by :mod:`opboost.compose.config.validate`. The config file as a whole is
:mod:`opboost.compose.config.experiment`; ``docs/config.md`` is the reference.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import replace
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError, PluginError
from opboost.api.validation import check_scalar
from opboost.compose.config.deployment_table import parse_algorithm_deployment
from opboost.compose.config.search import parse_search
from opboost.compose.config.specs import AlgorithmSpec, ComponentSpec
from opboost.compose.config.validate import (
    check_keys,
    check_param,
    check_params,
    check_type,
    suggest,
    validate_component,
)
from opboost.core.registry import UnknownComponentError, get_registry

__all__ = [
    "BASELINES",
    "BASELINE_PARAMS",
    "parse_algorithm",
    "parse_component",
    "resolved_algorithm",
    "resolved_component",
]

BASELINES = ("logging", "uniform", "best_constant", "reward_regression")
#: Parameters each baseline accepts, with defaults (random_state comes from the trial seed).
BASELINE_PARAMS: dict[str, dict[str, Any]] = {
    "logging": {},
    "uniform": {},
    "best_constant": {"estimator": "snips"},
    "reward_regression": {
        "n_estimators": 200,
        "num_leaves": 31,
        "learning_rate": 0.05,
        "min_child_samples": 20,
    },
}
_BEST_CONSTANT_ESTIMATORS = ("ips", "snips")
#: check_scalar rules of the reward_regression baseline's LightGBM settings (as LightGBM's).
_BASELINE_RULES: dict[str, dict[str, Any]] = {
    "n_estimators": {"kind": numbers.Integral, "low": 1},
    "num_leaves": {"kind": numbers.Integral, "low": 2, "high": 131072},
    "learning_rate": {"low": 0.0, "low_inclusive": False},
    "min_child_samples": {"kind": numbers.Integral, "low": 0},
}
#: Booster parameters that the config sets through component tables or the trial seed.
_BOOSTER_MANAGED = {
    "objective",
    "estimator",
    "base_learner",
    "objective_params",
    "estimator_params",
    "base_learner_params",
    "random_state",
    "verbose",
}
_ONLINE_MANAGED = {"n_actions", "random_state"}
_POLICY_MANAGED = {"random_state"}
#: Stand-ins for the managed values when a component is built to run its validate() at parse
#: time (the data and the seed are unknown then).
_PARSE_TIME_VALUES: dict[str, dict[str, Any]] = {
    "online_learner": {"n_actions": 2, "random_state": 0},
    "policy_learner": {"random_state": 0},
}
_OFFLINE_KEYS = ("booster", "objective", "estimator", "base_learner", "callbacks")
_ONLINE_KEYS = ("online_learner", "n_passes")
_BASELINE_KEYS = ("baseline", "params")
_COMMON_KEYS = ("label", "search")


def parse_component(
    value: Any, kind: str, file: str, key: str, managed: set[str] = frozenset()
) -> ComponentSpec:
    """A component of ``kind`` from its name or ``{ name = ..., <parameters> }``, checked
    (``managed``: parameters the config sets from the data and the trial seed)."""
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict) or "name" not in value:
        raise ConfigError(
            f"a {kind} must be a name or a table with 'name' plus parameters, e.g. "
            f'{{ name = "{next(iter(get_registry().names(kind)), "...")}" }}. '
            f"Got {value!r}.",
            file=file,
            key=key,
        )
    params = dict(value)
    name = params.pop("name")
    if not isinstance(name, str):
        raise ConfigError(
            f"the {kind} name must be a string such as "
            f'"{next(iter(get_registry().names(kind)), "...")}". Got {name!r}.',
            file=file,
            key=f"{key}.name",
        )
    if kind == "objective" and name == "auto":  # the Booster's default, resolved at fit
        return ComponentSpec(kind, name, params)
    try:
        cls = get_registry().get(kind, name)
    except UnknownComponentError as exc:
        raise ConfigError(str(exc), file=file, key=f"{key}.name") from exc
    except PluginError as exc:
        raise ConfigError(str(exc), file=file, key=key) from exc
    check_params(
        params,
        cls,
        f"{kind} {name!r} ({cls.__name__})",
        managed,
        lambda param: (
            f"{param!r} of {kind} {name!r} is set by opboost from the data and the trial "
            f"seed; remove it."
        ),
        file,
        key,
    )
    spec = ComponentSpec(kind, name, params)
    validate_component(spec, file, key, _PARSE_TIME_VALUES.get(kind))
    return spec


def _baseline_params(table: dict, baseline: str, file: str, key: str) -> dict[str, Any]:
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError(f"must be a table. Got {params!r}.", file=file, key=f"{key}.params")
    defaults = BASELINE_PARAMS[baseline]
    for param, val in params.items():
        owner = f"baseline {baseline!r}"
        check_param(param, val, defaults, list(defaults), owner, file, f"{key}.params")
        if param in _BASELINE_RULES:
            try:
                check_scalar(val, param, f"baseline {baseline!r}", **_BASELINE_RULES[param])
                if isinstance(val, float) and not math.isfinite(val):
                    raise InvalidParameterError(f"must be finite. Got {val!r}.")
            except InvalidParameterError as exc:
                raise ConfigError(str(exc), file=file, key=f"{key}.params.{param}") from exc
    estimator = params.get("estimator")
    if estimator is not None and estimator not in _BEST_CONSTANT_ESTIMATORS:
        raise ConfigError(
            f"must be one of {', '.join(_BEST_CONSTANT_ESTIMATORS)}. Got {estimator!r}."
            f"{suggest(str(estimator), list(_BEST_CONSTANT_ESTIMATORS))}",
            file=file,
            key=f"{key}.params.estimator",
        )
    return dict(params)


def _online(table: dict, label: str, index: int, file: str, key: str) -> AlgorithmSpec:
    check_keys(table, (*_COMMON_KEYS, *_ONLINE_KEYS), file, key, "an online algorithm")
    spec = parse_component(
        table["online_learner"],
        "online_learner",
        file,
        f"{key}.online_learner",
        managed=_ONLINE_MANAGED,
    )
    cls = get_registry().get("online_learner", spec.name)
    if getattr(cls, "feedback", "bandit") != "bandit":
        bandit = [
            n
            for n in get_registry().names("online_learner")
            if getattr(get_registry().get("online_learner", n), "feedback", "") == "bandit"
        ]
        raise ConfigError(
            f"online learner {spec.name!r} learns from {cls.feedback!r} feedback; studies "
            f"stream contextual-bandit feedback. Use one of: {', '.join(bandit)}.",
            file=file,
            key=f"{key}.online_learner.name",
        )
    n_passes = table.get("n_passes", 1)
    check_type(n_passes, 1, file, f"{key}.n_passes")
    if n_passes < 1:
        raise ConfigError(f"must be >= 1. Got {n_passes!r}.", file=file, key=f"{key}.n_passes")
    return AlgorithmSpec(
        label, "online", online_learner=spec, n_passes=n_passes, raw=table, index=index
    )


def _offline(table: dict, label: str, index: int, file: str, key: str) -> AlgorithmSpec:
    from opboost.core.booster import Booster

    check_keys(
        table,
        (*_COMMON_KEYS, *_OFFLINE_KEYS),
        file,
        key,
        "an offline algorithm (or give online_learner, policy_learner or baseline)",
    )
    booster = table.get("booster", {})
    if not isinstance(booster, dict):
        raise ConfigError(f"must be a table. Got {booster!r}.", file=file, key=f"{key}.booster")
    for param in booster:
        if param in _BOOSTER_MANAGED:
            raise ConfigError(
                f"set {param!r} with its own table (objective, estimator, base_learner) or, "
                f"for random_state, through [experiment] seeds."
                if param != "verbose"
                else "a study's boosters are silent (the study shows a progress bar of its "
                "trials); drop 'verbose'.",
                file=file,
                key=f"{key}.booster.{param}",
            )
    Booster.check_params(booster, f"{file} [{key}.booster]", managed=_BOOSTER_MANAGED)
    defaults = Booster().get_params(deep=False)
    callbacks = table.get("callbacks", [])
    if not isinstance(callbacks, list):
        raise ConfigError(
            'must be a list of tables, e.g. [{ name = "early_stopping" }].',
            file=file,
            key=f"{key}.callbacks",
        )
    parts = {
        part: parse_component(table.get(part, defaults[part]), part, file, f"{key}.{part}")
        for part in ("objective", "estimator", "base_learner")
    }
    return AlgorithmSpec(
        label,
        "offline",
        booster=dict(booster),
        callbacks=tuple(
            parse_component(cb, "callback", file, f"{key}.callbacks[{i}]")
            for i, cb in enumerate(callbacks)
        ),
        raw=table,
        index=index,
        **parts,
    )


def parse_algorithm(table: Any, index: int, file: str, *, search: bool = True) -> AlgorithmSpec:
    """Validate one ``[[algorithms]]`` table (``search=False`` ignores its search key)."""
    key = f"algorithms[{index}]"
    if not isinstance(table, dict):
        raise ConfigError(f"each algorithm must be a table. Got {table!r}.", file=file, key=key)
    label = table.get("label", f"algorithm {index}")
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(
            f"must be a non-empty string. Got {label!r}.", file=file, key=f"{key}.label"
        )
    original, table = table, {k: v for k, v in table.items() if k != "deployment"}
    if "online_learner" in table:
        spec = _online(table, label, index, file, key)
    elif "policy_learner" in table:
        check_keys(table, (*_COMMON_KEYS, "policy_learner"), file, key, "a policy learner")
        learner = parse_component(
            table["policy_learner"],
            "policy_learner",
            file,
            f"{key}.policy_learner",
            managed=_POLICY_MANAGED,
        )
        spec = AlgorithmSpec(label, "policy", policy_learner=learner, raw=table, index=index)
    elif "baseline" in table:
        check_keys(table, (*_COMMON_KEYS, *_BASELINE_KEYS), file, key, "a baseline")
        baseline = table["baseline"]
        if baseline not in BASELINES:
            raise ConfigError(
                f"unknown baseline {baseline!r}. Known: {', '.join(BASELINES)}."
                f"{suggest(str(baseline), list(BASELINES))}",
                file=file,
                key=f"{key}.baseline",
            )
        params = _baseline_params(table, baseline, file, key)
        spec = AlgorithmSpec(
            label, "baseline", baseline=baseline, params=params, raw=table, index=index
        )
    else:
        spec = _offline(table, label, index, file, key)
    deployment = parse_algorithm_deployment(original, spec.family, spec.baseline, file, key)
    if deployment:  # a deployment study's own settings (config_deployment), kept in raw
        spec = replace(spec, deployment=deployment, raw=original)
    if search and "search" in table:
        candidate = functools.partial(parse_algorithm, index=index, file=file, search=False)
        spec = replace(spec, search=parse_search(table["search"], spec, file, candidate))
    return spec


# --- resolution ----------------------------------------------------------------------------


def resolved_component(spec: ComponentSpec, managed: set[str] = frozenset()) -> dict[str, Any]:
    """``{name, <every constructor parameter but managed ones and None>}`` of ``spec``
    (``objective = "auto"``: its name and set parameters; the fit chooses the objective)."""
    params = dict(spec.params) if spec.name == "auto" else spec.build().get_params(deep=False)
    return {
        "name": spec.name,
        **{k: v for k, v in params.items() if k not in managed and v is not None},
    }


def resolved_algorithm(algo: AlgorithmSpec) -> dict[str, Any]:
    """One algorithm row with every default filled in (None values omitted)."""
    from opboost.core.booster import Booster

    row: dict[str, Any] = {"label": algo.label}
    if algo.family == "online":
        row["online_learner"] = resolved_component(algo.online_learner, _ONLINE_MANAGED)
        row["n_passes"] = algo.n_passes
    elif algo.family == "policy":
        row["policy_learner"] = resolved_component(algo.policy_learner, _POLICY_MANAGED)
    elif algo.family == "baseline":
        row["baseline"] = algo.baseline
        params = {**BASELINE_PARAMS[algo.baseline], **algo.params}
        if params:
            row["params"] = params
    else:
        booster = Booster(**algo.booster).get_params(deep=False)
        row["booster"] = {
            k: v for k, v in booster.items() if k not in _BOOSTER_MANAGED and v is not None
        }
        for part in ("objective", "estimator", "base_learner"):
            row[part] = resolved_component(getattr(algo, part))
        if algo.callbacks:
            row["callbacks"] = [resolved_component(cb) for cb in algo.callbacks]
    if algo.deployment:
        row["deployment"] = dict(algo.deployment)
    if algo.search is not None:
        row["search"] = algo.search.to_dict()
    return row
