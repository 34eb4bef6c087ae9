"""Which paired test should let the DR reduction replace the default's kept policy (issue 48)?

``Booster()``'s held-out rule lets the challenger (``dr_reduction``, fitted on the training
rows) replace the kept policy (the start, with or without rounds, or the best constant action)
when the lower one-sided 95% bound of its per-row DR gain is above 0. On letter a lower
confidence would reach the DR reduction's value, but on the tuning worlds it also replaced
rightly kept policies (heavy-tailed 1/p terms of skewed loggers). This probe fits the default
on each tabular world and seed, records what the rule sees on the held-out rows (q of the
start, the logged actions, propensities and rewards, the kept policy's and the challenger's
actions) and both policies' true values on the world's test contexts, then replays candidate
tests on the same rows:

``normal C``          the default's test at one-sided confidence C;
``clip M C``          the same with the inverse propensities clipped at M (lower variance,
                      biased towards q);
``trim F C``          the same without the fraction F of rows with the largest |gain|.

Per test: the mean over worlds of (the chosen policy's true value − the default's choice's),
the worlds whose mean is below −0.003, and the replacements that were right and wrong by the
truth (world, seed, true gain). Tune on the tuning worlds only (the default).

    python examples/benchmarks/bench_replacement_tests.py --seeds 3
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
import _bench_tabular as tabular

from opboost import Booster
from opboost.api.numerics.arrays import one_hot
from opboost.core.selection import RoundSelection

#: (name, confidence, clip M or None, trimmed fraction or None) of the replayed tests.
TESTS: list[tuple[str, float, float | None, float | None]] = [
    *((f"normal {c}", c, None, None) for c in (0.95, 0.9, 0.75)),
    *((f"clip {m} {c}", c, m, None) for m in (5, 10, 20, 50) for c in (0.95, 0.75)),
    *((f"trim {f} {c}", c, None, f) for f in (0.005, 0.01) for c in (0.9, 0.75)),
]


def held_out_view(booster: Booster, logs: Any) -> dict[str, Any]:
    """Fit ``booster`` on ``logs`` and return what its paired rule saw on the held-out rows
    when the challenger came in: q (n_h, K), actions, propensities, rewards, the kept policy's
    and the challenger's actions, both policies (fitted on the training rows) and
    ``formula_gap``, the largest difference between :func:`row_values` and the rule's own
    per-row values of the kept policy. The challenger does not replace anything in the fit."""
    seen: dict[str, Any] = {}
    select = RoundSelection.select

    def spy(selection: RoundSelection, fit: Any) -> Any:
        selection.challengers = ()  # the probe replays the challenger's test itself
        kept = select(selection, fit)
        held = selection.holdout
        scale = float(fit.reward_start["scale"])
        q = fit.ensemble_scores(selection._start_ensemble, selection.inputs) / scale
        challenger = selection.new_challenger("dr_reduction", fit.seed).fit(fit.data)
        seen.update(
            q=q,
            actions=held.actions,
            propensities=held.propensities,
            rewards=held.rewards,
            kept_actions=np.asarray(kept[0].predict(held.contexts)),
            challenger_actions=np.asarray(challenger.predict(held.contexts)),
            kept=kept[0],
            challenger=challenger,
        )
        # the rule's own per-row values of the kept policy: the replayed formula must agree
        rule = selection.scorer.row_values(one_hot(seen["kept_actions"], q.shape[1]))
        replayed = row_values(seen, seen["kept_actions"], None)
        seen["formula_gap"] = float(np.max(np.abs(rule - replayed)))
        return kept

    RoundSelection.select = spy
    try:
        booster.fit(logs)
    finally:
        RoundSelection.select = select
    return seen


def row_values(view: dict[str, Any], actions: np.ndarray, clip: float | None) -> np.ndarray:
    """Per-row DR values (n_h,) of the deterministic policy playing ``actions``:
    q(x, pi) + [a = pi] w (r - q(x, a)), w = 1/p clipped at ``clip``."""
    q, logged = view["q"], view["actions"]
    rows = np.arange(len(logged))
    weights = 1.0 / view["propensities"]
    if clip is not None:
        weights = np.minimum(weights, clip)
    residual = view["rewards"] - q[rows, logged]
    return q[rows, actions] + (logged == actions) * weights * residual


def replaces(
    view: dict[str, Any], confidence: float, clip: float | None, trim: float | None
) -> bool:
    """Whether the test replaces the kept policy by the challenger on ``view``'s rows."""
    gain = row_values(view, view["challenger_actions"], clip) - row_values(
        view, view["kept_actions"], clip
    )
    if trim:
        largest = np.argsort(-np.abs(gain))[: int(len(gain) * trim)]
        gain = np.delete(gain, largest)
    bound = stats.norm.ppf(confidence) * gain.std(ddof=1) / np.sqrt(len(gain))
    return bool(gain.mean() - bound > 0)


def replay(records: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> dict:
    """The test's mean over worlds of (its choice's true value − the default test's), the
    worlds below −0.003 and its right and wrong replacements."""
    by_world: dict[int, list[float]] = defaultdict(list)
    right, wrong = [], []
    for rec in records:
        replaced = test(rec)
        chosen = rec["v_challenger"] if replaced else rec["v_kept"]
        by_world[rec["world"]].append(chosen - rec["v_default"])
        if replaced:
            gain = rec["v_challenger"] - rec["v_kept"]
            (right if gain > 0 else wrong).append((rec["world"], rec["seed"], round(gain, 3)))
    means = np.array([np.mean(v) for v in by_world.values()])
    return {"mean": float(means.mean()), "below": int((means < -0.003).sum()),
            "right": right, "wrong": wrong}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", choices=("tuning", "reporting"), default="tuning")
    parser.add_argument("--world-seeds", type=int, nargs="+", help="these worlds instead")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=20_000)
    args = parser.parse_args(argv)
    worlds = args.world_seeds or (
        tabular.TUNING_WORLD_SEEDS if args.worlds == "tuning" else tabular.REPORTING_WORLD_SEEDS
    )
    records = []
    for world in worlds:
        for seed in range(args.seeds):
            trial = tabular.tabular_trial(world, seed, max_rows=args.max_rows)
            view = held_out_view(Booster(random_state=seed, refit=False), trial.logged)
            X = trial.X_test
            view.update(
                world=world,
                seed=seed,
                v_kept=trial.value(np.asarray(view["kept"].predict(X))),
                v_challenger=trial.value(np.asarray(view["challenger"].predict(X))),
            )
            default = replaces(view, *TESTS[0][1:])
            view["v_default"] = view["v_challenger"] if default else view["v_kept"]
            records.append(view)
            print(f"[world {world} seed {seed}] kept {view['v_kept']:.4f}, challenger "
                  f"{view['v_challenger']:.4f}, formula gap {view['formula_gap']:.1e}",
                  file=sys.stderr, flush=True)  # fmt: skip
    print("| test | mean − the default's | worlds below −0.003 | right | wrong |")
    print("|---|--:|--:|---|---|")
    for name, confidence, clip, trim in TESTS:
        r = replay(records, lambda rec, c=confidence, m=clip, t=trim: replaces(rec, c, m, t))
        print(f"| {name} | {r['mean']:+.4f} | {r['below']} | {r['right'] or '–'} | "
              f"{r['wrong'] or '–'} |")  # fmt: skip
    better = [(r["world"], r["seed"], round(r["v_challenger"] - r["v_kept"], 3))
              for r in records if r["v_challenger"] - r["v_kept"] > 0.005]  # fmt: skip
    print(f"\nwhere the challenger is truly better by more than 0.005: {better or '–'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
