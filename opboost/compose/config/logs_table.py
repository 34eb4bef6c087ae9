"""``[data] path = ...``: a study on the user's own logs instead of a registered data set.

The table names a CSV or Parquet file and maps its columns with the parameters of
:meth:`opboost.LoggedBandit.from_dataframe`::

    [data]
    path = "logs.csv"             # relative paths are read from the config file's directory
    contexts = ["age", "region"]
    action = "offer"
    propensity = "propensity"
    reward = "clicked"
    actions = ["promo_A", "promo_B", "promo_C"]   # optional: the action catalogue
    holdout_fraction = 0.25       # held-out logs of each seed (split by the seed)

Reading the config checks the table (keys, types); :func:`check_logs_file`, run before a
study or a trial reads the file (and by every ``opboost`` command), checks the file: it must
exist and have every named column, else a :class:`ConfigError` names the key, the column and
the file. Parquet needs pyarrow or fastparquet; CSV works with the base install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from opboost.api.exceptions import ConfigError
from opboost.compose.config.specs import LogsSpec
from opboost.compose.config.validate import check_keys, suggest

__all__ = [
    "LOGS_DEFAULTS",
    "LOGS_KEYS",
    "check_logs_algorithms",
    "check_logs_file",
    "is_logs_table",
    "logs_columns",
    "parse_logs",
]

#: Optional keys of a logs [data] table, with defaults (None: not set).
LOGS_DEFAULTS: dict[str, Any] = {
    "actions": None,
    "n_actions": None,
    "position": None,
    "holdout_fraction": 0.25,
}
_COLUMN_KEYS = ("action", "propensity", "reward")
#: Every key of a logs [data] table.
LOGS_KEYS = ("path", "contexts", *_COLUMN_KEYS, *LOGS_DEFAULTS)
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def is_logs_table(table: Any) -> bool:
    """Whether a ``[data]`` table names a logs file (``path``) rather than a data set."""
    return isinstance(table, dict) and "path" in table


def _string(value: Any, file: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"must be a column name (a non-empty string). Got {value!r}.", file=file, key=key
        )
    return value


def _file_path(path: Any, file: str) -> Path:
    """``path`` resolved against the config file's directory; it must name a CSV or Parquet
    file."""
    if not isinstance(path, str) or not path:
        raise ConfigError(
            f'must be the path of a CSV or Parquet file, e.g. "logs.csv". Got {path!r}.',
            file=file,
            key="data.path",
        )
    resolved = Path(path)
    if not resolved.is_absolute():
        resolved = Path(file).resolve().parent / resolved
    if resolved.suffix.lower() not in _SUFFIXES:
        raise ConfigError(
            f"{resolved} is neither CSV (.csv) nor Parquet (.parquet, .pq); save the logs in "
            f"one of these formats.",
            file=file,
            key="data.path",
        )
    return resolved


def _parquet_engine(path: Path, file: str) -> None:
    if not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
        raise ConfigError(
            f"reading the Parquet file {path} needs pyarrow or fastparquet, and neither is "
            f"installed: pip install pyarrow, or save the logs as CSV.",
            file=file,
            key="data.path",
        )


def logs_columns(path: Path) -> list[str]:
    """The column names of the CSV or Parquet file at ``path`` (read without its rows when
    the reader can)."""
    import pandas as pd

    if _SUFFIXES[path.suffix.lower()] == "csv":
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    if importlib.util.find_spec("pyarrow"):
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    return [str(c) for c in pd.read_parquet(path).columns]  # pragma: no cover - fastparquet


def parse_logs(table: dict[str, Any], file: str) -> LogsSpec:
    """The :class:`LogsSpec` of a ``[data]`` table with ``path`` (see the module docstring);
    every key, type and column is checked."""
    check_keys(table, LOGS_KEYS, file, "data", "[data] (a study on logs)")
    for key in ("contexts", *_COLUMN_KEYS):
        if key not in table:
            raise ConfigError(
                f"a study on logs needs the column mapping of LoggedBandit.from_dataframe: "
                f"contexts, action, propensity and reward; {key!r} is missing.",
                file=file,
                key=f"data.{key}",
            )
    path = _file_path(table["path"], file)
    contexts = table["contexts"]
    if not isinstance(contexts, list) or not contexts:
        raise ConfigError(
            f'must be a non-empty list of column names, e.g. ["age", "region"]. Got {contexts!r}.',
            file=file,
            key="data.contexts",
        )
    for i, column in enumerate(contexts):
        _string(column, file, f"data.contexts[{i}]")
    for key in _COLUMN_KEYS:
        _string(table[key], file, f"data.{key}")
    if table.get("position") is not None:
        _string(table["position"], file, "data.position")
    options = {**LOGS_DEFAULTS, **{k: table[k] for k in LOGS_DEFAULTS if k in table}}
    _check_options(options, file)
    return LogsSpec(
        path=table["path"],
        file_path=str(path),
        config_file=file,
        contexts=tuple(contexts),
        action=table["action"],
        propensity=table["propensity"],
        reward=table["reward"],
        actions=None if options["actions"] is None else tuple(options["actions"]),
        n_actions=options["n_actions"],
        position=options["position"],
        holdout_fraction=float(options["holdout_fraction"]),
    )


def check_logs_file(spec: LogsSpec) -> None:
    """The logs file of ``spec`` exists, can be read (Parquet: pyarrow or fastparquet) and has
    every column the mapping names; else a :class:`ConfigError` naming the config file, the
    key, the column and the logs file."""
    path, file = Path(spec.file_path), spec.config_file
    if not path.is_file():
        raise ConfigError(
            f"logs file {path} not found (a relative path is read from the config file's "
            f"directory).",
            file=file,
            key="data.path",
        )
    if _SUFFIXES[path.suffix.lower()] == "parquet":
        _parquet_engine(path, file)
    named = {f"data.contexts[{i}]": column for i, column in enumerate(spec.contexts)}
    named.update({f"data.{key}": getattr(spec, key) for key in _COLUMN_KEYS})
    if spec.position is not None:
        named["data.position"] = spec.position
    available = logs_columns(path)
    for key, column in named.items():
        if column not in available:
            raise ConfigError(
                f"column {column!r} is not in {path}. Its columns: {', '.join(available)}."
                f"{suggest(column, available)}",
                file=file,
                key=key,
            )


def _check_options(options: dict[str, Any], file: str) -> None:
    actions, n_actions = options["actions"], options["n_actions"]
    if actions is not None and (not isinstance(actions, list) or len(actions) < 2):
        raise ConfigError(
            f"must be the list of every action id (at least two), e.g. "
            f'["promo_A", "promo_B"]. Got {actions!r}.',
            file=file,
            key="data.actions",
        )
    if n_actions is not None and (
        isinstance(n_actions, bool) or not isinstance(n_actions, int) or n_actions < 2
    ):
        raise ConfigError(
            f"must be an integer >= 2. Got {n_actions!r}.", file=file, key="data.n_actions"
        )
    fraction = options["holdout_fraction"]
    if (
        isinstance(fraction, bool)
        or not isinstance(fraction, int | float)
        or not 0.0 < fraction < 1.0
    ):
        raise ConfigError(
            f"must be a fraction in (0, 1) of the logs held out to judge the policies. Got "
            f"{fraction!r}.",
            file=file,
            key="data.holdout_fraction",
        )


def check_logs_algorithms(raw: dict[str, Any], specs: tuple[Any, ...], file: str) -> None:
    """What a study on logs cannot run, refused with the reason: a [deployment] section, an
    online learner (it must choose actions and see their rewards), a search or early stopping
    on validation rows (logs have no labelled rows to select on)."""
    if "deployment" in raw:
        raise ConfigError(
            "a deployment study plays a simulated stream, which fixed logs cannot answer; "
            "remove [deployment] from a study on logs ([data] path).",
            file=file,
            key="deployment",
        )
    for algo in specs:
        key = f"algorithms[{algo.index}]"
        if algo.family == "online":
            raise ConfigError(
                f"algorithm {algo.label!r} is an online learner "
                f"({algo.online_learner.name}): it chooses actions and learns from their "
                f"rewards, which fixed logs cannot answer (they hold the reward of the logged "
                f"action only). A study on logs ([data] path) runs offline algorithms, policy "
                f"learners and baselines; remove it or run it on a data set ([data] name).",
                file=file,
                key=f"{key}.online_learner",
            )
        if algo.search is not None:
            raise ConfigError(
                f"algorithm {algo.label!r} has a search, which selects on labelled validation "
                f"rows that logs do not have; choose label-free with "
                f'policy_learner = {{ name = "policy_choice" }} instead, or remove the search.',
                file=file,
                key=f"{key}.search",
            )
        for j, callback in enumerate(algo.callbacks):
            metric = callback.build().metric if callback.name == "early_stopping" else ""
            if metric.startswith("eval_"):
                raise ConfigError(
                    f"early stopping on {metric!r} needs validation rows, which a study on "
                    f"logs does not have; stop on held-out logs (booster.validation_fraction "
                    f"with a 'select_' metric) or on 'train_objective'.",
                    file=file,
                    key=f"{key}.callbacks[{j}].metric",
                )
