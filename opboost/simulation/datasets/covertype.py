"""UCI Covertype (Blackard & Dean 1999) from ``covtype.data.gz``, as scikit-learn's
``fetch_covtype`` reads it.

581,012 rows of 54 integer features (10 quantitative, 4 wilderness-area and 40 soil-type
indicators) followed by the cover type 1..7, comma-separated without a header. Classes
(0-based here): 0 Spruce/Fir, 1 Lodgepole Pine, 2 Ponderosa Pine, 3 Cottonwood/Willow,
4 Aspen, 5 Douglas-fir, 6 Krummholz. Reward: 1 for the true class, 1/4 within a genus
(London et al. appendix F.4): Firs {Spruce/Fir, Douglas-fir}, Pines {Lodgepole, Ponderosa},
Populus {Cottonwood/Willow, Aspen}; Krummholz alone. No official test split.
"""

from __future__ import annotations

import os
from numbers import Real
from typing import ClassVar

import numpy as np

from opboost.api.constraints import Interval
from opboost.api.dataset import Dataset, SupervisedData, find_file
from opboost.simulation.supervised import partial_credit

__all__ = ["CLASSES", "GROUPS", "Covertype"]

CLASSES = (
    "Spruce/Fir",
    "Lodgepole Pine",
    "Ponderosa Pine",
    "Cottonwood/Willow",
    "Aspen",
    "Douglas-fir",
    "Krummholz",
)
#: Partial-credit groups: Firs, Pines, Populus.
GROUPS = ((0, 5), (1, 2), (3, 4))
_SOURCE = (
    "https://archive.ics.uci.edu/dataset/31/covertype (covtype.data.gz; also what "
    "sklearn.datasets.fetch_covtype downloads)"
)


class Covertype(Dataset):
    """Covertype: X (n, 54) float64, y (n,) in 0..6, partial credit within a genus.

    Parameters
    ----------
    credit
        the near-miss reward within a genus (London et al.: 1/4).
    """

    name: ClassVar[str] = "covertype"
    _parameter_constraints: ClassVar[dict] = {
        "credit": [Interval(Real, 0.0, 1.0, fix="use London et al.'s 0.25, or 0.0 for no credit")]
    }
    source: ClassVar[str] = _SOURCE

    def __init__(self, *, credit: float = 0.25) -> None:
        self.credit = credit

    def load(self, data_dir: str | os.PathLike | None = None) -> SupervisedData:
        import pandas as pd

        self.validate_params()
        path = find_file(data_dir, "covertype", ("covtype.data.gz", "covtype.data"), self.source)
        table = pd.read_csv(path, header=None, dtype=np.int64, compression="infer").to_numpy()
        if table.shape[1] != 55:
            raise ValueError(
                f"{path}: expected 55 comma-separated columns (54 features and the cover "
                f"type), found {table.shape[1]}."
            )
        y = table[:, -1] - 1
        if y.min() < 0 or y.max() >= len(CLASSES):
            raise ValueError(
                f"{path}: cover types must be 1..7; found {y.min() + 1}..{y.max() + 1}."
            )
        X = table[:, :-1].astype(np.float64)
        reward = partial_credit(len(CLASSES), GROUPS, self.credit)
        return SupervisedData("covertype", X, y, "multiclass", len(CLASSES), reward)
