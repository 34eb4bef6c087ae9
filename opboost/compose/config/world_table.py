"""A simulated world as a study's data (``[data] world = "catalogue"`` or ``"slates"``),
streamed by a deployment study only (``docs/deployment.md``, "Streams with candidates and
item features" and "Slate streams").

The table sets the world's parameters (each trial seed draws its own world) and ``n_test``,
the held-out rows the final policy is scored on by its true value:

* ``"catalogue"``: those of
  [`simulate_catalogue`][opboost.simulation.items.simulate_catalogue]. The policies are served
  with each row's candidates and the items' features; online learners, which take neither,
  and the ``best_constant`` baseline, whose one action is not every row's candidate, are
  refused;
* ``"slates"``: those of [`make_slate_world`][opboost.simulation.slate_world.make_slate_world].
  Rankings are learned by the ``slate_boost`` policy learner and explored with Plackett–Luce
  at ``[deployment] temperature`` (> 0; ``epsilon`` is not used); the ``logging`` baseline is
  the world's logger, and every other algorithm is refused.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

from opboost.api.exceptions import ConfigError, InvalidParameterError
from opboost.compose.config.specs import WorldSpec
from opboost.compose.config.validate import check_keys, check_type

__all__ = ["WORLD_DEFAULTS", "check_world_study", "is_world_table", "parse_world"]

#: Each world's keys and their defaults.
WORLD_DEFAULTS: dict[str, dict[str, Any]] = {
    "catalogue": {
        "n_items": 100,
        "n_candidates": 10,
        "d_x": 5,
        "d_item": 5,
        "logging_beta": 0.5,
        "reward_scale": 2.0,
        "reward_intercept": 0.0,
        "interaction": "bilinear",
        "n_test": 2000,
    },
    "slates": {
        "n_items": 20,
        "n_candidates": 8,
        "slate_size": 3,
        "context_dim": 5,
        "item_dim": 4,
        "eta": 1.0,
        "click_model": "pbm",
        "logging_temperature": 2.0,
        "intercept": -1.0,
        "n_test": 2000,
    },
}


def is_world_table(table: Any) -> bool:
    """Whether a ``[data]`` table is a simulated world (``world = ...``)."""
    return isinstance(table, dict) and "world" in table


def parse_world(table: dict, file: str) -> WorldSpec:
    """The checked ``[data]`` table of a simulated world, with its defaults."""
    name = table["world"]
    if name not in WORLD_DEFAULTS:
        raise ConfigError(
            f'the simulated worlds are "catalogue" and "slates". Got {name!r}.',
            file=file,
            key="data.world",
        )
    defaults = WORLD_DEFAULTS[name]
    check_keys(table, ["world", *defaults], file, "data", f"[data] of a {name} world")
    params = {**defaults, **{k: v for k, v in table.items() if k != "world"}}
    for key, value in params.items():
        check_type(value, defaults[key], file, f"data.{key}")
    if not isinstance(params["n_test"], numbers.Integral) or params["n_test"] < 1:
        raise ConfigError(
            f"must be an integer >= 1. Got {params['n_test']!r}.", file=file, key="data.n_test"
        )
    spec = WorldSpec(params, name)
    try:  # the simulator's own checks, on a tiny world
        spec.build(n=1)
    except InvalidParameterError as exc:  # keyed by the parameter it names
        named = re.search(r"The '(\w+)' parameter|\b(\w+)=", str(exc))
        found = named and (named.group(1) or named.group(2))
        key = f"data.{found}" if found in params else "data"
        raise ConfigError(str(exc), file=file, key=key) from exc
    return spec


def check_world_study(raw: dict, specs: tuple, file: str) -> None:
    """A world is streamed by a deployment study, without ``[simulation]``, by the
    algorithms that can play it (the module docstring)."""
    world = raw["data"]["world"]
    if "deployment" not in raw:
        raise ConfigError(
            f'a {world} world ([data] world = "{world}") is played as a stream; add a '
            f"[deployment] section (batch_size, n_batches, epsilon, temperature).",
            file=file,
        )
    if raw.get("simulation"):  # (an empty one is what ``opboost config show`` prints)
        raise ConfigError(
            f"a {world} world simulates its own logs; remove [simulation] (the world's "
            f"parameters are [data] keys).",
            file=file,
            key="simulation",
        )
    check = _check_slates if world == "slates" else _check_catalogue
    for algo in specs:
        check(raw, algo, file)


def _check_catalogue(raw: dict, algo: Any, file: str) -> None:
    refused = None
    if algo.family == "online":
        name = algo.online_learner.name
        refused = f"the online learner {name!r} takes no candidates or item features"
    elif algo.baseline == "best_constant":
        refused = "the 'best_constant' baseline's one action is not every row's candidate"
    if refused:
        raise ConfigError(
            f"algorithm {algo.label!r}: {refused}, so it cannot play a catalogue stream; "
            f"remove it (batched boosters, policy learners that fit catalogue logs, and the "
            f"logging, uniform and reward_regression baselines can).",
            file=file,
            key=f"algorithms[{algo.index}]",
        )


def _check_slates(raw: dict, algo: Any, file: str) -> None:
    learner = algo.policy_learner.name if algo.family == "policy" else None
    if learner != "slate_boost" and algo.baseline != "logging":
        raise ConfigError(
            f"algorithm {algo.label!r} learns one action per context, so it cannot play a "
            f'slate stream; use policy_learner = {{ name = "slate_boost" }} (or the '
            f'"logging" baseline, the world\'s logger).',
            file=file,
            key=f"algorithms[{algo.index}]",
        )
    for where, table in (("deployment", raw["deployment"]), (None, algo.deployment)):
        key = where or f"algorithms[{algo.index}].deployment"
        if "epsilon" in table:
            raise ConfigError(
                "a slate stream explores with Plackett–Luce at the temperature; remove epsilon.",
                file=file,
                key=f"{key}.epsilon",
            )
    if learner and not {**raw["deployment"], **algo.deployment}.get("temperature", 0) > 0:
        raise ConfigError(
            "a slate stream explores with Plackett–Luce: set [deployment] temperature > 0 "
            "(e.g. 0.5; lower is greedier).",
            file=file,
            key="deployment.temperature",
        )
