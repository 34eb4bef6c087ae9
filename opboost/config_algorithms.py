"""Algorithm rows of experiment configs: ``[[algorithms]]`` tables parsed into specs.

An algorithm is offline (booster/objective/estimator/base_learner/callbacks), online
(``online_learner``), a policy learner (``policy_learner``) or a reference policy
(``baseline``). Components are names or tables with ``name`` plus constructor parameters,
checked against the registered class's signature. The config file as a whole is
:mod:`opboost.config`; ``docs/studies.md`` is the reference.
"""

from __future__ import annotations

import difflib
import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from opboost.exceptions import ConfigError, PluginError
from opboost.registry import UnknownComponentError, get_registry

__all__ = [
    "BASELINES",
    "BASELINE_PARAMS",
    "AlgorithmSpec",
    "ComponentSpec",
    "check_keys",
    "check_type",
    "parse_algorithm",
    "parse_component",
    "resolved_algorithm",
    "resolved_component",
    "suggest",
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
#: Booster parameters that the config sets through component tables or the trial seed.
_BOOSTER_MANAGED = {
    "objective",
    "estimator",
    "base_learner",
    "objective_params",
    "estimator_params",
    "base_learner_params",
    "random_state",
}
_ONLINE_MANAGED = {"n_actions", "random_state"}
_POLICY_MANAGED = {"random_state"}
_OFFLINE_KEYS = ("booster", "objective", "estimator", "base_learner", "callbacks")
_ONLINE_KEYS = ("online_learner", "n_passes")
_BASELINE_KEYS = ("baseline", "params")
_COMMON_KEYS = ("label", "search")


@dataclass(frozen=True)
class ComponentSpec:
    """A plugin component by kind and name, with its explicitly set parameters."""

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def build(self, **extra: Any) -> Any:
        """A new instance with ``params`` and ``extra``."""
        return get_registry().get(self.kind, self.name)(**{**self.params, **extra})


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm row: ``family`` is "offline", "online", "policy" or "baseline"."""

    label: str
    family: str
    booster: dict[str, Any] = field(default_factory=dict)
    objective: ComponentSpec | None = None
    estimator: ComponentSpec | None = None
    base_learner: ComponentSpec | None = None
    callbacks: tuple[ComponentSpec, ...] = ()
    online_learner: ComponentSpec | None = None
    n_passes: int = 1
    policy_learner: ComponentSpec | None = None
    baseline: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: Hyper-parameter search (an :class:`opboost.search.SearchSpec`), or None.
    search: Any = None
    #: The algorithm's TOML table as written (search candidates are re-parsed from it).
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    index: int = 0

    def make_booster(self, random_state: Any = None) -> Any:
        """The configured :class:`opboost.Booster` (offline algorithms)."""
        from opboost.booster import Booster

        return Booster(
            objective=self.objective.name,
            objective_params=self.objective.params,
            estimator=self.estimator.name,
            estimator_params=self.estimator.params,
            base_learner=self.base_learner.name,
            base_learner_params=self.base_learner.params,
            random_state=random_state,
            **self.booster,
        )

    def make_callbacks(self) -> list[Any]:
        """New instances of the configured fit callbacks."""
        return [spec.build() for spec in self.callbacks]

    def make_online_learner(self, n_actions: int, random_state: Any = None) -> Any:
        """The configured online bandit learner for ``n_actions`` actions."""
        return self.online_learner.build(n_actions=n_actions, random_state=random_state)


# --- checks shared with opboost.config and opboost.search ----------------------------------


def suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""


def check_keys(
    table: dict, allowed: list[str] | tuple[str, ...], file: str, path: str, what: str
) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(
                f"unknown key {key!r} in {what}. Valid keys: {', '.join(allowed)}."
                f"{suggest(key, list(allowed))}",
                file=file,
                key=f"{path}.{key}" if path else key,
            )


def check_type(value: Any, default: Any, file: str, key: str) -> None:
    """Values must have the type of the parameter's default (ints are accepted for floats)."""
    if default is None or default is inspect.Parameter.empty:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, numbers.Integral):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    elif isinstance(default, numbers.Real):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        return
    if not ok:
        raise ConfigError(
            f"must be {type(default).__name__} like its default {default!r}. "
            f"Got {value!r} ({type(value).__name__}).",
            file=file,
            key=key,
        )


def _signature_defaults(cls: type) -> dict[str, Any]:
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


# --- algorithm tables ----------------------------------------------------------------------


def check_params(
    params: dict[str, Any],
    cls: type,
    owner: str,
    managed: set[str] | frozenset[str],
    managed_message: Callable[[str], str],
    file: str,
    key: str,
) -> dict[str, Any]:
    """Check ``params`` against ``cls``'s constructor: no ``managed`` key (the config sets
    it; ``managed_message(param)`` says how), no unknown key, types like the defaults.
    Returns the constructor's defaults."""
    defaults = _signature_defaults(cls)
    allowed = [p for p in defaults if p not in managed]
    for param, val in params.items():
        if param in managed:
            raise ConfigError(managed_message(param), file=file, key=f"{key}.{param}")
        if param not in defaults:
            raise ConfigError(
                f"{owner} has no parameter {param!r}. Valid: "
                f"{', '.join(allowed) or 'none'}.{suggest(param, allowed)}",
                file=file,
                key=f"{key}.{param}",
            )
        check_type(val, defaults[param], file, f"{key}.{param}")
    return defaults


def parse_component(
    value: Any, kind: str, file: str, key: str, managed: set[str] = frozenset()
) -> ComponentSpec:
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
    return ComponentSpec(kind, name, params)


def _baseline_params(table: dict, baseline: str, file: str, key: str) -> dict[str, Any]:
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError(f"must be a table. Got {params!r}.", file=file, key=f"{key}.params")
    defaults = BASELINE_PARAMS[baseline]
    for param, val in params.items():
        if param not in defaults:
            raise ConfigError(
                f"baseline {baseline!r} has no parameter {param!r}. Valid: "
                f"{', '.join(defaults) or 'none'}.{suggest(param, list(defaults))}",
                file=file,
                key=f"{key}.params.{param}",
            )
        check_type(val, defaults[param], file, f"{key}.params.{param}")
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
    from opboost.booster import Booster

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
    defaults = check_params(
        booster,
        Booster,
        "Booster",
        _BOOSTER_MANAGED,
        lambda param: (
            f"set {param!r} with its own table (objective, estimator, base_learner) or, "
            f"for random_state, through [experiment] seeds."
        ),
        file,
        f"{key}.booster",
    )
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
    if search and "search" in table:
        from opboost.search import parse_search

        spec = replace(spec, search=parse_search(table["search"], spec, file))
    return spec


# --- resolution ----------------------------------------------------------------------------


def resolved_component(spec: ComponentSpec, managed: set[str] = frozenset()) -> dict[str, Any]:
    params = spec.build().get_params(deep=False)
    return {
        "name": spec.name,
        **{k: v for k, v in params.items() if k not in managed and v is not None},
    }


def resolved_algorithm(algo: AlgorithmSpec) -> dict[str, Any]:
    """One algorithm row with every default filled in (None values omitted)."""
    from opboost.booster import Booster

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
    if algo.search is not None:
        row["search"] = algo.search.to_dict()
    return row
