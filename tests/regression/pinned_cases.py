"""The fits whose predictions are pinned across restructurings of the package.

Every built-in objective with every built-in offline base learner it accepts, every training
estimator, each warm start, label-free selection, regularisation, the built-in policy
learners and the Dask engine (when installed): small seeded fits on the bundled digits.
``python tests/regression/pinned_cases.py`` rewrites ``pinned_predictions.json``; do that only
for a change that is meant to change results, and say so in the commit message.

What is pinned, per case: the scores of the first ``N_ROWS`` test rows, the mean score of each
action over all 200 test rows and the argmax action of every test row (about 2 kB a case).
Scores are compared within ``RTOL`` times the case's largest pinned |score|, not bit for bit:
the step sizes and weights are sums that OpenBLAS computes with CPU-specific kernels, so the
same fit differs in the last bits between kernels. Measured on an AMD EPYC (AVX-512) between
``OPENBLAS_CORETYPE=Haswell`` and ``SkylakeX``: at most 3e-15 of the case's largest |score|
(2e-14 absolute, after the reward-model start). ``RTOL = 1e-9`` is five orders of magnitude
above that and far below any real change of a fit (a changed split, step or start moves scores
by 1e-4 or more). Actions are compared exactly, except in a row whose pinned action scores
within the tolerance of the row's best (a tie the round-off may break either way).

The ``sklearn_tree`` cases grow trees of depth 4 with leaves of at least 20 rows: the default
(depth 6, leaves of one row) ties between splits on digits' integer pixels, and weights that
differ by 1e-14 between BLAS kernels then pick another split (scores move by up to 1.2); a
greedy tree's choice at an exact tie is not a regression to pin.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

PINS = Path(__file__).with_name("pinned_predictions.json")
#: Test rows whose scores are pinned (every row's argmax action and the column means are).
N_ROWS = 5
#: sklearn_tree's parameters in the pins: no exact ties between splits (module docstring).
TREE_PARAMS = {"max_depth": 4, "min_samples_leaf": 20}
#: Scores agree when they differ by at most RTOL times the case's largest pinned |score|.
RTOL = 1e-9

OBJECTIVES = ("bopl", "bopl_s", "snips", "poem")
LEARNERS = (
    "lightgbm_tree",
    "lightgbm_tree_classifier",
    "sklearn_tree",
    "sklearn_stump",
    "sklearn_tree_classifier",
    "sklearn_regressor",
    "sklearn_classifier",
)
BOOSTER_VARIANTS = {
    "estimator=truncated_ips": {"estimator": "truncated_ips"},
    "estimator=dr": {"estimator": "dr"},
    "warm_start=best_constant": {"warm_start": "best_constant"},
    "warm_start=logging": {"warm_start": "logging"},
    "warm_start=reward_model": {"warm_start": "reward_model"},
    "warm_start=auto (the default)": {"warm_start": "auto"},
    "selection+safe": {"validation_fraction": 0.25, "safe": True},
    "selection,no refit": {"validation_fraction": 0.25, "refit": False},
    "learning_rate,l2,scale,shift": {
        "learning_rate": 0.5,
        "l2": 0.01,
        "scale": 1.0,
        "reward_shift": -0.5,
    },
}


def logs():
    """(train logs, test contexts): 600 logged digits rows and 200 held-out contexts."""
    from opboost.simulation.datasets.bundled import Digits
    from opboost.simulation.supervised import supervised_to_bandit

    data = Digits().load()
    sim = supervised_to_bandit(data.X[:800], data.y[:800], n_actions=10, random_state=0)
    return sim.logged.subset(np.arange(600)), data.X[1000:1200]


def summary(scores: np.ndarray) -> dict[str, list]:
    """What is pinned of a case's (200, K) test scores: the first ``N_ROWS`` rows, each
    action's mean score and each row's argmax action."""
    scores = np.asarray(scores, dtype=np.float64)
    return {
        "rows": scores[:N_ROWS].tolist(),
        "column_means": scores.mean(axis=0).tolist(),
        "actions": np.argmax(scores, axis=1).tolist(),
    }


def mismatches(scores: np.ndarray, pinned: dict[str, list]) -> list[str]:
    """How a case's test ``scores`` depart from its ``pinned`` :func:`summary` beyond the
    tolerances of the module docstring; empty when they agree."""
    computed = summary(scores)
    rows, means = np.asarray(pinned["rows"]), np.asarray(pinned["column_means"])
    tolerance = RTOL * max(np.abs(rows).max(), np.abs(means).max())
    out = []
    for key in ("rows", "column_means"):
        got, want = np.asarray(computed[key]), np.asarray(pinned[key])
        if got.shape != want.shape or np.abs(got - want).max() > tolerance:
            out.append(f"{key}: {got.tolist()} != {want.tolist()} (tolerance {tolerance:.3g})")
    got, want = np.asarray(computed["actions"]), np.asarray(pinned["actions"])
    if got.shape != want.shape:
        return [*out, f"actions: {got.size} rows != {want.size}"]
    for i in np.flatnonzero(got != want):  # a tie within the tolerance may break either way
        margin = scores[i].max() - scores[i, want[i]]
        if margin > tolerance:
            out.append(f"row {i}: action {got[i]} != pinned {want[i]} (by {margin:.3g})")
    return out


def cases() -> Iterator[tuple[str, Callable[[], object]]]:
    """(case name, a function returning a fitted object with decision_function)."""
    from opboost import Booster
    from opboost.core.registry import make

    def booster(**params):
        base = {"n_rounds": 4, "random_state": 0, "warm_start": "none"}  # the paper's F_0 = 0
        return lambda train: Booster(**{**base, **params}).fit(train)

    for objective in OBJECTIVES:
        for learner in LEARNERS:
            params = TREE_PARAMS if learner == "sklearn_tree" else {}
            yield (
                f"{objective}/{learner}",
                booster(objective=objective, base_learner=learner, base_learner_params=params),
            )
    for name, params in BOOSTER_VARIANTS.items():
        yield f"bopl_s/lightgbm_tree/{name}", booster(objective="bopl_s", **params)
    yield (
        "auto/lightgbm_tree/warm_start=auto (the default Booster)",
        booster(objective="auto", warm_start="auto"),
    )
    yield (
        "policy_learner/reward_regression",
        lambda train: make("policy_learner", "reward_regression", random_state=0).fit(train),
    )


def compute() -> dict[str, np.ndarray | str]:
    """Case name -> its (200, K) test-row scores, or the error type it raises."""
    train, test = logs()
    out = {}
    for name, fit in cases():
        try:
            model = fit(train)
        except Exception as exc:  # an invalid combination stays invalid
            out[name] = f"error: {type(exc).__name__}"
            continue
        out[name] = np.asarray(model.decision_function(test), dtype=np.float64)
    return out


if __name__ == "__main__":
    pins = {k: v if isinstance(v, str) else summary(v) for k, v in compute().items()}
    # one case a line: a small file whose diffs read case by case
    lines = [f" {json.dumps(name)}: {json.dumps(pins[name])}" for name in sorted(pins)]
    PINS.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {PINS}")
