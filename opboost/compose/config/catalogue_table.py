"""A simulated catalogue world as a study's data (``[data] world = "catalogue"``), streamed by a
deployment study only (``docs/deployment.md``, "Streams with candidates and item features").

The table sets the world of
[`simulate_catalogue`][opboost.simulation.items.simulate_catalogue] (each trial seed draws its
own world, reward parameters and items) and ``n_test``, the held-out rows the final policy is
scored on by its true value. The policies are served with each row's candidates and the items'
features; online learners, which take neither, and the ``best_constant`` baseline, whose one
action is not every row's candidate, are refused.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.config.specs import CatalogueSpec
from opboost.compose.config.validate import check_keys, check_type

__all__ = ["CATALOGUE_DEFAULTS", "check_catalogue_study", "is_catalogue_table", "parse_catalogue"]

CATALOGUE_DEFAULTS: dict[str, Any] = {
    "n_items": 100,
    "n_candidates": 10,
    "d_x": 5,
    "d_item": 5,
    "logging_beta": 0.5,
    "reward_scale": 2.0,
    "reward_intercept": 0.0,
    "interaction": "bilinear",
    "n_test": 2000,
}


def is_catalogue_table(table: Any) -> bool:
    """Whether a ``[data]`` table is a simulated world (``world = ...``)."""
    return isinstance(table, dict) and "world" in table


def parse_catalogue(table: dict, file: str) -> CatalogueSpec:
    """The checked ``[data]`` table of a catalogue world, with its defaults."""
    if table["world"] != "catalogue":
        raise ConfigError(
            f'the only simulated world is "catalogue". Got {table["world"]!r}.',
            file=file,
            key="data.world",
        )
    check_keys(table, ["world", *CATALOGUE_DEFAULTS], file, "data", "[data] of a catalogue world")
    params = {**CATALOGUE_DEFAULTS, **{k: v for k, v in table.items() if k != "world"}}
    for name, value in params.items():
        check_type(value, CATALOGUE_DEFAULTS[name], file, f"data.{name}")
    if not isinstance(params["n_test"], numbers.Integral) or params["n_test"] < 1:
        raise ConfigError(
            f"must be an integer >= 1. Got {params['n_test']!r}.", file=file, key="data.n_test"
        )
    from opboost.simulation.items import simulate_catalogue

    world = {k: v for k, v in params.items() if k != "n_test"}
    try:  # the simulator's own checks, on one row
        simulate_catalogue(1, **world, random_state=0)
    except InvalidParameterError as exc:  # keyed by the parameter it names
        named = re.search(r"The '(\w+)' parameter", str(exc))
        key = f"data.{named.group(1)}" if named and named.group(1) in params else "data"
        raise ConfigError(str(exc), file=file, key=key) from exc
    return CatalogueSpec(params)


def check_catalogue_study(raw: dict, specs: tuple, file: str) -> None:
    """A catalogue world is streamed by a deployment study, without ``[simulation]``, by
    algorithms that are served with candidates and item features."""
    if "deployment" not in raw:
        raise ConfigError(
            'a catalogue world ([data] world = "catalogue") is played as a stream; add a '
            "[deployment] section (batch_size, n_batches, epsilon, temperature).",
            file=file,
        )
    if raw.get("simulation"):  # (an empty one is what ``opboost config show`` prints)
        raise ConfigError(
            "a catalogue world simulates its own logs; remove [simulation] (the world's "
            "parameters are [data] keys).",
            file=file,
            key="simulation",
        )
    for algo in specs:
        refused = None
        if algo.family == "online":
            name = algo.online_learner.name
            refused = f"the online learner {name!r} takes no candidates or item features"
        elif algo.baseline == "best_constant":
            refused = "the 'best_constant' baseline's one action is not every row's candidate"
        if refused:
            raise ConfigError(
                f"algorithm {algo.label!r}: {refused}, so it cannot play a catalogue stream; "
                f"remove it (batched boosters, policy learners that fit catalogue logs, and "
                f"the logging, uniform and reward_regression baselines can).",
                file=file,
                key=f"algorithms[{algo.index}]",
            )
