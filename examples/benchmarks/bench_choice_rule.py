"""Which rule should PolicyChoice use to pick among candidates on held-out logs?

Per data set and seed (the protocol of bench_peers.py: seeded subsample, 70/30 split,
supervised-to-bandit logs), the logs are split 80/20 as PolicyChoice splits them; BOPL-S with
IPS (``ips``), BOPL-S with DR (``dr``) and LightGBM reward regression (``rr``) are fitted on the
80%, and each candidate's argmax policy gets its row-by-row DR values on the 20%. Rules:

* ``max``      the highest DR estimate;
* ``pC``       paired challenges in the order ips, dr, rr: a challenger replaces the incumbent
               when the one-sided lower bound at confidence C of the mean paired difference is
               above 0 (PolicyChoice's rule, C = 0.9 by default);
* ``ips``      always BOPL-S with IPS; ``oracle`` the candidate with the best true reward.

It prints the true test reward of each rule's pick (the 80% fit, no refit) per data set,
averaged over seeds, and the summed regret against the oracle.

    python examples/benchmarks/bench_choice_rule.py --data-dir "$OPBOOST_DATA" \\
        --datasets letter synthetic_multiclass wine digits car tmc2007_500 connect4 scene \\
        adult dna nursery
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_common import simulate_trial

from opboost import Booster
from opboost.algorithms.policy_learners.reward_regression import RewardRegression
from opboost.core.booster_checks import split_holdout
from opboost.core.registry import get_registry
from opboost.core.selection import action_probs, logs_scorer

CONFIDENCES = (0.6, 0.75, 0.9)


def one_sided_low(diff: np.ndarray, confidence: float) -> float:
    """Lower bound of the mean of ``diff`` at one-sided ``confidence`` (Student-t)."""
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    return float(diff.mean() - stats.t.ppf(confidence, len(diff) - 1) * se)


def picks(seed_data, seed: int, max_rows: int) -> dict[str, float]:
    """True test reward of every rule's pick on one seed."""
    trial = simulate_trial(seed_data, seed, max_rows)
    train, holdout = split_holdout(trial.logged, 0.2, seed)
    threads = {"num_threads": 1}
    candidates = {
        "ips": Booster(warm_start="none", random_state=seed, base_learner_params=threads),
        "dr": Booster(
            estimator="dr", warm_start="none", random_state=seed, base_learner_params=threads
        ),
        "rr": RewardRegression(random_state=seed),
    }
    scorer = logs_scorer(holdout, "dr", seed)
    values, true = {}, {}
    for name, model in candidates.items():
        model.fit(train)
        probs = action_probs(model.decision_function(holdout.contexts), "argmax")
        values[name] = scorer.row_values(probs)
        true[name] = trial.value(model.predict(trial.X_test))
    out = {"max": true[max(values, key=lambda c: values[c].mean())]}
    for confidence in CONFIDENCES:
        incumbent = "ips"
        for challenger in ("dr", "rr"):
            if one_sided_low(values[challenger] - values[incumbent], confidence) > 0:
                incumbent = challenger
        out[f"p{confidence}"] = true[incumbent]
    out["ips"], out["oracle"] = true["ips"], max(true.values())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["digits", "wine"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-rows", type=int, default=5000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    rules = ["max", *(f"p{c}" for c in CONFIDENCES), "ips", "oracle"]
    print("| data set | " + " | ".join(rules) + " |")
    print("|---" * (len(rules) + 1) + "|")
    regret = dict.fromkeys(rules, 0.0)
    for name in args.datasets:
        data = get_registry().get("dataset", name)().load(args.data_dir)
        runs = [picks(data, seed, args.max_rows) for seed in range(args.seeds)]
        means = {rule: float(np.mean([r[rule] for r in runs])) for rule in rules}
        for rule in rules:
            regret[rule] += means["oracle"] - means[rule]
        print(f"| {name} | " + " | ".join(f"{means[r]:.4f}" for r in rules) + " |", flush=True)
    print("| summed regret | " + " | ".join(f"{regret[r]:.3f}" for r in rules) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
