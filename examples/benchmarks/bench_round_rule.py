"""Tune the default's rules: ``bench_peers.py`` with variants of the settings of the paired round
rule and of the reward-model start as extra methods (issue 48).

``Booster()``'s rules have no Booster parameter (``opboost.core.resolve``: the rounds'
confidence over the start alone, the replacements' confidence, the patience, the challengers
(``+``-separated registered names); ``opboost.algorithms.learners.lightgbm_reward_start``:
when the start's trees follow its held-out count, how long its held-out fits wait for a lower
error, how its trees split the action column, and ``start_param`` / ``held_out_param``
NAME:VALUE: one LightGBM setting of the start's final trees / of its held-out fits), so each
variant is the default fitted with those module settings replaced during its fit.
``--variant NAME=SPEC`` adds one, SPEC either ``CONFIDENCE:PATIENCE`` (the rounds' confidence
and the patience) or a comma list of ``SETTING=VALUE`` with SETTING one of :data:`SETTINGS`.
Every other argument is ``bench_peers.py``'s, and ``--methods`` must name the variants to run
them. Tune on the tuning worlds only (``--suite tabular --worlds tuning`` or their names): the
reporting worlds are for reporting.

    python examples/benchmarks/bench_round_rule.py --suite tabular --worlds tuning --seeds 3 \\
        --variant r75=0.75:20 --variant d75=challenger_confidence=0.75 \\
        --variant count0=count_rows=0 --variant lgb=action_splits=lightgbm \\
        --methods default r75 d75 count0 lgb reward_regression dr_reduction constant
    python examples/benchmarks/bench_round_rule.py --suite tabular --worlds tuning --seeds 3 \\
        --variant l2=start_param=lambda_l2:10,held_out_param=lambda_l2:10 --methods l2
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import opboost.algorithms.learners.lightgbm_reward_start as reward_start
import opboost.core.resolve as resolve

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
import bench_peers

#: The action splits a variant can give the start's trees (``action_splits=NAME``).
ACTION_SPLITS: dict[str, Callable[[int], dict[str, int]]] = {
    "one_vs_rest": reward_start.action_split_params,  # the default
    "lightgbm": lambda n_actions: {},  # LightGBM's categorical defaults
    "groups20": lambda n_actions: {"min_data_per_group": 20},  # groups, 20 rows a group
}
#: SETTING -> (module, attribute, how a VALUE is read).
SETTINGS: dict[str, tuple[Any, str, Callable[[str], Any]]] = {
    "rounds_confidence": (resolve, "AUTO_ROUNDS_CONFIDENCE", float),
    "paired_confidence": (resolve, "AUTO_PAIRED_CONFIDENCE", float),
    "patience": (resolve, "AUTO_PATIENCE", int),
    "count_rows": (reward_start, "MIN_HOLDOUT_ROWS_FOR_COUNT", int),
    "action_splits": (reward_start, "action_split_params", ACTION_SPLITS.__getitem__),
    "challenger_confidence": (resolve, "AUTO_CHALLENGER_CONFIDENCE", float),
    "stopping_rounds": (reward_start, "STOPPING_ROUNDS", int),
    "held_out_trees": (reward_start, "HELD_OUT_TREES", int),
    "most_counted_trees": (reward_start, "MOST_COUNTED_TREES", int),
    "challengers": (resolve, "AUTO_CHALLENGERS", lambda names: tuple(names.split("+"))),
    # NAME:VALUE, a LightGBM parameter of the start's final trees / of its held-out fits
    "start_param": (
        reward_start,
        "REWARD_MODEL_PARAMS",
        lambda v: _lgb_param("REWARD_MODEL_PARAMS", v),
    ),
    "held_out_param": (
        reward_start,
        "SELECTION_PARAMS",
        lambda v: _lgb_param("SELECTION_PARAMS", v),
    ),
}


def _lgb_param(attribute: str, item: str) -> dict[str, Any]:
    """The start's LightGBM settings ``attribute`` with ``item`` ("NAME:VALUE", a number)
    replaced."""
    name, _, value = item.partition(":")
    number = float(value)
    return {
        **getattr(reward_start, attribute),
        name: int(number) if number.is_integer() else number,
    }


def parse_spec(spec: str) -> list[tuple[Any, str, Any]]:
    """The (module, attribute, value) settings of a variant's SPEC."""
    if "=" not in spec:  # CONFIDENCE:PATIENCE
        confidence, _, patience = spec.partition(":")
        return [
            (resolve, "AUTO_ROUNDS_CONFIDENCE", float(confidence)),
            (resolve, "AUTO_PATIENCE", int(patience)),
        ]
    out = []
    for item in spec.split(","):
        setting, _, value = item.partition("=")
        if setting not in SETTINGS:
            raise SystemExit(f"--variant: unknown setting {setting!r}; one of {sorted(SETTINGS)}")
        module, attribute, read = SETTINGS[setting]
        out.append((module, attribute, read(value)))
    return out


def variant_method(base: Callable[[Any], Any], settings: list[tuple[Any, str, Any]]) -> Callable:
    """``base`` (the default's method) with ``settings`` in place during its fit."""

    def run(trial: Any) -> Any:
        saved = []
        for module, attribute, value in settings:
            holder = module.__dict__
            saved.append((holder, attribute, holder[attribute]))
            holder[attribute] = value
        try:
            return base(trial)
        finally:
            run.last_choice = getattr(base, "last_choice", None)
            for holder, attribute, value in saved:
                holder[attribute] = value

    return run


def main(argv: list[str]) -> int:
    variants, rest = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--variant":
            name, _, spec = next(args).partition("=")
            variants.append((name, parse_spec(spec)))
        else:
            rest.append(arg)
    build = bench_peers.build_methods

    def with_variants(boosters, learners, n_rounds):
        methods, notes = build(boosters, learners, n_rounds)
        for name, settings in variants:
            methods[name] = variant_method(bench_peers.booster_method({}, n_rounds), settings)
        return methods, notes

    bench_peers.build_methods = with_variants
    return bench_peers.main(rest, shown=argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
