"""Tune the default's paired round rule: ``bench_peers.py`` with variants of the rule's
settings as extra methods (issue 48).

``Booster()``'s rule (``opboost.core.resolve``: ``AUTO_ROUNDS_CONFIDENCE``, the one-sided
confidence the rounds need over the start alone, and ``AUTO_PATIENCE``) has no Booster
parameter, so each variant is the default fitted with those module settings replaced during its
fit. ``--variant NAME=CONFIDENCE:PATIENCE`` adds one; every
other argument is ``bench_peers.py``'s, and ``--methods`` must name the variants to run them.
Tune on the tuning worlds only (``--suite tabular --worlds tuning`` or their names): the
reporting worlds are for reporting.

    python examples/benchmarks/bench_round_rule.py --suite tabular --worlds tuning --seeds 3 \\
        --variant r75=0.75:20 --variant r60=0.6:20 \\
        --methods default r75 r60 reward_regression dr_reduction constant
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import opboost.core.resolve as resolve

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
import bench_peers


def variant_method(base: Callable[[Any], Any], confidence: float, patience: int) -> Callable:
    """``base`` (the default's method) with the rounds' confidence and the patience replaced."""

    def run(trial: Any) -> Any:
        saved = resolve.AUTO_ROUNDS_CONFIDENCE, resolve.AUTO_PATIENCE
        resolve.AUTO_ROUNDS_CONFIDENCE, resolve.AUTO_PATIENCE = confidence, patience
        try:
            return base(trial)
        finally:
            resolve.AUTO_ROUNDS_CONFIDENCE, resolve.AUTO_PATIENCE = saved

    return run


def main(argv: list[str]) -> int:
    variants, rest = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--variant":
            name, _, settings = next(args).partition("=")
            confidence, _, patience = settings.partition(":")
            variants.append((name, float(confidence), int(patience)))
        else:
            rest.append(arg)
    build = bench_peers.build_methods

    def with_variants(boosters, learners, n_rounds):
        methods, notes = build(boosters, learners, n_rounds)
        for name, confidence, patience in variants:
            base = bench_peers.booster_method({}, n_rounds)
            methods[name] = variant_method(base, confidence, patience)
        return methods, notes

    bench_peers.build_methods = with_variants
    return bench_peers.main(rest)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
