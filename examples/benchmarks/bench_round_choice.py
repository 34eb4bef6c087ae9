"""Would choosing the number of rounds on held-out logs beat the default's fixed 100? (Issue 18,
item 4.) On ``bench_peers.py``'s logs, per data set and seed:

- ``Booster(random_state=seed)`` is fitted on a seeded 80% of the logged rows; after every
  round t = 0 .. 100 (t = 0: its reward-model start) its argmax policy is scored on the other
  20% with SNIPS and with DR, DR's reward model q being the fit's own start (q = F_0 / s, s the
  start's scale): fitted on the 80% only, so the held-out rows are new to it;
- each rule below picks T* from each held-out curve;
- the default fitted on every logged row is scored on the labelled test rows after T* rounds:
  what ``refit`` on all the logs for T* rounds gives (the rounds are a deterministic sequence,
  so T* rounds of a fit are the first T* of a longer one).

Rules: ``argmax`` (the best held-out estimate; the first on ties), ``min10`` (the best at 10
rounds or more), ``smooth5`` (the best of the curve averaged over 5 neighbouring rounds). The
table gives the mean true test reward over the seeds and the paired difference against all
100 rounds (mean ± Student-t 95% half-width), and the T* of each seed.

    python examples/benchmarks/bench_round_choice.py --datasets digits wine
    python examples/benchmarks/bench_round_choice.py --data-dir "$OPBOOST_DATA" --seeds 5
    python examples/benchmarks/bench_round_choice.py --booster '{"objective": "bopl_s"}'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from opboost import Booster
from opboost.algorithms.estimators.direct import dr_coefficients
from opboost.algorithms.estimators.snips import SNIPS
from opboost.core.booster_checks import split_holdout

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/benchmarks: not a package
from _bench_common import t_interval
from bench_peers import DATASETS, load
from bench_staged_rounds import stage_scores


def _smoothed(curve: np.ndarray, width: int) -> np.ndarray:
    padded = np.pad(curve, (width // 2, width // 2), mode="edge")
    return np.convolve(padded, np.ones(width) / width, mode="valid")


#: Rules: held-out curve (T + 1,) -> chosen number of rounds.
RULES: dict[str, Callable[[np.ndarray], int]] = {
    "argmax": lambda curve: int(np.argmax(curve)),
    "min10": lambda curve: 10 + int(np.argmax(curve[10:])),
    "smooth5": lambda curve: int(np.argmax(_smoothed(curve, 5))),
}


def held_out_curves(scores: list[np.ndarray], held, scale: float) -> dict[str, np.ndarray]:
    """SNIPS and DR (q = start scores / ``scale``) of each stage's argmax policy on ``held``
    (SNIPS 0 for a policy that matches no logged action); ``"dr_clear"``: DR where a stage's
    paired DR advantage over the last stage, row by row, is above 1.96 standard errors, else
    -inf (the last stage 0): its argmax keeps every round unless the held-out logs clearly
    prefer fewer."""
    rows, gamma = np.arange(len(held)), dr_coefficients(held, scores[0] / scale)
    estimator, snips, dr, per_row = SNIPS(), [], [], []
    for stage in scores:
        chosen = stage.argmax(axis=1)
        matched = bool(np.any(chosen == held.actions))
        snips.append(estimator.estimate_value(held, chosen) if matched else 0.0)
        per_row.append(gamma[rows, chosen])
        dr.append(float(per_row[-1].mean()))
    clear = np.full(len(scores), -np.inf)
    clear[-1] = 0.0
    for t, values in enumerate(per_row[:-1]):
        gain = values - per_row[-1]
        se = gain.std(ddof=1) / np.sqrt(len(gain))
        if gain.mean() > 1.96 * se:
            clear[t] = gain.mean()
    return {"snips": np.array(snips), "dr": np.array(dr), "dr_clear": clear}


def two_fold_dr(trial, params: dict) -> np.ndarray:
    """DR curve (T + 1,) over every logged row: the default fitted on each half of the logs,
    its stages scored on the other half with DR (q: that half-fit's own start)."""
    first, second = split_holdout(trial.logged, 0.5, trial.seed + 1000)
    per_row = []
    for train, held in ((first, second), (second, first)):
        part = Booster(random_state=trial.seed, **params).fit(train)
        scores = stage_scores(part, held.contexts)
        gamma = dr_coefficients(held, scores[0] / float(part.reward_start_["scale"]))
        rows = np.arange(len(held))
        per_row.append(np.array([gamma[rows, stage.argmax(axis=1)] for stage in scores]))
    stages = min(len(values) for values in per_row)
    return np.concatenate([values[:stages] for values in per_row], axis=1).mean(axis=1)


def one_seed(trial, params: dict) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(held-out curves of the 80% fit, true test reward (T + 1,) of the full fit per round),
    both ``Booster(random_state=seed, validation_fraction=None, **params)``; "dr2fold": the
    DR curve of :func:`two_fold_dr`."""
    params = {"validation_fraction": None, **params}  # every round: the stages are scored here
    train, held = split_holdout(trial.logged, 0.2, trial.seed + 1000)
    part = Booster(random_state=trial.seed, **params).fit(train)
    scale = float(part.reward_start_["scale"])
    curves = held_out_curves(stage_scores(part, held.contexts), held, scale)
    curves["dr2fold"] = two_fold_dr(trial, params)
    full = Booster(random_state=trial.seed, **params).fit(trial.logged)
    test = np.array([trial.value(s.argmax(axis=1)) for s in stage_scores(full, trial.X_test)])
    return curves, test


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1")
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--booster",
        type=json.loads,
        default={},
        help='Booster parameters as JSON, e.g. {"objective": "bopl_s"} (keep the reward start)',
    )
    args = parser.parse_args(argv)
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    columns = [(est, rule) for est in ("snips", "dr") for rule in RULES] + [("dr_clear", "argmax")]
    columns += [("dr2fold", rule) for rule in RULES]
    print("| data set | 100 rounds | " + " | ".join(f"{e} {r}" for e, r in columns) + " |")
    print("|---|--:|" + "---|" * len(columns))
    for name in args.datasets:
        source = load(name, args.data_dir, args.max_rows)
        if isinstance(source, str):
            print(f"| {name} | skipped: {source} |" + " |" * len(columns))
            continue
        trials = (source.trial(s) for s in range(args.seeds))
        runs = [one_seed(trial, args.booster) for trial in trials]
        default = np.array([test[-1] for _, test in runs])
        cells = [f"{default.mean():.4f}"]
        for est, rule in columns:
            chosen = [RULES[rule](curves[est]) for curves, _ in runs]
            values = np.array([test[t] for (_, test), t in zip(runs, chosen, strict=True)])
            mean, half = t_interval(values - default)
            cells.append(f"{values.mean():.4f} ({mean:+.4f} ± {half:.4f}; T* {chosen})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
