"""Experiment configs: TOML files that compose plugins by name.

A config has four parts::

    [data]                      # a registered data set and its parameters
    name = "digits"

    [simulation]                # supervised-to-bandit conversion and splits
    log_fraction = 0.1

    [experiment]                # trials and metrics
    seeds = [0, 1, 2]

    [[algorithms]]              # one table per algorithm
    label = "BOPL-S"
    booster = { n_rounds = 100, reward_shift = 0.0 }
    objective = { name = "bopl_s" }
    estimator = { name = "ips" }
    base_learner = { name = "lightgbm_tree", num_leaves = 15 }
    callbacks = [{ name = "early_stopping", patience = 10 }]

An optional ``[deployment]`` section (batch_size, n_batches, epsilon, temperature) makes the
config a deployment study (:mod:`opboost.compose.config.deployment_table`), which may stream a
catalogue world (``[data] world = "catalogue"``, :mod:`opboost.compose.config.catalogue_table`).

An algorithm is offline (booster/objective/estimator/base_learner/callbacks), online
(``online_learner = { name = ..., ... }``, contextual-bandit feedback) or a reference policy
(``baseline = "logging"``, "uniform", "best_constant" or "reward_regression", with optional
``params``). Any algorithm may add ``search = { method = "random", n_iter = 8, space = {...} }``
(see :mod:`opboost.compose.config.search`). Keys are exactly the constructor parameters; a component
is a name or a table with ``name`` plus parameters. Every unknown key, wrong type, out-of-range
value or unknown plugin is a :class:`ConfigError` naming the file, the key path and the valid
names. The full reference is ``docs/config.md``.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opboost.api.exceptions import ConfigError
from opboost.compose.config import world_table
from opboost.compose.config.algorithms import (
    parse_algorithm,
    parse_component,
    resolved_algorithm,
    resolved_component,
)
from opboost.compose.config.deployment_table import DEPLOYMENT_DEFAULTS, parse_deployment
from opboost.compose.config.logs_table import (
    check_logs_algorithms,
    check_logs_file,
    is_logs_table,
    parse_logs,
)
from opboost.compose.config.overrides import apply_overrides, blame_override
from opboost.compose.config.specs import AlgorithmSpec, ComponentSpec, LogsSpec, WorldSpec
from opboost.compose.config.validate import check_keys, check_type, suggest

__all__ = ["ExperimentConfig", "dumps_resolved", "load_config", "parse_config", "resolved_config"]

SIMULATION_DEFAULTS: dict[str, Any] = {
    "log_fraction": 0.1,
    "epsilon": 0.0,
    "logging_C": 0.1,
    "test_fraction": 0.25,
    "valid_fraction": 0.0,
    "max_rows": 0,
    "split": "per_trial",
}
EXPERIMENT_DEFAULTS: dict[str, Any] = {
    "seeds": [0, 1, 2],
    "n_jobs": 1,
    "selection": "true",
    "online_eval_points": 10,
    "offline_curve_points": 4,
    "confidence": 0.95,
}
#: (low, high, low_inclusive, high_inclusive) for numeric settings; choices for strings.
_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "simulation.log_fraction": (0.0, 1.0, False, False),
    "simulation.epsilon": (0.0, 1.0, True, True),
    "simulation.logging_C": (0.0, float("inf"), False, True),
    "simulation.test_fraction": (0.0, 1.0, False, False),
    "simulation.valid_fraction": (0.0, 1.0, True, False),
    "simulation.max_rows": (0, float("inf"), True, True),
    "experiment.n_jobs": (1, float("inf"), True, True),
    "experiment.online_eval_points": (0, float("inf"), True, True),
    "experiment.offline_curve_points": (0, float("inf"), True, True),
    "experiment.confidence": (0.0, 1.0, False, False),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "simulation.split": ("per_trial", "fixed"),
    "experiment.selection": ("true", "snips"),
}


@dataclass(frozen=True)
class ExperimentConfig:
    """A parsed, validated config."""

    file: str
    #: A registered data set, the user's own logs (``[data] path = ...``) or a catalogue world.
    data: ComponentSpec | LogsSpec | WorldSpec
    simulation: dict[str, Any]
    experiment: dict[str, Any]
    algorithms: tuple[AlgorithmSpec, ...]
    #: The TOML as read (before defaults).
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: ``[deployment]`` with its defaults (a deployment study), or None.
    deployment: dict[str, Any] | None = None

    @property
    def on_logs(self) -> bool:
        """Whether this is a study on the user's own logs (``[data] path = ...``)."""
        return isinstance(self.data, LogsSpec)

    def check_data(self) -> None:
        """In a study on logs, check the logs file and its columns
        (:func:`~opboost.compose.config.logs_table.check_logs_file`); nothing for a data set."""
        if isinstance(self.data, LogsSpec):
            check_logs_file(self.data)

    def algorithm(self, label: str | None) -> AlgorithmSpec:
        """The algorithm called ``label`` (the only one when None)."""
        if label is None:
            if len(self.algorithms) != 1:
                raise ConfigError(
                    f"has {len(self.algorithms)} algorithms; choose one with --algorithm "
                    f"({', '.join(a.label for a in self.algorithms)}) or run it as a study.",
                    file=self.file,
                )
            return self.algorithms[0]
        for algo in self.algorithms:
            if algo.label == label:
                return algo
        raise ConfigError(
            f"no algorithm labelled {label!r}. Known: "
            f"{', '.join(a.label for a in self.algorithms)}.",
            file=self.file,
        )


# --- parsing -------------------------------------------------------------------------------


def _read_config(path: str | Path) -> tuple[dict[str, Any], str]:
    """The TOML at ``path`` as a dict, and the file name for messages."""
    path = Path(path)
    if path.is_dir():
        found = sorted(path.glob("*.toml"))
        example = f" such as {found[0]}" if found else ""
        raise ConfigError(
            f"is a directory, not a config file; pass a TOML config file{example}.",
            file=str(path),
        )
    if not path.is_file():
        raise ConfigError(
            f"config file not found (looked in {path.resolve().parent}).", file=str(path)
        )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"is not UTF-8 text (byte {exc.start} is {exc.object[exc.start : exc.start + 1]!r}); "
            f"TOML files must be UTF-8: re-save it as UTF-8.",
            file=str(path),
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"is not valid TOML: {exc}.", file=str(path)) from exc
    return raw, str(path)


def _check_value(key: str, value: Any, file: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"must be a finite number (results are written as JSON). Got {value!r}.",
            file=file,
            key=key,
        )
    if key in _RANGES:
        low, high, low_inc, high_inc = _RANGES[key]
        too_low = value < low if low_inc else value <= low
        too_high = value > high if high_inc else value >= high
        if too_low or too_high:
            lo = f"{'[' if low_inc else '('}{low:g}"
            hi = f"{high:g}{']' if high_inc else ')'}"
            raise ConfigError(f"must be in {lo}, {hi}. Got {value!r}.", file=file, key=key)
    if key in _CHOICES and value not in _CHOICES[key]:
        raise ConfigError(
            f"must be one of {', '.join(repr(c) for c in _CHOICES[key])}. Got {value!r}."
            f"{suggest(str(value), list(_CHOICES[key]))}",
            file=file,
            key=key,
        )


def _check_task(data: ComponentSpec, file: str) -> None:
    """Studies simulate bandit logs from class labels: regression data sets are rejected."""
    from opboost.core.registry import get_registry

    task = getattr(get_registry().get("dataset", data.name), "task", None)
    if task == "regression":
        raise ConfigError(
            f"data set {data.name!r} is a regression task; studies need a classification "
            f'data set (multiclass or multilabel rewards), e.g. name = "digits".',
            file=file,
            key="data.name",
        )


def _section(raw: dict, name: str, defaults: dict[str, Any], file: str) -> dict[str, Any]:
    table = raw.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"must be a table. Got {table!r}.", file=file, key=name)
    check_keys(table, list(defaults), file, name, f"[{name}]")
    for key, value in table.items():
        check_type(value, defaults[key], file, f"{name}.{key}")
        _check_value(f"{name}.{key}", value, file)
    return {**defaults, **table}


def parse_config(raw: dict[str, Any], *, file: str = "<config>") -> ExperimentConfig:
    """Validate a config already read into a dict (``file`` is used in messages)."""
    sections = ("data", "simulation", "experiment", "deployment", "algorithms")
    check_keys(raw, sections, file, "", "the config")
    if "data" not in raw:
        raise ConfigError('has no [data] table; add e.g. [data] name = "digits".', file=file)
    on_logs, world = is_logs_table(raw["data"]), world_table.is_world_table(raw["data"])
    if world:
        data, simulation = world_table.parse_world(raw["data"], file), {}
    elif on_logs:
        data = parse_logs(raw["data"], file)
        if "simulation" in raw:
            raise ConfigError(
                "a study on logs ([data] path) simulates nothing; remove [simulation] (the "
                "share of held-out logs is [data] holdout_fraction).",
                file=file,
                key="simulation",
            )
        simulation: dict[str, Any] = {}
    else:
        data = parse_component(raw["data"], "dataset", file, "data")
        _check_task(data, file)
        simulation = _section(raw, "simulation", SIMULATION_DEFAULTS, file)
    experiment = _section(raw, "experiment", EXPERIMENT_DEFAULTS, file)
    if not (on_logs or world) and simulation["test_fraction"] + simulation["valid_fraction"] >= 1.0:
        raise ConfigError(
            f"test_fraction ({simulation['test_fraction']}) plus valid_fraction "
            f"({simulation['valid_fraction']}) leave no training rows; keep their sum below 1.",
            file=file,
            key="simulation",
        )
    seeds = experiment["seeds"]
    if not (
        isinstance(seeds, list)
        and seeds
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
        and len(set(seeds)) == len(seeds)
    ):
        raise ConfigError(
            f"must be a non-empty list of distinct integers >= 0. Got {seeds!r}.",
            file=file,
            key="experiment.seeds",
        )
    algorithms = raw.get("algorithms")
    if not isinstance(algorithms, list) or not algorithms:
        raise ConfigError(
            'has no [[algorithms]]; add at least one, e.g. [[algorithms]] label = "BOPL-S" '
            'objective = { name = "bopl_s" }.',
            file=file,
            key="algorithms",
        )
    specs = tuple(parse_algorithm(table, i, file) for i, table in enumerate(algorithms))
    if on_logs or world:
        (check_logs_algorithms if on_logs else world_table.check_world_study)(raw, specs, file)
        simulation = {"valid_fraction": 0.0}  # for the checks below; not part of the config
    for algo in specs:
        if algo.search is not None and simulation["valid_fraction"] == 0:
            raise ConfigError(
                f"algorithm {algo.label!r} has a search, which selects on validation rows; "
                f"set [simulation] valid_fraction, e.g. 0.2.",
                file=file,
                key=f"algorithms[{algo.index}].search",
            )
        _check_stopping_metrics(algo, simulation, file)
    deployment = _deployment(raw, specs, file)
    labels = [a.label for a in specs]
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(
                f"two algorithms share the label {label!r}; labels must be unique.",
                file=file,
                key="algorithms",
            )
    simulation = {} if on_logs or world else simulation
    return ExperimentConfig(
        file, data, simulation, experiment, specs, raw=raw, deployment=deployment
    )


def _deployment(raw: dict, specs: tuple[AlgorithmSpec, ...], file: str) -> dict[str, Any] | None:
    """``[deployment]`` with its defaults, or None; an algorithm's deployment table needs the
    section, and an online learner plays the stream once (``n_passes = 1``)."""
    if "deployment" not in raw:
        for algo in specs:
            if algo.deployment:
                raise ConfigError(
                    "an algorithm's deployment table needs a [deployment] section (batch_size, "
                    "n_batches, epsilon, temperature) that makes the config a deployment study.",
                    file=file,
                    key=f"algorithms[{algo.index}].deployment",
                )
        return None
    section = {**DEPLOYMENT_DEFAULTS, **parse_deployment(raw["deployment"], file)}
    for algo in specs:
        if algo.family == "online" and algo.n_passes != 1:
            raise ConfigError(
                f"a deployment study plays one stream once; online learners take n_passes = 1 "
                f"(the stream is [deployment] batch_size x n_batches interactions). Got "
                f"{algo.n_passes}.",
                file=file,
                key=f"algorithms[{algo.index}].n_passes",
            )
    return section


def _check_stopping_metrics(algo: Any, simulation: dict[str, Any], file: str) -> None:
    """An early-stopping metric a trial of this config records: eval_* metrics come from the
    validation rows, select_* ones from the booster's held-out logs (else ``run`` failed)."""
    for j, callback in enumerate(algo.callbacks):
        if callback.name != "early_stopping":
            continue
        metric = callback.build().metric
        needs = None
        if metric.startswith("eval_") and simulation["valid_fraction"] == 0:
            needs = "validation rows: set [simulation] valid_fraction, e.g. 0.2"
        if metric.startswith("select_") and algo.booster.get("validation_fraction") is None:
            needs = "held-out logs: set booster.validation_fraction, e.g. 0.2"
        if needs is not None:
            raise ConfigError(
                f"early stopping on {metric!r} needs {needs}, or stop on 'train_objective'.",
                file=file,
                key=f"algorithms[{algo.index}].callbacks[{j}].metric",
            )


# --- resolution ----------------------------------------------------------------------------


def resolved_config(config: ExperimentConfig) -> dict[str, Any]:
    """The config with every default filled in (None values omitted: TOML has no null)."""
    data = config.data
    out = {
        "data": resolved_component(data) if isinstance(data, ComponentSpec) else data.resolved(),
        "simulation": dict(config.simulation),
        "experiment": {**config.experiment, "seeds": list(config.experiment["seeds"])},
    }
    if config.deployment is not None:
        out["deployment"] = dict(config.deployment)
    out["algorithms"] = [resolved_algorithm(algo) for algo in config.algorithms]
    return out


def dumps_resolved(config: ExperimentConfig) -> str:
    """The resolved config as TOML text (what ``opboost config show`` prints)."""
    try:
        import tomli_w
    except ImportError as exc:  # pragma: no cover - tomli_w is a dependency
        raise ConfigError(
            "printing TOML needs the tomli_w package: pip install tomli_w.", file=config.file
        ) from exc
    return tomli_w.dumps(resolved_config(config))


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExperimentConfig:
    """Read and validate the TOML config at ``path``, with the command line's ``--set``
    ``overrides`` (``PATH=VALUE``, see :func:`apply_overrides`) applied before validation: a
    bad override is a :class:`ConfigError` naming ``--set``, the assignment and the key."""
    raw, file = _read_config(path)
    if not overrides:
        return parse_config(raw, file=file)
    changed = apply_overrides(raw, list(overrides))
    try:
        return parse_config(changed, file=file)
    except ConfigError as exc:
        culprit = blame_override(exc, list(overrides), raw)
        if culprit is None:
            raise
        message = str(exc)
        prefix = f"{file} [{exc.key}]: " if exc.key else f"{file}: "
        message = message.removeprefix(prefix)
        raise ConfigError(f"--set {culprit}: {message}", file=file, key=exc.key) from exc
