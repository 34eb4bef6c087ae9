"""The fits whose predictions are pinned across restructurings of the package.

Every built-in objective with every built-in offline base learner it accepts, every training
estimator, each warm start, label-free selection, regularisation, the built-in policy
learners and the Dask engine (when installed): small seeded fits on the bundled digits.
``python tests/regression/pinned_cases.py`` rewrites ``pinned_predictions.json``; do that only
for a change that is meant to change results, and say so in the commit message.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

PINS = Path(__file__).with_name("pinned_predictions.json")

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


def digest(array: np.ndarray) -> str:
    """sha256 of the float64 bytes: equal digests mean bit-identical predictions."""
    return hashlib.sha256(np.ascontiguousarray(array, dtype=np.float64).tobytes()).hexdigest()


def cases() -> Iterator[tuple[str, Callable[[], object]]]:
    """(case name, a function returning a fitted object with decision_function)."""
    from opboost import Booster
    from opboost.core.registry import make

    def booster(**params):
        base = {"n_rounds": 4, "random_state": 0, "warm_start": "none"}  # the paper's F_0 = 0
        return lambda train: Booster(**{**base, **params}).fit(train)

    for objective in OBJECTIVES:
        for learner in LEARNERS:
            yield f"{objective}/{learner}", booster(objective=objective, base_learner=learner)
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


def compute() -> dict[str, str]:
    """Case name -> digest of its test-row scores, or the error type it raises."""
    train, test = logs()
    out = {}
    for name, fit in cases():
        try:
            model = fit(train)
        except Exception as exc:  # an invalid combination stays invalid
            out[name] = f"error: {type(exc).__name__}"
            continue
        out[name] = digest(model.decision_function(test))
    return out


if __name__ == "__main__":
    PINS.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINS}")
