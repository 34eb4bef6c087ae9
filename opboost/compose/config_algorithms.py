"""Algorithm rows of experiment configs: ``[[algorithms]]`` tables parsed into specs.

An algorithm is offline (booster/objective/estimator/base_learner/callbacks), online
(``online_learner``), a policy learner (``policy_learner``) or a reference policy
(``baseline``). Components are names or tables with ``name`` plus constructor parameters,
checked against the registered class's signature. The config file as a whole is
:mod:`opboost.compose.config`; ``docs/studies.md`` is the reference.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError, PluginError
from opboost.api.validation import check_scalar
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
    "run_component_checks",
    "suggest",
    "validate_component",
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
}
_ONLINE_MANAGED = {"n_actions", "random_state"}
_POLICY_MANAGED = {"random_state"}
#: Managed values a component gets at parse-time validation (the data and the seed are unknown).
_PROBE_EXTRA: dict[str, dict[str, Any]] = {
    "online_learner": {"n_actions": 2, "random_state": 0},
    "policy_learner": {"random_state": 0},
}
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
    #: Hyper-parameter search (an :class:`opboost.compose.search.SearchSpec`), or None.
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


# --- checks shared with opboost.compose.config and opboost.compose.search ------------


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
    if not isinstance(name, str):
        raise ConfigError(
            f"the {kind} name must be a string such as "
            f'"{next(iter(get_registry().names(kind)), "...")}". Got {name!r}.',
            file=file,
            key=f"{key}.name",
        )
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
    validate_component(spec, file, key, _PROBE_EXTRA.get(kind))
    return spec


# --- parse-time validation through the components' own checks ------------------------------

#: Methods a component validates its parameters with, called without data at parse time
#: (those taking a seed get 0). Plugins may define ``_check_params()`` to take part.
_CHECK_METHODS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("_check_params", ()),
    ("_check", ()),
    ("_check_label_params", ()),
    ("_lgb_params", (0,)),
    ("lgb_params", (0,)),
)
_PARAM_IN_MESSAGE = re.compile(r"The '(\w+)' parameter")


class _ProbeStop(Exception):
    """A probed callback asked for fit state: its parameter checks are behind it."""


class _ProbeEnv:
    """The fit environment a callback's ``on_fit_start`` sees at parse time: empty history,
    and any other attribute stops the probe."""

    history: dict[str, Any] = {}  # noqa: RUF012 - read-only probe

    def __getattr__(self, name: str) -> Any:
        raise _ProbeStop(name)


def _takes(method: Any, n_args: int) -> bool:
    """Whether the bound ``method`` can be called with ``n_args`` positional arguments."""
    try:
        inspect.signature(method).bind(*range(n_args))
    except (TypeError, ValueError):
        return False
    return True


def run_component_checks(obj: Any, kind: str) -> None:
    """Run ``obj``'s own parameter checks without data; raises InvalidParameterError.

    Calls the validation methods of :data:`_CHECK_METHODS` that ``obj`` has (only the first
    of ``_check_params``/``_lgb_params``/``lgb_params``, which overlap), then probes the
    checks that run at first use: a callback's ``on_fit_start`` (stopped as soon as it needs
    fit state) and an online learner's ``predict_one`` on one zero context.
    """
    calls: list[Callable[[], Any]] = []
    done_lgb = False
    for name, args in _CHECK_METHODS:
        method = getattr(obj, name, None)
        if not callable(method) or not _takes(method, len(args)):
            continue
        if name in ("_check_params", "_lgb_params", "lgb_params"):
            if done_lgb:
                continue
            done_lgb = True
        calls.append(lambda method=method, args=args: method(*args))
    if kind == "callback" and hasattr(obj, "on_fit_start"):
        calls.append(lambda: obj.on_fit_start(_ProbeEnv()))
    elif kind == "online_learner" and hasattr(obj, "predict_one"):
        import numpy as np

        calls.append(lambda: obj.predict_one(np.zeros(2)))
    for call in calls:
        try:
            call()
        except InvalidParameterError:
            raise
        except Exception:  # only parameter errors are reported at parse time;
            pass  # anything else (a check that needs data) is left to the trial


def _param_error(exc: InvalidParameterError, params: dict[str, Any], file: str, key: str):
    """``exc`` as a ConfigError at the key of the parameter it names (when set in the file)."""
    found = _PARAM_IN_MESSAGE.search(str(exc))
    param = found.group(1) if found else None
    where = f"{key}.{param}" if param in params else key
    return ConfigError(str(exc), file=file, key=where)


def validate_component(
    spec: ComponentSpec, file: str, key: str, extra: dict[str, Any] | None = None
) -> None:
    """Build ``spec`` (with ``extra`` managed values) and run its own checks; a failure is a
    ConfigError naming ``file`` and the key of the bad parameter."""
    cls = get_registry().get(spec.kind, spec.name)
    accepted = _signature_defaults(cls)
    extra = {k: v for k, v in (extra or {}).items() if k in accepted and k not in spec.params}
    try:
        obj = spec.build(**extra)
        run_component_checks(obj, spec.kind)
    except InvalidParameterError as exc:
        raise _param_error(exc, spec.params, file, key) from exc


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
    try:
        Booster(**booster)._check_params()
    except InvalidParameterError as exc:
        raise _param_error(exc, booster, file, f"{key}.booster") from exc
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
        from opboost.compose.search import parse_search

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
