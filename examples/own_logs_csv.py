"""Write logs.csv: bandit logs with string action ids, simulated from labelled rows, for
examples/own_logs.toml (the walk-through of docs/getting-started.md builds the same table).

    python examples/own_logs_csv.py [DIRECTORY]     # writes DIRECTORY/logs.csv (default: .)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification

from opboost.simulation.supervised import supervised_to_bandit

OFFERS = np.array(["promo_A", "promo_B", "promo_C", "promo_D"])


def own_logs() -> pd.DataFrame:
    """2,700 logged offers: four customer columns, the offer shown, its propensity and
    whether the customer clicked."""
    X, y = make_classification(
        n_samples=3000,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=4,
        n_clusters_per_class=1,
        flip_y=0.2,
        random_state=0,
    )
    logged = supervised_to_bandit(X, y, n_actions=4, random_state=0).logged
    logs = pd.DataFrame(logged.contexts, columns=["age", "income", "tenure", "visits"])
    logs["offer"] = OFFERS[logged.actions]
    logs["propensity"] = logged.propensities
    logs["clicked"] = logged.rewards
    return logs


if __name__ == "__main__":
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    own_logs().to_csv(directory / "logs.csv", index=False)
    print(f"wrote {directory / 'logs.csv'}")
