"""Data sets that ship with scikit-learn (no download), plus a seeded synthetic generator."""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar

import numpy as np

from opboost.api.constraints import InstanceOf, Interval, Rule
from opboost.api.dataset import Dataset, SupervisedData
from opboost.api.numerics.memory_limit import memory_problem

__all__ = ["Diabetes", "Digits", "SyntheticMulticlass", "Wine"]


class Digits(Dataset):
    """scikit-learn's 8x8 handwritten digits: 1,797 rows, 64 features, 10 classes."""

    name: ClassVar[str] = "digits"
    bundled: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def load(self, data_dir: Any = None) -> SupervisedData:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return SupervisedData("digits", X / 16.0, y.astype(np.int64), "multiclass", 10)


class Wine(Dataset):
    """scikit-learn's wine recognition data: 178 rows, 13 features, 3 classes."""

    name: ClassVar[str] = "wine"
    bundled: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def load(self, data_dir: Any = None) -> SupervisedData:
        from sklearn.datasets import load_wine
        from sklearn.preprocessing import StandardScaler

        X, y = load_wine(return_X_y=True)
        return SupervisedData(
            "wine", StandardScaler().fit_transform(X), y.astype(np.int64), "multiclass", 3
        )


class Diabetes(Dataset):
    """scikit-learn's diabetes regression data: 442 rows, 10 features, target scaled to [0, 1]."""

    name: ClassVar[str] = "diabetes"
    task: ClassVar[str] = "regression"
    bundled: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def load(self, data_dir: Any = None) -> SupervisedData:
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        y = (y - y.min()) / (y.max() - y.min())
        return SupervisedData("diabetes", X, y, "regression", 0, reward=None)


def _clusters_problem(n_classes: int, n_informative: int) -> str | None:
    """Why ``make_classification`` cannot draw ``n_classes`` (two clusters each, on distinct
    corners of the ``n_informative``-dimensional hypercube), or None."""
    if n_informative >= 62 or 2 * n_classes <= 2**n_informative:
        return None
    return (
        f"must be at most 2**n_informative / 2 = {2 ** (n_informative - 1):,} (two clusters per "
        f"class on the corners of the n_informative = {n_informative} hypercube). Got "
        f"{n_classes:,} instead; use fewer classes or more informative features (n_informative)"
    )


class SyntheticMulticlass(Dataset):
    """Seeded ``sklearn.datasets.make_classification`` data, for benchmarks at any size.

    Parameters
    ----------
    n_samples, n_features, n_classes
        size of the problem.
    n_informative
        informative features (the rest are noise and redundant features).
    random_state
        seed.
    """

    name: ClassVar[str] = "synthetic_multiclass"
    bundled: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {
        "n_samples": [
            Interval(int, 10, None),
            Rule(
                lambda p: memory_problem(
                    8 * p["n_samples"] * p["n_features"],
                    f"asks for {p['n_samples']:,} x {p['n_features']:,} float64 values "
                    f"(n_samples x n_features)",
                ),
                fix="use fewer samples or features",
            ),
        ],
        "n_features": [Interval(int, 2, None)],
        "n_classes": [
            Interval(int, 2, None),
            Rule(lambda p: _clusters_problem(p["n_classes"], p["n_informative"])),
            Rule(
                lambda p: memory_problem(
                    8 * p["n_samples"] * p["n_classes"],
                    f"asks for {p['n_samples']:,} x {p['n_classes']:,} float64 rewards "
                    f"(n_samples x n_classes)",
                ),
                fix="use fewer samples or classes",
            ),
        ],
        "n_informative": [
            Interval(int, 1, None),
            Rule(
                lambda p: p["n_informative"] <= p["n_features"],
                "must be <= n_features ({n_features}). Got {n_informative!r} instead",
            ),
        ],
        "random_state": [None, Interval(Integral), InstanceOf(np.random.RandomState)],
    }

    def __init__(
        self,
        *,
        n_samples: int = 10_000,
        n_features: int = 50,
        n_classes: int = 7,
        n_informative: int = 20,
        random_state: int = 0,
    ) -> None:
        self.n_samples = n_samples
        self.n_features = n_features
        self.n_classes = n_classes
        self.n_informative = n_informative
        self.random_state = random_state

    def load(self, data_dir: Any = None) -> SupervisedData:
        from sklearn.datasets import make_classification

        self.validate_params()
        X, y = make_classification(
            n_samples=self.n_samples,
            n_features=self.n_features,
            n_informative=self.n_informative,
            n_redundant=0,
            n_classes=self.n_classes,
            n_clusters_per_class=2,
            random_state=self.random_state,
        )
        return SupervisedData(self.name, X, y.astype(np.int64), "multiclass", self.n_classes)

    @classmethod
    def _unit_test_params(cls) -> dict:
        return {"n_samples": 200, "n_features": 5, "n_classes": 3, "n_informative": 3}
